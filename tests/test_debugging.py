"""Debugging the device as on CUDA: sync-debug mode (every operation that makes the host wait for the device warns or
raises, naming it) and faults injected on purpose (a failing kernel, a stuck kernel, a device out of memory), by API
and by MYDEV_INJECT_FAULT."""
import os
import subprocess
import sys
import textwrap
import time
import warnings

import torch
from torch.testing._internal.common_utils import parametrize, instantiate_parametrized_tests, run_tests, TestCase

from helpers import run_python

SYNC_MESSAGE = "called a synchronizing mydev operation"

# name -> call(x): makes the host wait for the device.
SYNCHRONIZING = {
    "item": lambda x: x.sum().item(),
    "nonzero": lambda x: torch.nonzero(x),
    "boolean_indexing": lambda x: x[x > 2],
    "masked_select": lambda x: torch.masked_select(x, x > 1),
    "copy_to_host": lambda x: x.cpu(),
    "copy_from_host": lambda x: torch.ones(3).to(x.device),
    "tolist": lambda x: x.tolist(),
    "bool_of_a_tensor": lambda x: bool(x[0] > 0),
    # CUDA's stream synchronization reports (c10::cuda::stream_synchronize), unlike the device's and an event's.
    "stream_synchronize": lambda x: torch.mydev.current_stream().synchronize(),
    "torch_stream_synchronize": lambda x: torch.accelerator.current_stream().synchronize(),
    "multinomial_without_replacement": lambda x: torch.multinomial(x + 1, 2),
    "histc": lambda x: torch.histc(x, bins=3),
}

# Asynchronous operations and waits the user asked for.
NOT_SYNCHRONIZING = {
    "arithmetic": lambda x: x * 2 + 1,
    "reduction_to_a_tensor": lambda x: x.sum(),
    "device_to_device_copy": lambda x: x.to("mydev:1"),
    "non_blocking_copy_from_pinned_memory": lambda x: torch.ones(3).pin_memory().to(x.device, non_blocking=True),
    "explicit_synchronize": lambda x: torch.mydev.synchronize(),
    "event_synchronize": lambda x: torch.mydev.Event().synchronize(),
    # mydev's own waits, where CUDA's host does not wait: a Meta kernel that cannot stand in for the CPU's, a check
    # of the data made at the call as the CPU makes it.
    "median": lambda x: x.median(),
    "cummax": lambda x: torch.cummax(x, 0),
    "searchsorted": lambda x: torch.searchsorted(x, x),
    "fft": lambda x: torch.fft.rfft(x),
    "multinomial_with_replacement": lambda x: torch.multinomial(x + 1, 4, replacement=True),
}


def device_values():
    return torch.arange(6.0, device="mydev")


class TestSyncDebugMode(TestCase):
    def tearDown(self):
        torch.mydev.set_sync_debug_mode("default")

    def test_modes_round_trip_like_torch_cuda(self):
        self.assertEqual(torch.mydev.get_sync_debug_mode(), 0)
        for name, value in (("warn", 1), ("error", 2), ("default", 0)):
            torch.mydev.set_sync_debug_mode(name)
            self.assertEqual(torch.mydev.get_sync_debug_mode(), value)
        torch.mydev.set_sync_debug_mode(1)
        self.assertEqual(torch.mydev.get_sync_debug_mode(), 1)

    def test_bad_modes_are_refused(self):
        with self.assertRaisesRegex(RuntimeError, "expected one of `default`, `warn`, `error`"):
            torch.mydev.set_sync_debug_mode("loud")
        with self.assertRaisesRegex(RuntimeError, "expected 0, 1 or 2, got 3"):
            torch.mydev.set_sync_debug_mode(3)
        with self.assertRaisesRegex(TypeError, "must be a str or an int"):
            torch.mydev.set_sync_debug_mode(1.0)
        self.assertEqual(torch.mydev.get_sync_debug_mode(), 0)

    @parametrize("name", list(SYNCHRONIZING))
    def test_warn_mode_warns_for_each_host_wait(self, name):
        x = device_values()
        torch.mydev.set_sync_debug_mode("warn")
        with self.assertWarnsRegex(UserWarning, SYNC_MESSAGE):
            SYNCHRONIZING[name](x)

    @parametrize("name", list(SYNCHRONIZING))
    def test_error_mode_raises_and_names_the_operation(self, name):
        x = device_values()
        torch.mydev.set_sync_debug_mode("error")
        with self.assertRaisesRegex(RuntimeError, SYNC_MESSAGE + ": .*(copy|aten::|Stream.synchronize)"):
            SYNCHRONIZING[name](x)
        torch.mydev.set_sync_debug_mode("default")
        SYNCHRONIZING[name](x)  # the same call is fine again

    def test_the_message_names_the_operator(self):
        x = device_values()
        torch.mydev.set_sync_debug_mode("error")
        with self.assertRaisesRegex(RuntimeError, r"aten::_local_scalar_dense \(Tensor.item\(\)\)"):
            x.sum().item()
        with self.assertRaisesRegex(RuntimeError, "aten::nonzero"):
            torch.nonzero(x)
        with self.assertRaisesRegex(RuntimeError, "blocking copy from mydev to the host"):
            x.cpu()

    @parametrize("name", list(NOT_SYNCHRONIZING))
    def test_asynchronous_calls_and_requested_waits_stay_silent(self, name):
        x = device_values()
        torch.mydev.set_sync_debug_mode("error")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            NOT_SYNCHRONIZING[name](x)

    def test_default_mode_is_silent(self):
        x = device_values()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for call in SYNCHRONIZING.values():
                call(x)


class TestInjectedFaults(TestCase):
    def test_a_kernel_failure_surfaces_at_the_next_synchronization_and_names_the_kernel(self):
        x = device_values()
        torch.mydev.synchronize()
        with torch.mydev.inject_fault("aten::mul", nth=2):
            first = x * 2
            second = x * 3  # fails: it does not run
            after = x + 1
        with self.assertRaisesRegex(RuntimeError, r"kernel 'aten::mul\.Tensor' failed on mydev:0: injected fault"):
            torch.mydev.synchronize()
        torch.mydev.synchronize()  # reported once
        self.assertEqual(first.cpu(), torch.arange(6.0) * 2)
        self.assertEqual(after.cpu(), torch.arange(6.0) + 1)
        self.assertEqual((x * 3).cpu(), torch.arange(6.0) * 3)  # the device stays usable
        del second

    def test_a_failure_is_an_accelerator_error_with_the_runtime_code(self):
        x = device_values()
        with torch.mydev.inject_fault("aten::mul"):
            x * 2
        with self.assertRaisesRegex(torch.AcceleratorError, "aten::mul.Tensor' failed") as caught:
            torch.mydev.synchronize()
        self.assertGreater(caught.exception.error_code, 0)

    def test_a_failure_reaches_the_stream_that_consumes_its_results(self):
        # CUDA's errors are sticky: work on another stream that waited for a failed kernel cannot read its result
        # without an error. Reported once: the producer's stream has nothing left to report afterwards.
        x = device_values()
        torch.mydev.synchronize()
        side = torch.mydev.Stream()
        side.wait_stream(torch.mydev.current_stream())
        with torch.mydev.stream(side):
            with torch.mydev.inject_fault("aten::mul"):
                product = x * 2
        torch.mydev.current_stream().wait_stream(side)
        with self.assertRaisesRegex(torch.AcceleratorError, "aten::mul.Tensor' failed on mydev:0"):
            (product + 1).cpu()
        side.synchronize()
        torch.mydev.synchronize()
        self.assertEqual((x * 2).cpu(), torch.arange(6.0) * 2)

    def test_a_failure_reaches_another_device_through_a_copy(self):
        x = device_values()
        torch.mydev.synchronize()
        with torch.mydev.inject_fault("aten::mul"):
            product = x * 2
        with self.assertRaisesRegex(torch.AcceleratorError, "aten::mul.Tensor' failed on mydev:0"):
            product.to("mydev:1").cpu()
        torch.mydev.synchronize(0)
        torch.mydev.synchronize(1)

    def test_an_out_of_range_index_on_one_stream_is_not_silent_on_another(self):
        values = torch.arange(16.0, device="mydev").view(4, 4)
        index = torch.tensor([[0, 1, 2, 99]], device="mydev")
        torch.mydev.synchronize()
        side = torch.mydev.Stream()
        side.wait_stream(torch.mydev.current_stream())
        with torch.mydev.stream(side):
            gathered = torch.gather(values, 0, index)
        torch.mydev.current_stream().wait_stream(side)
        with self.assertRaisesRegex(RuntimeError, "out of bounds"):
            (gathered * 2).cpu()
        torch.mydev.synchronize()

    def test_a_fault_outside_its_block_does_not_fire(self):
        x = device_values()
        with torch.mydev.inject_fault("aten::mul", nth=5):
            x * 2
        for _ in range(6):
            x = x * 1
        torch.mydev.synchronize()
        self.assertEqual(x.cpu(), torch.arange(6.0))

    def test_an_injected_out_of_memory_raises_out_of_memory_error_and_the_device_recovers(self):
        with torch.mydev.inject_fault(kind="oom"):
            with self.assertRaisesRegex(torch.OutOfMemoryError, "mydev out of memory. Tried to allocate 512.00 MiB"):
                torch.empty(1 << 27, device="mydev")
        self.assertEqual(torch.ones(1 << 27, device="mydev").sum().item(), float(1 << 27))

    def test_a_stuck_kernel_holds_its_stream_until_the_block_exits(self):
        x = device_values()
        stream = torch.mydev.current_stream()
        torch.mydev.synchronize()
        with torch.mydev.inject_fault("aten::neg", kind="hang"):
            y = torch.neg(x)
            z = y + 1
            time.sleep(0.05)
            self.assertFalse(stream.query())
        self.assertEqual(z.cpu(), 1 - torch.arange(6.0))

    def test_a_failure_injected_into_a_watched_launch_raises_at_the_call(self):
        # A kernel's first launch with dtypes not seen yet is watched: the caller waits for it, to raise what it
        # raises at the call. Failed without running, it must raise there too, not leave the caller waiting.
        result = run_python(
            """
            import torch
            probs = torch.tensor([0.2, 0.3, 0.5], device="mydev")
            with torch.mydev.inject_fault("aten::multinomial"):
                try:
                    torch.multinomial(probs, 2)
                    print("no error at the call")
                except RuntimeError as error:
                    print("raised at the call:", "kernel 'aten::multinomial.out' failed on mydev:0: injected fault" in str(error))
            print(sorted(torch.multinomial(probs, 2).tolist()) in ([0, 1], [0, 2], [1, 2]))
            """,
            timeout=60,
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines(), ["raised at the call: True", "True"])

    def test_bad_arguments_are_refused(self):
        with self.assertRaisesRegex(ValueError, "kind must be one of"):
            with torch.mydev.inject_fault("aten::mul", kind="explode"):
                pass
        with self.assertRaisesRegex(ValueError, "needs the kernel's name"):
            with torch.mydev.inject_fault():
                pass
        with self.assertRaisesRegex(ValueError, "nth must be a positive int"):
            with torch.mydev.inject_fault("aten::mul", nth=0):
                pass

    def test_environment_variable_injects_a_kernel_failure(self):
        result = run_python(
            """
            import torch
            x = torch.ones(4, device="mydev")
            y = x.mul(2)
            z = x.mul(3)
            try:
                torch.mydev.synchronize()
            except RuntimeError as error:
                print("raised:", str(error).split(" [at ")[0])
            print(z.sum().item())
            """,
            env={"MYDEV_INJECT_FAULT": "aten::mul.Tensor:1"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("raised: mydev error (mydevErrorLaunchFailure): kernel 'aten::mul.Tensor' failed on mydev:0: "
                      "injected fault", result.stdout)
        self.assertIn("12.0", result.stdout)

    def test_launch_blocking_raises_an_injected_failure_at_the_call(self):
        result = run_python(
            """
            import torch
            x = torch.ones(4, device="mydev")
            try:
                x.mul(2)
                print("no error at the call")
            except RuntimeError as error:
                print("raised at the call:", "aten::mul" in str(error))
            """,
            env={"MYDEV_INJECT_FAULT": "aten::mul", "MYDEV_LAUNCH_BLOCKING": "1"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("raised at the call: True", result.stdout)

    def test_a_malformed_environment_variable_is_a_clear_error(self):
        result = run_python(
            """
            import torch
            try:
                torch.ones(1, device="mydev")
            except RuntimeError as error:
                print("refused:", "invalid MYDEV_INJECT_FAULT='oom:x'" in str(error))
            """,
            env={"MYDEV_INJECT_FAULT": "oom:x"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("refused: True", result.stdout)

    def test_an_environment_hang_is_caught_by_a_timeout(self):
        # What the conformance kit's --timeout does with a kernel that never finishes: the process is stopped, and
        # nothing else (the parent, other processes) is affected.
        code = textwrap.dedent(
            """
            import torch
            x = torch.ones(4, device="mydev")
            print("launching", flush=True)
            torch.neg(x).sum().item()
            print("finished")
            """
        )
        env = {**os.environ, "MYDEV_INJECT_FAULT": "hang:aten::neg"}
        with self.assertRaises(subprocess.TimeoutExpired) as stopped:
            subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=15)
        self.assertIn(b"launching", stopped.exception.stdout)
        self.assertNotIn(b"finished", stopped.exception.stdout)


instantiate_parametrized_tests(TestSyncDebugMode)

if __name__ == "__main__":
    run_tests()
