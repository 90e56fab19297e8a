"""Streams, events and asynchronous execution: launches return before the work
ran, events order and time it, errors raised by a kernel surface at the next
synchronization and leave the device usable."""
import threading
import time

import torch
from torch.testing._internal.common_utils import run_tests, TestCase

from helpers import run_python


class TestStreamApi(TestCase):
    def test_streams_are_torch_streams(self):
        stream = torch.mydev.Stream()
        self.assertIsInstance(stream, torch.Stream)
        self.assertEqual(stream.device, torch.device("mydev:0"))
        self.assertNotEqual(stream, torch.mydev.default_stream())
        self.assertEqual(torch.mydev.default_stream().stream_id, 0)
        self.assertEqual(torch.mydev.current_stream(), torch.mydev.default_stream())
        self.assertEqual(torch.mydev.Stream(device=1).device, torch.device("mydev:1"))
        self.assertFalse(torch.mydev.is_current_stream_capturing())  # mydev has no graph capture

    def test_priorities_read_back_as_on_cuda(self):
        self.assertEqual(torch.mydev.Stream.priority_range(), (0, -1))
        self.assertEqual(torch.mydev.Stream().priority, 0)
        self.assertEqual(torch.mydev.Stream(priority=-1).priority, -1)
        self.assertEqual(torch.mydev.Stream(device=1, priority=-3).priority, -1)  # clamped, as CUDA clamps
        self.assertEqual(torch.mydev.default_stream().priority, 0)

    def test_a_stream_records_this_modules_events(self):
        side = torch.mydev.Stream()
        start = torch.mydev.Event(enable_timing=True)
        self.assertIs(side.record_event(start), start)
        with torch.mydev.stream(side):
            torch.randn(256, 256, device="mydev").sum()
        end = side.record_event(torch.mydev.Event(enable_timing=True))
        marker = side.record_event()
        self.assertIsInstance(marker, torch.mydev.Event)
        marker.synchronize()
        self.assertTrue(end.query())
        self.assertGreaterEqual(start.elapsed_time(end), 0.0)
        with self.assertRaisesRegex(RuntimeError, "external"):
            torch.mydev.Event(external=True)

    def test_stream_context_switches_the_current_stream(self):
        side = torch.mydev.Stream()
        with torch.mydev.stream(side):
            self.assertEqual(torch.mydev.current_stream(), side)
            self.assertEqual(torch.accelerator.current_stream(), side)
        self.assertEqual(torch.mydev.current_stream(), torch.mydev.default_stream())
        torch.mydev.set_stream(side)
        self.assertEqual(torch.mydev.current_stream(), side)
        torch.mydev.set_stream(torch.mydev.default_stream())

    def test_stream_of_other_device_in_context(self):
        other = torch.mydev.Stream(device=1)
        with torch.mydev.stream(other):
            self.assertEqual(torch.mydev.current_device(), 1)
            self.assertEqual(torch.ones(2, device="mydev").device, torch.device("mydev:1"))
        self.assertEqual(torch.mydev.current_device(), 0)

    def test_stream_context_restores_both_devices_streams(self):
        # As torch.cuda.StreamContext: the entry device's current stream comes back too, even where the block set
        # another one on it.
        on_one, on_zero = torch.mydev.Stream(1), torch.mydev.Stream(0)
        with torch.mydev.stream(on_one):
            torch.mydev.set_stream(on_zero)
        self.assertEqual(torch.mydev.current_device(), 0)
        self.assertEqual(torch.mydev.current_stream(0), torch.mydev.default_stream(0))
        self.assertEqual(torch.mydev.current_stream(1), torch.mydev.default_stream(1))

    def test_negative_stream_device_means_the_current_device(self):
        torch.mydev.set_device(1)
        try:
            self.assertEqual(torch.mydev.Stream(-1).device_index, 1)
        finally:
            torch.mydev.set_device(0)

    def test_event_query_reports_a_failed_kernel_once(self):
        # cudaEventQuery returns the failure of work before the event; Stream.query does on mydev too.
        x = torch.ones(4, device="mydev")
        with torch.mydev.inject_fault("aten::mul"):
            x * 2
        event = torch.mydev.Event()
        event.record()
        with self.assertRaisesRegex(RuntimeError, "aten::mul.Tensor' failed"):
            while not event.query():
                time.sleep(0.001)
        self.assertTrue(event.query())
        torch.mydev.synchronize()


class TestAsynchronousExecution(TestCase):
    def test_launch_returns_before_the_kernel_finished(self):
        a = torch.randn(2048, 2048, device="mydev")
        torch.mydev.synchronize()
        stream = torch.mydev.current_stream()
        product = a @ a
        self.assertFalse(stream.query(), "the matmul had already finished when the launch returned")
        stream.synchronize()
        self.assertTrue(stream.query())
        expected = a.cpu() @ a.cpu()
        self.assertEqual(product.cpu(), expected, atol=1e-3, rtol=1e-4)

    def test_work_on_a_stream_is_ordered(self):
        x = torch.zeros(1000, device="mydev")
        for i in range(200):
            x.add_(i)
        self.assertEqual(x.cpu(), torch.full((1000,), float(sum(range(200)))))

    def test_wait_stream_orders_two_streams(self):
        producer, consumer = torch.mydev.Stream(), torch.mydev.Stream()
        with torch.mydev.stream(producer):
            big = torch.randn(1024, 1024, device="mydev")
            produced = (big @ big).sum(dim=0)
        consumer.wait_stream(producer)
        with torch.mydev.stream(consumer):
            consumed = produced * 2
        consumer.synchronize()
        self.assertEqual(consumed.cpu(), 2 * (big.cpu() @ big.cpu()).sum(dim=0), atol=1e-2, rtol=1e-4)

    def test_events_time_and_order_work(self):
        start = torch.mydev.Event(enable_timing=True)
        end = torch.mydev.Event(enable_timing=True)
        a = torch.randn(1024, 1024, device="mydev")
        start.record()
        for _ in range(3):
            a = a @ a / 1024
        end.record()
        end.synchronize()
        self.assertTrue(end.query())
        self.assertGreater(start.elapsed_time(end), 0.0)
        untimed = torch.mydev.Event()
        untimed.record()
        untimed.synchronize()
        # Runtime errors name the API call and the glue's file:line.
        with self.assertRaisesRegex(RuntimeError, r"mydevEventElapsedTime: .*DisableTiming \(current device mydev:0\) \[at \w+\.cpp:\d+\]"):
            start.elapsed_time(untimed)

    def test_event_wait_across_devices(self):
        with torch.mydev.device(1):
            source = torch.arange(10000.0, device="mydev") * 3
            ready = torch.mydev.Event()
            ready.record()
        ready.wait(torch.mydev.current_stream(0))
        moved = source.to("mydev:0")
        self.assertEqual(moved.device, torch.device("mydev:0"))
        self.assertEqual(moved.cpu(), torch.arange(10000.0) * 3)

    def test_threads_hammering_streams(self):
        errors = []

        def work(seed):
            try:
                stream = torch.mydev.Stream(device=seed % 2)
                with torch.mydev.stream(stream):
                    x = torch.full((256,), float(seed), device=f"mydev:{seed % 2}")
                    for _ in range(100):
                        x = x + 1
                    stream.synchronize()
                    if x.cpu().tolist() != [float(seed + 100)] * 256:
                        errors.append(f"thread {seed}: wrong result")
            except Exception as error:  # reported below
                errors.append(f"thread {seed}: {error}")

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(errors, [])


class TestKernelErrors(TestCase):
    def test_kernel_error_surfaces_at_synchronize_and_device_stays_usable(self):
        x = torch.arange(5.0, device="mydev")
        torch.index_select(x, 0, torch.tensor([1], device="mydev"))  # the signature runs: later launches are async
        index = torch.tensor([10], device="mydev")
        torch.index_select(x, 0, index)  # fails inside the kernel, after the launch returned
        # IndexError, as ATen's CPU kernel raises it.
        with self.assertRaisesRegex(IndexError, r"kernel 'aten::index_select(\.\w+)?' failed on mydev:0: index out of range.*\[at \w+\.cpp:\d+\]"):
            torch.mydev.synchronize()
        torch.mydev.synchronize()  # reported once
        self.assertEqual((x + 1).cpu(), torch.arange(5.0) + 1)

    def test_launch_blocking_reports_at_the_call(self):
        result = run_python(
            """
            import torch
            x = torch.arange(5.0, device="mydev")
            # A valid call first: once its signature has run, index_select's launches are asynchronous, and only
            # launch blocking makes a device-side error raise at the call (as CUDA_LAUNCH_BLOCKING does).
            torch.index_select(x, 0, torch.tensor([1], device="mydev"))
            try:
                torch.index_select(x, 0, torch.tensor([10], device="mydev"))
                print("no error at the call")
            except IndexError as error:
                print("raised at the call", "index_select" in str(error))
            print((x * 2).sum().item())
            """,
            env={"MYDEV_LAUNCH_BLOCKING": "1"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines(), ["raised at the call True", "20.0"])


if __name__ == "__main__":
    run_tests()
