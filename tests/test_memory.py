"""Device memory: the caching allocator's statistics, empty_cache, OOM and
recovery, pinned host memory, and the strict separation of device memory from
host code."""
import gc
import signal
import unittest

import torch
import torch_mydev
from torch.testing._internal.common_utils import run_tests, TestCase

from helpers import run_python

MiB = 1024**2


class TestCachingAllocator(TestCase):
    def setUp(self):
        super().setUp()
        torch.mydev.synchronize()
        gc.collect()

    def test_allocated_bytes_follow_tensor_lifetimes(self):
        baseline = torch.mydev.memory_allocated()
        x = torch.empty(1000, dtype=torch.float32, device="mydev")  # 4000 bytes, rounded to 4096
        self.assertEqual(torch.mydev.memory_allocated() - baseline, 4096)
        self.assertEqual(torch.accelerator.memory_allocated(0) - baseline, 4096)
        self.assertGreaterEqual(torch.mydev.memory_reserved(), torch.mydev.memory_allocated())
        del x
        self.assertEqual(torch.mydev.memory_allocated(), baseline)

    def test_allocations_are_per_device(self):
        before = (torch.mydev.memory_allocated(0), torch.mydev.memory_allocated(1))
        y = torch.empty(3 * MiB, dtype=torch.uint8, device="mydev:1")
        self.assertEqual(torch.mydev.memory_allocated(0), before[0])
        self.assertEqual(torch.mydev.memory_allocated(1) - before[1], 3 * MiB)
        del y

    def test_peak_and_reset(self):
        torch.mydev.reset_peak_memory_stats()
        baseline = torch.mydev.memory_allocated()
        x = torch.empty(8 * MiB, dtype=torch.uint8, device="mydev")
        del x
        self.assertEqual(torch.mydev.max_memory_allocated() - baseline, 8 * MiB)
        torch.mydev.reset_peak_memory_stats()
        self.assertEqual(torch.mydev.max_memory_allocated(), torch.mydev.memory_allocated())

    def test_freed_blocks_are_cached_and_reused(self):
        x = torch.empty(12 * MiB, dtype=torch.uint8, device="mydev")
        address = x.data_ptr()
        del x
        reserved = torch.mydev.memory_reserved()
        y = torch.empty(12 * MiB, dtype=torch.uint8, device="mydev")
        self.assertEqual(y.data_ptr(), address)
        self.assertEqual(torch.mydev.memory_reserved(), reserved)
        del y

    def test_small_blocks_are_reused_whole_and_stats_stay_consistent(self):
        # Tensors earlier tests keep alive (compiled graphs' constants) hold
        # split segments: count this test's splits from theirs.
        torch.mydev.empty_cache()
        splits_before = torch.mydev.memory_stats()["inactive_split.small_pool.current"]
        x = torch.empty(100, device="mydev")
        address = x.data_ptr()
        del x
        y = torch.empty(100, device="mydev")
        self.assertEqual(y.data_ptr(), address)
        # More small frees than the allocator keeps whole, of several sizes,
        # interleaved with live neighbours: the rest merge back into the pool.
        keep = [torch.empty(size, device="mydev") for size in range(1, 4000, 97)]
        drop = [torch.empty(size, device="mydev") for size in range(1, 4000, 97)]
        del drop
        stats = torch.mydev.memory_stats()
        active = stats["active_bytes.small_pool.current"]
        self.assertEqual(active, stats["allocated_bytes.small_pool.current"])
        self.assertLessEqual(
            active + stats["inactive_split_bytes.small_pool.current"], stats["reserved_bytes.small_pool.current"]
        )
        del keep, y
        torch.mydev.empty_cache()
        stats = torch.mydev.memory_stats()
        self.assertLessEqual(stats["inactive_split.small_pool.current"], splits_before)
        self.assertEqual(stats["active.small_pool.current"], stats["allocation.small_pool.current"])
        # Every segment left holds a live block: the freed ones went back whole.
        self.assertLessEqual(stats["segment.small_pool.current"], stats["active.small_pool.current"])

    def test_a_freed_block_next_to_the_one_it_pushes_out_of_the_recent_list_survives(self):
        # Regression: freeing b evicted a (freed first, kept whole) into the pool, which merged
        # b, its free neighbour, away while b was being kept: a later allocation got a deleted block.
        # In a child process, since the failure was heap corruption.
        result = run_python("""
            import torch
            a = torch.empty(128, device="mydev")
            b = torch.empty(128, device="mydev")
            assert b.data_ptr() == a.data_ptr() + 512, (a.data_ptr(), b.data_ptr())
            others = [torch.empty(128 * (i + 2), device="mydev") for i in range(7)]
            del a
            del others
            del b
            again = [torch.empty(128, device="mydev") for _ in range(4)]
            assert len({t.data_ptr() for t in again}) == 4
            del again
            torch.mydev.empty_cache()
            stats = torch.mydev.memory_stats()
            print(stats["allocated_bytes.small_pool.current"], stats["inactive_split.small_pool.current"])
        """)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["0", "0"])

    def test_record_stream_delays_reuse_until_the_other_stream_is_done(self):
        blocker, side = torch.mydev.Stream(), torch.mydev.Stream()
        with torch.mydev.stream(blocker):
            big = torch.randn(1024, 1024, device="mydev")
            for _ in range(6):
                big = big @ big / 1024
            busy = torch.mydev.Event()
            busy.record()
        side.wait_event(busy)  # the side stream cannot start before the blocker's matmuls end
        x = torch.ones(12 * MiB, dtype=torch.uint8, device="mydev")
        address = x.data_ptr()
        with torch.mydev.stream(side):
            x.add_(1)
        x.record_stream(side)
        del x
        y = torch.empty(12 * MiB, dtype=torch.uint8, device="mydev")
        self.assertNotEqual(y.data_ptr(), address, "a block still in use on another stream was reused")
        side.synchronize()
        reserved = torch.mydev.memory_reserved()
        z = torch.empty(12 * MiB, dtype=torch.uint8, device="mydev")
        self.assertEqual(torch.mydev.memory_reserved(), reserved)
        self.assertEqual(z.data_ptr(), address)
        del y, z

    def test_record_stream_of_another_devices_stream_delays_reuse(self):
        # The block must wait for that stream itself, not for the stream with its id on the block's own device.
        side = torch.mydev.Stream(device=1)
        x = torch.empty(4 * MiB, dtype=torch.uint8, device="mydev:0")
        address = x.data_ptr()
        with torch.mydev.inject_fault("aten::neg", kind="hang"):
            with torch.mydev.stream(side):
                torch.neg(torch.ones(4, device="mydev:1"))
            x.record_stream(side)
            del x
            y = torch.empty(4 * MiB, dtype=torch.uint8, device="mydev:0")
            self.assertFalse(side.query())
            self.assertNotEqual(y.data_ptr(), address, "a block still in use on another device's stream was reused")
        side.synchronize()
        del y
        z = torch.empty(4 * MiB, dtype=torch.uint8, device="mydev:0")
        self.assertEqual(z.data_ptr(), address)

    def test_a_lazy_clone_copies_after_the_current_streams_writes(self):
        # Writing to a copy-on-write clone copies the storage (Allocator::copy_data) on the current stream: behind
        # the writes to the source still queued there, not ahead of them on the default stream.
        side = torch.mydev.Stream()
        x = torch.zeros(1 << 22, device="mydev")
        side.wait_stream(torch.mydev.current_stream())  # the zeros are written on the default stream
        with torch.mydev.stream(side):
            for _ in range(5):
                x.add_(1)
            clone = torch._lazy_clone(x)
            clone.add_(1)
        side.synchronize()
        self.assertEqual(clone.cpu(), torch.full((1 << 22,), 6.0))
        self.assertEqual(x.cpu(), torch.full((1 << 22,), 5.0))

    def test_torch_cuda_style_memory_queries(self):
        x = torch.empty(64 * MiB, dtype=torch.uint8, device="mydev")
        free, total = torch.mydev.mem_get_info()
        self.assertEqual(torch.mydev.device_memory_used(), total - free)
        self.assertGreaterEqual(torch.mydev.device_memory_used(), 64 * MiB)
        segments = torch.mydev.memory_snapshot()
        self.assertTrue(any(block["address"] == x.data_ptr() and block["state"] == "active_allocated"
                            for segment in segments for block in segment["blocks"]))
        with self.assertRaisesRegex(ValueError, "no memory pools"):
            torch.mydev.memory_snapshot(mempool_id=(0, 1))
        self.assertEqual(torch.mydev.memory_snapshot(include_traces=False), segments)
        # Without traces the history is left out, as torch.cuda's lightweight snapshot leaves it out.
        torch.mydev.memory._record_memory_history("all")
        try:
            torch.empty(MiB, dtype=torch.uint8, device="mydev")
            self.assertTrue(torch_mydev._C._memory_snapshot(True)["device_traces"][0])
            self.assertEqual(torch_mydev._C._memory_snapshot(False)["device_traces"], [[], []])
        finally:
            torch.mydev.memory._record_memory_history(None)
        self.assertEqual(torch.mydev.get_allocator_backend(), "native")
        del x

    def test_empty_cache_returns_memory_to_the_device(self):
        x = torch.empty(64 * MiB, dtype=torch.uint8, device="mydev")
        free_while_held, total = torch.mydev.mem_get_info()
        del x
        torch.mydev.empty_cache()
        free_after, total_after = torch.mydev.mem_get_info()
        self.assertEqual(total, total_after)
        self.assertGreaterEqual(free_after - free_while_held, 64 * MiB)
        stats = torch.mydev.memory_stats()
        self.assertEqual(stats["reserved_bytes.all.current"], torch.mydev.memory_reserved())
        self.assertGreater(stats["num_device_free"], 0)

    def test_memory_summary_shows_the_statistics(self):
        x = torch.empty(5 * MiB, dtype=torch.uint8, device="mydev")
        summary = torch.mydev.memory_summary()
        self.assertIn("mydev memory summary, device ID 0", summary)
        self.assertIn("Allocated memory", summary)
        del x

    def test_soak_100k_allocate_free_cycles_return_to_baseline(self):
        baseline = torch.mydev.memory_allocated()
        ooms_before = torch.mydev.memory_stats()["num_ooms"]
        sizes = [1, 17, 512, 4096, 70000, 300000]
        for i in range(100_000):
            tensor = torch.empty(sizes[i % len(sizes)], dtype=torch.uint8, device="mydev")
            del tensor
        self.assertEqual(torch.mydev.memory_allocated(), baseline)
        self.assertEqual(torch.mydev.memory_stats()["num_ooms"], ooms_before)

    def test_per_process_memory_fraction_caps_reservations(self):
        self.addCleanup(torch.mydev.set_per_process_memory_fraction, 1.0, 1)
        torch.mydev.empty_cache()
        self.assertEqual(torch.mydev.get_per_process_memory_fraction(1), 1.0)
        torch.mydev.set_per_process_memory_fraction(0.25, 1)  # 1 GiB of the 4 GiB device
        self.assertEqual(torch.mydev.get_per_process_memory_fraction(1), 0.25)
        self.assertEqual(torch.mydev.get_per_process_memory_fraction(0), 1.0)
        with self.assertRaisesRegex(torch.OutOfMemoryError, r"at most 1\.00 GiB on mydev:1 .*fraction\(0\.25\)"):
            torch.empty(1100 * MiB, dtype=torch.uint8, device="mydev:1")
        within = torch.empty(900 * MiB, dtype=torch.uint8, device="mydev:1")
        with self.assertRaises(torch.OutOfMemoryError):
            torch.empty(200 * MiB, dtype=torch.uint8, device="mydev:1")
        del within
        again = torch.empty(200 * MiB, dtype=torch.uint8, device="mydev:1")
        self.assertEqual(again.numel(), 200 * MiB)
        del again
        with self.assertRaisesRegex(ValueError, "Invalid fraction value: 1.5"):
            torch.mydev.set_per_process_memory_fraction(1.5)
        with self.assertRaisesRegex(TypeError, "must be `float`"):
            torch.mydev.set_per_process_memory_fraction(1)

    def test_raw_allocations_through_the_caching_allocator(self):
        baseline = torch.mydev.memory_allocated(1)
        side = torch.mydev.Stream(device="mydev:1")
        address = torch.mydev.caching_allocator_alloc(3 * MiB, device=1, stream=side)
        self.assertEqual(torch.mydev.memory_allocated(1) - baseline, 3 * MiB)
        torch.mydev.caching_allocator_delete(address)
        self.assertEqual(torch.mydev.memory_allocated(1), baseline)
        with self.assertRaisesRegex(RuntimeError, "invalid device pointer"):
            torch.mydev.caching_allocator_delete(address)
        # Where torch.cuda takes a stream's handle as an int, mydev takes its stream_id.
        for stream_id in (0, side.stream_id):
            address = torch.mydev.caching_allocator_alloc(MiB, 1, stream_id)
            self.assertEqual(torch.mydev.memory_allocated(1) - baseline, MiB)
            torch.mydev.caching_allocator_delete(address)
        with self.assertRaisesRegex(TypeError, "Invalid type for stream argument"):
            torch.mydev.caching_allocator_alloc(MiB, 1, "side")

    def test_nested_statistics_match_the_flat_ones(self):
        x = torch.empty(5000, device="mydev")
        flat = torch.mydev.memory_stats()
        nested = torch.mydev.memory_stats_as_nested_dict()
        self.assertEqual(nested["allocated_bytes"]["all"]["current"], flat["allocated_bytes.all.current"])
        self.assertEqual(nested["num_ooms"], flat["num_ooms"])
        del x


@unittest.skipUnless(torch.backends.mkldnn.is_available(), "the convolution used allocates its workspace through oneDNN")
class TestKernelWorkspace(TestCase):
    """Large host buffers that CPU kernels allocate while running on the stream worker are cached."""

    def setUp(self):
        super().setUp()
        self.assertTrue(torch.mydev.kernel_workspace_stats()["enabled"])

    def convolve(self):
        generator = torch.Generator().manual_seed(0)
        images = torch.randn(4, 16, 64, 64, generator=generator)
        weight = torch.randn(16, 16, 3, 3, generator=generator)
        result = torch.nn.functional.conv2d(images.to("mydev"), weight.to("mydev"), padding=1).cpu()
        self.assertEqual(result, torch.nn.functional.conv2d(images, weight, padding=1), atol=1e-4, rtol=1e-4)

    def test_a_repeated_kernel_reuses_its_workspace(self):
        self.convolve()
        first = torch.mydev.kernel_workspace_stats()
        self.assertGreater(first["requests"], 0)
        self.assertEqual(first["active_bytes"], 0)
        self.assertGreater(first["idle_bytes"], 0)
        self.convolve()
        second = torch.mydev.kernel_workspace_stats()
        requests = second["requests"] - first["requests"]
        self.assertGreater(requests, 0)
        self.assertEqual(second["reused"] - first["reused"], requests)
        self.assertEqual(second["idle_bytes"], first["idle_bytes"])

    def test_empty_cache_frees_idle_workspace(self):
        self.convolve()
        self.assertGreater(torch.mydev.kernel_workspace_stats()["idle_bytes"], 0)
        torch.mydev.empty_cache()
        self.assertEqual(torch.mydev.kernel_workspace_stats()["idle_bytes"], 0)

    def host_results(self, run):
        """What run() did with results that CPU functions allocated themselves: each counter's increase."""
        keys = ("outputs_lent", "results_in_place", "results_copied", "results_moved")
        torch.mydev.synchronize()
        before = torch.mydev.kernel_workspace_stats()
        run()
        torch.mydev.synchronize()
        after = torch.mydev.kernel_workspace_stats()
        return {key: after[key] - before[key] for key in keys}

    def test_results_without_an_out_form_land_in_their_device_outputs(self):
        # ATen's CPU flash attention backward allocates its three gradients itself, as (batch, length, heads, dim)
        # buffers transposed. Inputs laid out that way (heads split off a projection, as in a transformer) have
        # gradients laid out that way: each is computed in the memory of the device gradient it stands for.
        generator = torch.Generator().manual_seed(0)
        query, key, value = (torch.randn(2, 32, 4, 16, generator=generator).transpose(1, 2).requires_grad_()
                             for _ in range(3))
        on_device = [tensor.detach().to("mydev").requires_grad_() for tensor in (query, key, value)]
        out = torch.nn.functional.scaled_dot_product_attention(*on_device, is_causal=True)
        grad = torch.randn(out.shape, generator=generator)
        counts = self.host_results(lambda: out.backward(grad.to("mydev")))
        self.assertEqual(counts, {"outputs_lent": 3, "results_in_place": 3, "results_copied": 0, "results_moved": 0})
        torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True).backward(grad)
        for device_input, cpu_input in zip(on_device, (query, key, value)):
            self.assertEqual(device_input.grad.cpu(), cpu_input.grad, atol=1e-5, rtol=1e-4)

        # Contiguous inputs have contiguous gradients, which the CPU's do not match: not lent, copied.
        on_device = [tensor.detach().contiguous().to("mydev").requires_grad_() for tensor in (query, key, value)]
        out = torch.nn.functional.scaled_dot_product_attention(*on_device, is_causal=True)
        counts = self.host_results(lambda: out.backward(grad.to("mydev")))
        self.assertEqual(counts, {"outputs_lent": 0, "results_in_place": 0, "results_copied": 3, "results_moved": 0})
        for device_input, cpu_input in zip(on_device, (query, key, value)):
            self.assertEqual(device_input.grad.cpu(), cpu_input.grad, atol=1e-5, rtol=1e-4)

        values = torch.arange(24.0).reshape(4, 6)
        rolled = []
        counts = self.host_results(lambda: rolled.append(torch.roll(values.to("mydev"), 2, 1)))  # the fallback
        self.assertEqual(counts, {"outputs_lent": 1, "results_in_place": 1, "results_copied": 0, "results_moved": 0})
        self.assertEqual(rolled[0].cpu(), torch.roll(values, 2, 1))

    def test_a_result_lent_its_output_in_another_layout_is_moved_out_first(self):
        # channel_shuffle of a channels_last input through the fallback: Meta predicts a contiguous result, the
        # CPU kernel allocates a channels_last one. Lent the output's memory, the result holds it in its own
        # layout, so copying it in place would overwrite values it still has to read.
        images = torch.arange(2 * 8 * 3 * 3.0).reshape(2, 8, 3, 3).contiguous(memory_format=torch.channels_last)
        expected = torch.nn.functional.channel_shuffle(images, 4)
        self.assertTrue(expected.is_contiguous(memory_format=torch.channels_last))
        shuffled = []
        counts = self.host_results(
            lambda: shuffled.append(torch.nn.functional.channel_shuffle(images.to("mydev"), 4)))
        self.assertEqual(counts, {"outputs_lent": 1, "results_in_place": 0, "results_copied": 1, "results_moved": 1})
        self.assertEqual(shuffled[0].cpu(), expected)

    def test_a_convolution_learns_which_allocation_is_its_result(self):
        # oneDNN reorders the input and computes into a blocked buffer, both of the output's size here, before it
        # allocates the dense result. The first call lends the output to the first of them and copies the result;
        # from then on, the same arguments lend it to the allocation that was the result. Each test uses shapes
        # of its own: plans outlive a test.
        generator = torch.Generator().manual_seed(0)
        images = torch.randn(2, 16, 24, 24, generator=generator)
        weight = torch.randn(16, 16, 3, 3, generator=generator, requires_grad=True)
        expected = torch.nn.functional.conv2d(images, weight, padding=1)
        grad = torch.randn(expected.shape, generator=generator)
        expected.backward(grad)
        on_device = weight.detach().to("mydev").requires_grad_()
        for call, wanted in enumerate(({"outputs_lent": 1, "results_in_place": 0, "results_copied": 1},
                                       {"outputs_lent": 1, "results_in_place": 1, "results_copied": 0})):
            results = []
            counts = self.host_results(
                lambda: results.append(torch.nn.functional.conv2d(images.to("mydev"), on_device, padding=1)))
            self.assertEqual(counts, dict(wanted, results_moved=0), msg=f"call {call}")
            self.assertEqual(results[0].cpu(), expected, atol=1e-4, rtol=1e-4)

            # The backward's gradients too (of the input and of the weight).
            on_device.grad = None
            counts = self.host_results(lambda: results[0].backward(grad.to("mydev")))
            self.assertEqual(counts["results_in_place"], 0 if call == 0 else 1, msg=f"call {call}")
            self.assertEqual(counts["results_moved"], 0)
            self.assertEqual(on_device.grad.cpu(), weight.grad, atol=1e-3, rtol=1e-4)

    def test_a_convolution_stops_lending_where_its_result_has_another_layout(self):
        # A channels_last input makes the CPU's result channels_last, which the (contiguous) device output cannot
        # hold: lent to it once, the result is moved out; the plan then offers nothing, and the result is copied.
        generator = torch.Generator().manual_seed(0)
        images = torch.randn(2, 8, 20, 20, generator=generator).contiguous(memory_format=torch.channels_last)
        weight = torch.randn(8, 8, 3, 3, generator=generator)
        expected = torch.nn.functional.conv2d(images, weight, padding=1)
        for call, wanted in enumerate(({"outputs_lent": 1, "results_moved": 1}, {"outputs_lent": 0, "results_moved": 0})):
            results = []
            counts = self.host_results(
                lambda: results.append(torch.nn.functional.conv2d(images.to("mydev"), weight.to("mydev"), padding=1)))
            self.assertEqual(counts, dict(wanted, results_in_place=0, results_copied=1), msg=f"call {call}")
            self.assertEqual(results[0].cpu(), expected, atol=1e-4, rtol=1e-4)

    def test_host_allocations_outside_kernels_are_not_cached(self):
        before = torch.mydev.kernel_workspace_stats()
        torch.ones(1 << 20).mul_(2)
        self.assertEqual(torch.mydev.kernel_workspace_stats()["requests"], before["requests"])


class TestOutOfMemory(TestCase):
    def test_out_of_memory_raises_and_the_process_recovers(self):
        total = torch.mydev.get_device_properties(0).total_memory
        with self.assertRaisesRegex(torch.OutOfMemoryError, r"mydev out of memory. Tried to allocate 5\.00 GiB"):
            torch.empty(5 * 1024**3, dtype=torch.uint8, device="mydev")
        self.assertEqual(total, 4 * 1024**3)
        x = torch.ones(1000, device="mydev")
        self.assertEqual(x.sum().item(), 1000.0)

    def test_filling_a_small_device_then_recovering(self):
        result = run_python(
            """
            import torch
            held = []
            try:
                for _ in range(100):
                    held.append(torch.ones(4 * 1024 * 1024, device="mydev"))  # 16 MiB each
                print("no oom")
            except torch.OutOfMemoryError as error:
                print(len(held), "mydev:0" in str(error), "64.00 MiB" in str(error))
            held.clear()
            x = torch.full((1024,), 2.0, device="mydev")
            print((x * 3).sum().item(), torch.mydev.memory_stats()["num_ooms"])
            """,
            env={"MYDEV_DEVICE_MEMORY": "64MiB"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[0].split()[1:], ["True", "True"])
        self.assertIn(int(lines[0].split()[0]), (3, 4))
        self.assertEqual(lines[1].split(), ["6144.0", "1"])

    def test_memory_freed_in_scattered_blocks_holds_a_tensor_of_their_total_size(self):
        # On CUDA virtual addresses hide where the free memory lies; so they do on mydev.
        result = run_python(
            """
            import torch
            # 12 MiB: a segment of its own each (the caching allocator splits 20 MiB ones for smaller blocks).
            blocks = [torch.empty(12 * 1024 * 1024, dtype=torch.uint8, device="mydev") for _ in range(5)]
            for i in range(0, 5, 2):
                blocks[i] = None
            torch.mydev.empty_cache()
            print(torch.mydev.mem_get_info()[0] // 2**20)
            large = torch.empty(32 * 1024 * 1024, dtype=torch.uint8, device="mydev")
            print(torch.mydev.mem_get_info()[0] // 2**20, torch.mydev.memory_stats()["num_ooms"])
            """,
            env={"MYDEV_DEVICE_MEMORY": "64MiB"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["40", "8", "0"])


class TestPinnedMemory(TestCase):
    def test_pinned_host_memory(self):
        pinned = torch.arange(1000.0).pin_memory()
        self.assertTrue(pinned.is_pinned())
        self.assertFalse(torch.arange(3.0).is_pinned())
        fresh = torch.empty(10, pin_memory=True)
        self.assertTrue(fresh.is_pinned())

    def test_host_memory_statistics(self):
        # A block an earlier async copy read goes back to the cache at the next
        # allocation after its copy ran (as in CUDA's host allocator): take one
        # first, so that the counts below are this test's own.
        torch.mydev.synchronize()
        torch.empty(1, dtype=torch.uint8, pin_memory=True)
        torch.mydev.reset_peak_host_memory_stats()
        before = torch.mydev.host_memory_stats()
        pinned = torch.empty(3000, dtype=torch.uint8, pin_memory=True)
        during = torch.mydev.host_memory_stats()
        self.assertEqual(during["active_requests.current"] - before.get("active_requests.current", 0), 1)
        self.assertGreaterEqual(during["active_bytes.current"] - before.get("active_bytes.current", 0), 3000)
        self.assertEqual(torch.mydev.host_memory_stats_as_nested_dict()["active_requests"]["current"],
                         during["active_requests.current"])
        del pinned
        self.assertEqual(torch.mydev.host_memory_stats()["active_requests.current"],
                         during["active_requests.current"] - 1)

    def test_non_blocking_round_trip_through_pinned_memory(self):
        source = torch.randn(1 << 16).pin_memory()
        on_device = source.to("mydev", non_blocking=True)
        back = torch.empty(1 << 16).pin_memory()
        back.copy_(on_device * 2, non_blocking=True)
        torch.mydev.current_stream().synchronize()
        self.assertEqual(back, source * 2)


class TestDeviceMemoryIsNotHostMemory(TestCase):
    def test_host_access_to_device_memory_faults_loudly(self):
        result = run_python(
            """
            import ctypes
            import torch
            x = torch.ones(4, device="mydev")
            print("read", ctypes.c_float.from_address(x.data_ptr()).value, flush=True)
            """
        )
        self.assertEqual(result.returncode, -signal.SIGSEGV, result.stdout + result.stderr)
        self.assertNotIn("read", result.stdout)
        self.assertIn("mydev: illegal memory access", result.stderr)

    def test_a_segfault_sent_by_kill_still_ends_the_process(self):
        result = run_python(
            """
            import os, signal
            import torch
            torch.ones(1, device="mydev")
            os.kill(os.getpid(), signal.SIGSEGV)
            print("survived", flush=True)
            """
        )
        self.assertEqual(result.returncode, -signal.SIGSEGV, result.stdout + result.stderr)
        self.assertNotIn("survived", result.stdout)
        self.assertNotIn("illegal memory access", result.stderr)

    def test_device_pointers_resolve_to_their_device(self):
        x = torch.ones(4, device="mydev:1")
        self.assertEqual(x.untyped_storage().device, torch.device("mydev:1"))
        self.assertNotEqual(x.data_ptr(), 0)


if __name__ == "__main__":
    run_tests()
