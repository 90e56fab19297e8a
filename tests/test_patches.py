"""The patches of torch internals in torch_mydev/patches.py: each must still work, and each must still be needed.
A test of the second kind fails when torch changes the behaviour that the patch works around; the patch (and the
test) can then go."""
import inspect
import itertools
import unittest
from unittest import mock

import torch
import torch._inductor.codegen.common as codegen_common
import torch._inductor.codegen.cpp_utils as cpp_utils
import torch._inductor.kernel.mm_common as mm_common
import torch._inductor.lowering as lowering
import torch._inductor.scheduler as scheduler
import torch._inductor.utils as inductor_utils
from torch._inductor.compile_fx import compile_fx  # noqa: F401  (importing it registers mydev with Inductor)
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.common_utils import run_tests, TestCase

from helpers import run_python
from torch_mydev import patches


def compiles(function, *args):
    # Without caches: a graph cached by a patched run would be served to an unpatched one.
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True):
        result = torch.compile(function)(*args)
    torch._dynamo.reset()
    return result


@unittest.skipUnless(patches.patches_apply(), "the patches are written for another torch release")
class TestInductorPatches(TestCase):
    def test_scheduler_treats_mydev_cpp_kernels_as_cpu_kernels(self):
        x = torch.randn(8, 8, device="mydev")
        self.assertEqual(compiles(lambda a: a.softmax(-1), x).cpu(), x.cpu().softmax(-1), atol=1e-6, rtol=1e-6)

    def test_scheduler_patch_is_still_needed(self):
        x = torch.randn(8, 8, device="mydev")
        original = scheduler.BaseSchedulerNode.is_cpu.original
        with mock.patch.object(scheduler.BaseSchedulerNode, "is_cpu", original):
            with self.assertRaisesRegex(Exception, "can't multiply sequence by non-int"):
                compiles(lambda a: a.softmax(-1), x)

    def test_current_backend_of_mydev_is_its_codegen(self):
        for module in (inductor_utils, codegen_common, scheduler, mm_common):
            self.assertEqual(module.get_current_backend("mydev"), "cpp")
            self.assertEqual(module.get_current_backend("cpu"), torch._inductor.config.cpu_backend)
        x = torch.randn(4, 8, device="mydev")
        result = compiles(lambda a: a + torch.arange(a.shape[1], device=a.device), x)
        self.assertEqual(result.cpu(), x.cpu() + torch.arange(8))

    def test_current_backend_patch_is_still_needed(self):
        original = inductor_utils.get_current_backend.original
        self.assertEqual(original("mydev"), "triton")
        x = torch.randn(4, 8, device="mydev")
        with mock.patch.object(codegen_common, "get_current_backend", original), mock.patch.object(
            scheduler, "get_current_backend", original
        ), mock.patch.object(inductor_utils, "get_current_backend", original):
            with self.assertRaises(Exception):
                compiles(lambda a: a + torch.arange(a.shape[1], device=a.device), x)

    def test_argmax_over_several_dims_of_a_permuted_input_gives_the_logical_index(self):
        x = torch.randn(4, 6)
        x[0, 1] = 10  # logical index 4 of x.t(), position 1 in memory
        for reduce in (torch.argmax, torch.argmin):
            for source in (x, -x):
                compiled = compiles(lambda a: reduce(a.t()), source.to("mydev"))
                self.assertEqual(compiled.item(), reduce(source.t()).item())

    def test_argmax_patch_is_still_needed(self):
        x = torch.zeros(4, 6)
        x[0, 1] = 1
        patched = {key: lowering.lowerings[key] for key in (torch.ops.aten.argmax, torch.ops.aten.argmax.default)}
        with mock.patch.dict(lowering.lowerings, {key: fn.original for key, fn in patched.items()}):
            self.assertEqual(compiles(lambda a: a.t().argmax(), x.to("mydev")).item(), 1)  # memory order, not 4

    def test_a_node_without_a_device_flushes_the_kernels_before_it(self):
        def synchronized(a):
            b = a * 2
            torch.accelerator.synchronize()
            return b + 1

        self.assertEqual(compiles(synchronized, torch.ones(4, device="mydev")).cpu(), torch.full((4,), 3.0))

    def test_flush_patch_is_still_needed(self):
        def synchronized(a):
            b = a * 2
            torch.accelerator.synchronize()
            return b + 1

        original = scheduler.Scheduler.codegen_extern_call.original
        with mock.patch.object(scheduler.Scheduler, "codegen_extern_call", original):
            with self.assertRaises(UnboundLocalError):
                compiles(synchronized, torch.ones(4, device="mydev"))

    def test_stream_blocks_of_compiled_functions_are_guarded(self):
        side = torch.Stream(device="mydev")

        def on_side_stream(a):
            with side:
                b = a * 2
            torch.accelerator.current_stream().wait_stream(side)
            return b + 1

        self.assertEqual(compiles(on_side_stream, torch.ones(4, device="mydev")).cpu(), torch.full((4,), 3.0))
        original = scheduler.device_need_guard.original
        self.assertFalse(original("mydev"))  # still needed while Inductor guards GPUs only
        with mock.patch.object(scheduler, "device_need_guard", original):
            with self.assertRaisesRegex(NameError, "stream1"):
                compiles(on_side_stream, torch.ones(4, device="mydev"))

    def test_a_stream_blocks_kernels_run_inside_it(self):
        side = torch.Stream(device="mydev")

        def with_a_side_block(a):
            b = a.sin()
            with side:
                c = a.cos() * 2
            torch.accelerator.current_stream().wait_stream(side)
            return b + c

        def kernels_in_the_side_block():
            torch._dynamo.reset()
            with torch._inductor.config.patch(force_disable_caches=True):
                result, (code,) = run_and_get_code(torch.compile(with_a_side_block), x)
            self.assertEqual(result.cpu(), x.cpu().sin() + x.cpu().cos() * 2)
            lines = code[code.index("with stream1:"):].splitlines()
            indent = len(lines[1]) - len(lines[1].lstrip())
            block = [line for line in itertools.takewhile(lambda line: line.startswith(" " * indent), lines[1:])]
            return [line.strip() for line in block if "cpp_fused" in line]

        x = torch.randn(16, device="mydev")
        self.assertEqual(len(kernels_in_the_side_block()), 1)
        enter, leave = scheduler.Scheduler.generate_stream_ctx_enter, scheduler.Scheduler.generate_stream_ctx_exit
        with mock.patch.object(scheduler.Scheduler, "generate_stream_ctx_enter", enter.original), \
                mock.patch.object(scheduler.Scheduler, "generate_stream_ctx_exit", leave.original):
            self.assertEqual(kernels_in_the_side_block(), [])  # still needed: the block's kernel left its stream

    def test_device_to_aten_names_mydev(self):
        self.assertEqual(cpp_utils.DEVICE_TO_ATEN["mydev"], "at::kPrivateUse1")
        # Still needed while torch maps no PrivateUse1 device itself.
        self.assertNotIn("privateuse1", inspect.getsource(cpp_utils).lower())


class TestImportHooks(TestCase):
    def test_dynamo_and_inductor_find_mydev_after_a_late_import(self):
        result = run_python(
            """
            import sys
            import torch
            assert "torch._dynamo" not in sys.modules and "torch._inductor.compile_fx" not in sys.modules
            from torch._dynamo.device_interface import get_interface_for_device
            print(get_interface_for_device("mydev").__name__)
            import torch._inductor.compile_fx
            from torch._inductor.codegen.common import get_wrapper_codegen_for_device
            print(get_wrapper_codegen_for_device("mydev").__name__)
            """
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["MydevInterface", "MydevPythonWrapperCodegen"])

    def test_registration_when_torch_parts_were_imported_first(self):
        result = run_python(
            """
            import torch
            import torch._inductor.compile_fx
            import torch_mydev
            from torch._dynamo.device_interface import get_interface_for_device
            from torch._inductor.codegen.common import get_scheduling_for_device
            print(get_interface_for_device("mydev").__name__, get_scheduling_for_device("mydev").__name__)
            """,
            env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["MydevInterface", "CppScheduling"])

    def test_import_hooks_are_still_needed(self):
        # torch 2.13 registers no device interface for a PrivateUse1 device, and discovers an Inductor backend only
        # through torch.<device> attributes, without the device's codegen config (which keys the graph cache).
        from torch._dynamo.device_interface import init_device_reg

        self.assertNotIn("privateuse1", inspect.getsource(init_device_reg).lower())
        auto_registration = inspect.getsource(codegen_common.init_backend_registration)
        self.assertIn('_get_custom_mod_func("Scheduling")', auto_registration)
        self.assertNotIn("device_custom_config", auto_registration)


@unittest.skipUnless(patches.patches_apply(), "the patches are written for another torch release")
class TestDLPackPatches(TestCase):
    def test_dlpack_device_of_a_mydev_tensor(self):
        x = torch.ones(2, device="mydev:1")
        self.assertTrue(torch.Tensor.__dlpack_device__.mydev_patch)
        self.assertEqual(x.__dlpack_device__(), (torch.utils.dlpack.DLDeviceType.kDLExtDev, 1))

    def test_dlpack_device_patch_is_still_needed(self):
        x = torch.ones(2, device="mydev")
        with self.assertRaisesRegex(ValueError, "Unknown device type mydev for Dlpack"):
            torch.Tensor.__dlpack_device__.original(x)

    def test_dlpack_stream_patch_makes_the_consumer_wait(self):
        x = torch.ones(2, device="mydev")
        consumer = torch.mydev.Stream()
        torch.mydev.synchronize()
        with torch.mydev.inject_fault("aten::neg", kind="hang"):
            y = x.neg()
            y.__dlpack__(stream=consumer.stream_id)
            self.assertFalse(consumer.query())
        torch.mydev.synchronize()

    def test_dlpack_stream_patch_is_still_needed(self):
        # torch 2.13 synchronises the consumer's stream only for CUDA tensors.
        x = torch.ones(2, device="mydev")
        consumer = torch.mydev.Stream()
        torch.mydev.synchronize()
        with torch.mydev.inject_fault("aten::neg", kind="hang"):
            y = x.neg()
            torch.Tensor.__dlpack__.original(y, stream=consumer.stream_id)
            self.assertTrue(consumer.query())
        torch.mydev.synchronize()


@unittest.skipUnless(patches.patches_apply(), "the patches are written for another torch release")
class TestDistributedPatches(TestCase):
    def test_no_backend_maps_the_cpu_to_gloo_beside_mccl(self):
        from torch.distributed.distributed_c10d import Backend, BackendConfig

        self.assertTrue(BackendConfig.__init__.mydev_patch)
        self.assertEqual(BackendConfig(Backend(Backend.UNDEFINED)).get_device_backend_map(),
                         {"mydev": "mccl", "cpu": "gloo"})

    def test_default_backends_patch_is_still_needed(self):
        from torch.distributed.distributed_c10d import Backend, BackendConfig

        config = BackendConfig.__new__(BackendConfig)
        BackendConfig.__init__.original(config, Backend(Backend.UNDEFINED))
        self.assertEqual(config.get_device_backend_map(), {"mydev": "mccl"})

    def default_backend_of(self, backend):
        """The name of the default backend type of a 1-rank group made with ``backend``, and whether destroying the
        group found that backend (instead of warning that there is none)."""
        import tempfile

        import torch.distributed as dist

        with tempfile.TemporaryDirectory() as folder:
            dist.init_process_group(backend, init_method=f"file://{folder}/init", rank=0, world_size=1)
            try:
                pg = dist.group.WORLD
                name = pg._get_backend_name()
                found = not pg._has_hooks() and name != "undefined"
            finally:
                dist.destroy_process_group()
        return name, found

    def test_mccl_is_the_default_backend_beside_gloo(self):
        from torch.distributed import distributed_c10d

        self.assertTrue(distributed_c10d._new_process_group_helper.mydev_patch)
        self.assertEqual(self.default_backend_of("cpu:gloo,mydev:mccl"), ("custom", True))
        self.assertEqual(self.default_backend_of("mccl"), ("custom", True))
        self.assertEqual(self.default_backend_of(None), ("gloo", True))

    def cpu_gloo_ranks_beside_mccl_created_first(self):
        """The global ranks the world's CPU gloo splits by, and what a split of the world sums, on 1 rank."""
        import tempfile

        import torch.distributed as dist

        with tempfile.TemporaryDirectory() as folder:
            dist.init_process_group("mydev:mccl,cpu:gloo", init_method=f"file://{folder}/init", rank=0, world_size=1,
                                    device_id=torch.device("mydev", 0))
            try:
                ranks = dist.group.WORLD._get_backend(torch.device("cpu")).options.global_ranks_in_group
                if not ranks:
                    return ranks, None  # splitting would read past the empty list: a segfault
                part = dist.split_group(split_ranks=[[0]])
                tensor = torch.ones(2)
                dist.all_reduce(tensor, group=part)
                return ranks, tensor
            finally:
                dist.destroy_process_group()

    def test_the_worlds_cpu_gloo_splits_beside_mccl_created_first(self):
        ranks, summed = self.cpu_gloo_ranks_beside_mccl_created_first()
        self.assertEqual(ranks, [0])
        self.assertEqual(summed, torch.ones(2))

    def test_cpu_gloo_ranks_patch_is_still_needed(self):
        from torch.distributed import distributed_c10d

        helper = distributed_c10d._new_process_group_helper
        with mock.patch.object(distributed_c10d, "_new_process_group_helper", helper.original):
            self.assertEqual(self.cpu_gloo_ranks_beside_mccl_created_first(), ([], None))

    def test_default_backend_type_patch_is_still_needed(self):
        from torch.distributed import distributed_c10d

        helper = distributed_c10d._new_process_group_helper
        with mock.patch.object(distributed_c10d, "_new_process_group_helper", helper.original):
            self.assertEqual(self.default_backend_of("cpu:gloo,mydev:mccl"), ("undefined", False))


@unittest.skipUnless(patches.patches_apply(), "the patches are written for another torch release")
class TestProfilerPatch(TestCase):
    def profile_a_failing_kernel(self):
        x = torch.ones(4, device="mydev")
        torch.mydev.synchronize()
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
        with self.assertRaisesRegex(RuntimeError, "kernel 'aten::mul.Tensor' failed on mydev:0: injected fault"):
            with torch.profiler.profile(activities=activities):
                with torch.mydev.inject_fault("aten::mul", nth=1):
                    x * 2

    def test_a_device_error_at_the_profiles_end_still_ends_it(self):
        self.profile_a_failing_kernel()
        self.assertFalse(torch._C._autograd._profiler_enabled())
        self.assertEqual((torch.ones(4, device="mydev") * 2).cpu(), torch.full((4,), 2.0))

    def test_profiler_exit_patch_is_still_needed(self):
        original = torch.autograd.profiler.profile.__exit__.original
        with mock.patch.object(torch.autograd.profiler.profile, "__exit__", original):
            self.profile_a_failing_kernel()
        try:
            self.assertTrue(torch._C._autograd._profiler_enabled())
        finally:
            if torch._C._autograd._profiler_enabled():
                torch._C._autograd._disable_profiler()


if __name__ == "__main__":
    run_tests()
