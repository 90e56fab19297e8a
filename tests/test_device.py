"""The mydev device as PyTorch and its users see it: name, module, device
selection, properties, torch.accelerator, autoload, lazy init and fork."""
import os

import torch
import torch_mydev
from torch.testing._internal.common_utils import run_tests, TestCase

from helpers import run_python


class TestBackendRegistration(TestCase):
    def test_backend_is_named_mydev(self):
        self.assertEqual(torch._C._get_privateuse1_backend_name(), "mydev")
        self.assertIs(torch.mydev, torch_mydev.mydev)
        self.assertEqual(torch.device("mydev:1").type, "mydev")
        self.assertEqual(torch.device("mydev:1").index, 1)

    def test_generated_tensor_module_and_storage_methods(self):
        cpu = torch.arange(6.0).reshape(2, 3)
        on_device = cpu.mydev()
        self.assertTrue(on_device.is_mydev)
        self.assertFalse(cpu.is_mydev)
        self.assertEqual(on_device.device, torch.device("mydev:0"))
        self.assertEqual(cpu.mydev(1).device, torch.device("mydev:1"))
        self.assertEqual(on_device.cpu(), cpu)

        module = torch.nn.Linear(3, 2).mydev()
        self.assertTrue(all(p.device.type == "mydev" for p in module.parameters()))

        storage = torch.UntypedStorage(8).mydev()
        self.assertEqual(storage.device.type, "mydev")
        self.assertEqual(storage.nbytes(), 8)

    def test_accelerator_is_mydev(self):
        self.assertEqual(torch.accelerator.current_accelerator(), torch.device("mydev"))
        self.assertTrue(torch.accelerator.is_available())
        self.assertEqual(torch.accelerator.device_count(), torch.mydev.device_count())


class TestDeviceSelection(TestCase):
    def tearDown(self):
        torch.mydev.set_device(0)
        super().tearDown()

    def test_two_devices_by_default(self):
        self.assertTrue(torch.mydev.is_available())
        self.assertEqual(torch.mydev.device_count(), 2)

    def test_set_device_and_context_manager(self):
        torch.mydev.set_device(1)
        self.assertEqual(torch.mydev.current_device(), 1)
        self.assertEqual(torch.accelerator.current_device_index(), 1)
        with torch.mydev.device(0):
            self.assertEqual(torch.mydev.current_device(), 0)
            self.assertEqual(torch.empty(3, device="mydev").device, torch.device("mydev:0"))
        self.assertEqual(torch.mydev.current_device(), 1)
        self.assertEqual(torch.empty(3, device="mydev").device, torch.device("mydev:1"))
        torch.mydev.set_device("mydev:0")
        self.assertEqual(torch.mydev.current_device(), 0)
        torch.mydev.set_device(1)
        torch.mydev.set_device(-1)  # as torch.cuda.set_device: a negative index changes nothing
        self.assertEqual(torch.mydev.current_device(), 1)

    def test_device_context_restores_the_entry_device_as_torch_cuda(self):
        # torch.cuda.device's exit makes the entry device current again whatever the block set; None means the
        # current device, a negative index changes nothing, and a torch.mydev.device names its index.
        torch.mydev.set_device(1)
        for entered in (1, None):
            with torch.mydev.device(entered):
                torch.mydev.set_device(0)
            self.assertEqual(torch.mydev.current_device(), 1)
        with torch.mydev.device(-2):
            self.assertEqual(torch.mydev.current_device(), 1)
        torch.mydev.synchronize(torch.mydev.device(0))
        self.assertEqual(torch.mydev.get_device_properties(torch.mydev.device(0)).name,
                         torch.mydev.get_device_properties(0).name)

    def test_device_of_tensor(self):
        on_one = torch.ones(2, device="mydev:1")
        with torch.mydev.device_of(on_one):
            self.assertEqual(torch.mydev.current_device(), 1)
        self.assertEqual(torch.mydev.current_device(), 0)

    def test_bad_device_index_is_a_clear_error(self):
        with self.assertRaisesRegex(RuntimeError, r"Invalid device index 5 for mydev: 2 device\(s\) available"):
            torch.empty(2, device="mydev:5")
        with self.assertRaisesRegex(RuntimeError, "Invalid device index 7"):
            torch.mydev.set_device(7)
        with self.assertRaisesRegex(RuntimeError, "Invalid device index 9"):
            torch.mydev.get_device_properties(9)
        with self.assertRaisesRegex(RuntimeError, "Invalid device index 3"):
            torch.ones(2).to("mydev:3")
        with self.assertRaisesRegex(ValueError, "Expected a mydev device"):
            torch.mydev.set_device("cpu")
        # Indices past c10::DeviceIndex's range must not wrap around onto a device that exists (257 onto 1).
        for call in (torch.mydev.set_device, torch.mydev.get_device_properties, torch.mydev.get_rng_state,
                     torch.mydev.synchronize, torch.mydev.get_per_process_memory_fraction):
            with self.assertRaisesRegex(RuntimeError, "Invalid device index 257 for mydev", msg=call.__name__):
                call(257)
        self.assertEqual(torch.mydev.current_device(), 0)

    def test_thread_has_its_own_current_device(self):
        import threading

        seen = []
        torch.mydev.set_device(1)
        worker = threading.Thread(target=lambda: seen.append(torch.mydev.current_device()))
        worker.start()
        worker.join()
        self.assertEqual(seen, [0])
        self.assertEqual(torch.mydev.current_device(), 1)


class TestDeviceProperties(TestCase):
    def test_properties(self):
        properties = torch.mydev.get_device_properties(0)
        self.assertEqual(properties.name, "mydev simulated device")
        self.assertEqual(torch.mydev.get_device_name(1), "mydev simulated device")
        self.assertEqual(properties.multi_processor_count, os.cpu_count())
        self.assertEqual(properties.total_memory, 4 * 1024**3)
        self.assertEqual(torch.mydev.get_device_capability(), (properties.major, properties.minor))
        self.assertIn("mydev simulated device", repr(properties))

    def test_device_count_and_memory_come_from_the_environment(self):
        result = run_python(
            """
            import torch
            print(torch.mydev.device_count(), torch.mydev.get_device_properties(2).total_memory)
            print(torch.ones(3, device="mydev:2").sum().item())
            """,
            env={"MYDEV_DEVICE_COUNT": "3", "MYDEV_DEVICE_MEMORY": "512MiB"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["3", str(512 * 1024**2), "3.0"])

    def test_bad_configuration_is_reported(self):
        result = run_python(
            "import torch\ntorch.ones(1, device='mydev')",
            env={"MYDEV_DEVICE_MEMORY": "lots"},
        )
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("MYDEV_DEVICE_MEMORY", result.stderr)


class TestAutoloadAndLazyInit(TestCase):
    def test_plain_import_torch_loads_mydev_lazily(self):
        result = run_python(
            """
            import sys
            import torch
            print("torch_mydev" in sys.modules, torch.mydev.is_initialized())
            print(torch.mydev.device_count(), torch.mydev.is_initialized())
            x = torch.randn(4, 4, device="mydev")
            print(x.device, torch.mydev.is_initialized())
            """
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines(), ["True False", "2 False", "mydev:0 True"])

    def test_autoload_can_be_turned_off(self):
        result = run_python(
            """
            import sys
            import torch
            print("torch_mydev" in sys.modules)
            try:
                torch.ones(1, device="mydev")
            except RuntimeError as error:
                print("refused")
            import torch_mydev
            print(torch.ones(1, device="mydev").device)
            """,
            env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines(), ["False", "refused", "mydev:0"])

    def test_seed_before_init_is_applied_at_init(self):
        result = run_python(
            """
            import torch
            torch.mydev.manual_seed(1234)
            first = torch.randn(5, device="mydev").cpu()
            torch.mydev.manual_seed(1234)
            second = torch.randn(5, device="mydev").cpu()
            print(torch.equal(first, second), torch.mydev.initial_seed())
            """
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["True", "1234"])

    def test_only_the_latest_seeds_before_init_are_kept(self):
        # A CPU program that reseeds every step must not pile up calls for a device it never uses.
        result = run_python(
            """
            import torch
            from torch_mydev.mydev import lazy_init
            for step in range(1000):
                torch.manual_seed(step)
            torch.mydev.manual_seed(5)
            print(len(lazy_init._queued_calls), torch.mydev.is_initialized())
            torch.ones(1, device="mydev")
            print(torch.mydev.initial_seed(), torch.mydev.default_generators[1].initial_seed())
            """
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["2", "False", "5", "999"])

    def test_state_set_before_init_is_replayed_in_call_order(self):
        # Resuming from a checkpoint: a seed, then the saved RNG state, which must win (it does not on torch.cuda,
        # which replays seeds last).
        result = run_python(
            """
            import torch
            torch.manual_seed(0)
            saved = torch.tensor([7] + [0] * 15, dtype=torch.uint8)  # seed 7, offset 0, in CUDA's layout
            torch.mydev.set_rng_state(saved)  # the current device, resolved when the call runs: no start here
            torch.mydev._set_rng_state_offset(0)
            print(torch.mydev.is_initialized())
            print(torch.mydev.initial_seed(), torch.mydev.get_rng_state().tolist() == saved.tolist())
            """
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["False", "7", "True"])


class TestFork(TestCase):
    def test_forked_child_cannot_use_an_initialised_device(self):
        result = run_python(
            """
            import os
            import torch
            parent_tensor = torch.ones(3, device="mydev")
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    torch.ones(1, device="mydev")
                except RuntimeError as error:
                    code += 1 if "Cannot re-initialize mydev in forked subprocess" in str(error) else 0
                try:
                    parent_tensor + 1
                except RuntimeError as error:
                    code += 2 if "forked" in str(error) else 0
                # As in torch.cuda: the devices are still there, so that code choosing a device does not quietly
                # pick the CPU; using one raises (above).
                code += 4 if torch.mydev.is_available() and torch.mydev.device_count() == 2 else 0
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            print(os.waitstatus_to_exitcode(status), (parent_tensor * 2).sum().item())
            """
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["7", "6.0"])

    def test_fork_before_initialisation_is_fine(self):
        result = run_python(
            """
            import os
            import torch
            pid = os.fork()
            if pid == 0:
                ok = torch.ones(4, device="mydev").sum().item() == 4.0
                os._exit(0 if ok else 1)
            _, status = os.waitpid(pid, 0)
            print(os.waitstatus_to_exitcode(status))
            """
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["0"])


class TestInterpreterExit(TestCase):
    def test_exit_right_after_backward_is_clean(self):
        # The autograd thread of the device may still be releasing the finished
        # graph when the interpreter exits (torch_mydev/_autograd_exit.py).
        for _ in range(6):
            result = run_python(
                """
                import torch
                x = torch.randn(4, device="mydev", requires_grad=True)
                (x * 2).sum().backward()
                print(x.grad.sum().item())
                """
            )
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout.split(), ["8.0"])


if __name__ == "__main__":
    run_tests()
