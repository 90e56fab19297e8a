"""Memory history and snapshots, as torch.cuda.memory has them: _record_memory_history, _snapshot, _dump_snapshot,
in the format PyTorch's memory viewer reads (checked by feeding the snapshots to torch.cuda._memory_viz itself)."""
import inspect
import os
import pickle
import tempfile
import time

import torch
from torch.cuda import _memory_viz
from torch.testing._internal.common_utils import run_tests, TestCase

MiB = 1 << 20


def allocate_in_a_named_function(size):
    return torch.empty(size, dtype=torch.uint8, device="mydev")


def block_at(snapshot, address):
    for segment in snapshot["segments"]:
        for block in segment["blocks"]:
            if block["address"] == address:
                return segment, block
    return None, None


def trace_of(snapshot, address, device=0):
    return [entry for entry in snapshot["device_traces"][device] if entry.get("addr") == address]


class TestMemoryHistory(TestCase):
    def setUp(self):
        torch.mydev.synchronize()
        torch.mydev.empty_cache()
        torch.mydev.memory._record_memory_history("all", clear_history=True)
        self.addCleanup(torch.mydev.memory._record_memory_history, None)

    def test_a_live_block_keeps_the_stack_that_allocated_it(self):
        x = allocate_in_a_named_function(3 * MiB + 5)
        segment, block = block_at(torch.mydev.memory._snapshot(), x.data_ptr())
        self.assertEqual(block["state"], "active_allocated")
        self.assertEqual(block["requested_size"], 3 * MiB + 5)
        self.assertGreaterEqual(block["size"], block["requested_size"])
        self.assertEqual(segment["segment_type"], "large")
        self.assertEqual(segment["device"], 0)
        names = [(frame["name"], os.path.basename(frame["filename"])) for frame in block["frames"]]
        self.assertIn(("allocate_in_a_named_function", "test_memory_history.py"), names)
        self.assertIn(("test_a_live_block_keeps_the_stack_that_allocated_it", "test_memory_history.py"), names)
        python_frames = [frame for frame in block["frames"] if frame["filename"].endswith(".py")]
        self.assertTrue(all(frame["line"] > 0 for frame in python_frames))

    def test_the_trace_lists_each_action_in_order(self):
        # Larger than any free block left in the cache: it gets a segment of its own.
        x = allocate_in_a_named_function(64 * MiB)
        address = x.data_ptr()
        del x
        torch.mydev.empty_cache()
        snapshot = torch.mydev.memory._snapshot()
        actions = [(entry["action"], entry["size"]) for entry in trace_of(snapshot, address)]
        self.assertEqual(actions, [("segment_alloc", 64 * MiB), ("alloc", 64 * MiB), ("free_requested", 64 * MiB),
                                   ("free_completed", 64 * MiB), ("segment_free", 64 * MiB)])
        times = [entry["time_us"] for entry in trace_of(snapshot, address)]
        self.assertEqual(times, sorted(times))
        self.assertLess(abs(times[-1] / 1e6 - time.time()), 60)
        self.assertTrue(all(entry["stream"] == 0 for entry in trace_of(snapshot, address)))
        alloc = trace_of(snapshot, address)[1]
        self.assertIn("allocate_in_a_named_function", [frame["name"] for frame in alloc["frames"]])
        self.assertIsNone(block_at(snapshot, address)[1])

    def test_a_free_waits_for_the_streams_that_used_the_block(self):
        x = torch.ones(MiB, device="mydev")
        address = x.data_ptr()
        side = torch.mydev.Stream()
        with torch.mydev.inject_fault("aten::neg", kind="hang"):
            with torch.mydev.stream(side):
                x.neg()
                x.record_stream(side)
            del x
            snapshot = torch.mydev.memory._snapshot()
            self.assertEqual(block_at(snapshot, address)[1]["state"], "active_pending_free")
            self.assertEqual([e["action"] for e in trace_of(snapshot, address)][-1], "free_requested")
        side.synchronize()
        torch.empty(1, device="mydev")  # the allocator collects finished frees when it next allocates
        snapshot = torch.mydev.memory._snapshot()
        self.assertEqual(block_at(snapshot, address)[1]["state"], "inactive")
        self.assertEqual([e["action"] for e in trace_of(snapshot, address)][-2:], ["free_requested", "free_completed"])

    def test_an_out_of_memory_is_in_the_trace(self):
        with torch.mydev.inject_fault(kind="oom"):
            with self.assertRaises(torch.OutOfMemoryError):
                allocate_in_a_named_function(64 * MiB)
        ooms = [e for e in torch.mydev.memory._snapshot()["device_traces"][0] if e["action"] == "oom"]
        self.assertEqual(len(ooms), 1)
        self.assertEqual(ooms[0]["size"], 64 * MiB)
        self.assertGreater(ooms[0]["device_free"], 0)
        self.assertIn("allocate_in_a_named_function", [frame["name"] for frame in ooms[0]["frames"]])

    def test_segments_add_up_to_what_the_allocator_reserved(self):
        keep = [torch.empty(n, device="mydev") for n in (10, 1000, 300_000, 4 * MiB)]
        snapshot = torch.mydev.memory._snapshot()
        on_device_0 = [s for s in snapshot["segments"] if s["device"] == 0]
        self.assertEqual(sum(s["total_size"] for s in on_device_0), torch.mydev.memory_reserved(0))
        self.assertEqual(sum(s["allocated_size"] for s in on_device_0), torch.mydev.memory_allocated(0))
        for segment in on_device_0:
            self.assertEqual(sum(b["size"] for b in segment["blocks"]), segment["total_size"])
            addresses = [b["address"] for b in segment["blocks"]]
            self.assertEqual(addresses[0], segment["address"])
            self.assertEqual(addresses, sorted(addresses))
        del keep

    def test_the_ring_keeps_the_newest_entries(self):
        torch.mydev.memory._record_memory_history("all", max_entries=4, clear_history=True)
        for size in (1, 2, 3, 4, 5):
            allocate_in_a_named_function(size * 1024)
        allocated = torch.mydev.memory_allocated(0)
        trace = torch.mydev.memory._snapshot()["device_traces"][0]
        self.assertEqual(len(trace), 4)
        # Taking the snapshot is the newest action, as on CUDA.
        self.assertEqual([(e["action"], e["size"]) for e in trace][-3:], [("free_requested", 5 * 1024),
                                                                         ("free_completed", 5 * 1024),
                                                                         ("snapshot", allocated)])

    def test_each_snapshot_is_an_action_sized_by_the_memory_allocated(self):
        x = torch.empty(1 << 20, dtype=torch.uint8, device="mydev")
        torch.mydev.memory._snapshot()
        trace = torch.mydev.memory._snapshot()["device_traces"][0]
        snapshots = [entry["size"] for entry in trace if entry["action"] == "snapshot"]
        self.assertEqual(snapshots, [torch.mydev.memory_allocated(0)] * 2)
        self.assertGreaterEqual(snapshots[0], 1 << 20)
        del x

    def test_skipped_actions_stay_out_of_the_trace(self):
        torch.mydev.memory._record_memory_history("all", clear_history=True,
                                                   skip_actions=["free_requested", "snapshot"])
        allocate_in_a_named_function(2048)
        actions = {entry["action"] for entry in torch.mydev.memory._snapshot()["device_traces"][0]}
        self.assertIn("alloc", actions)
        self.assertIn("free_completed", actions)
        self.assertNotIn("free_requested", actions)
        self.assertNotIn("snapshot", actions)
        with self.assertRaisesRegex(ValueError, "unknown action 'frees' in skip_actions"):
            torch.mydev.memory._record_memory_history("all", skip_actions=["frees"])

    def test_the_legacy_boolean_form_keeps_torch_cudas_defaults(self):
        # enabled=True: a trace of trace_alloc_max_entries actions (1 by default), stacks of live blocks.
        torch.mydev.memory._record_memory_history(True, clear_history=True)
        x = allocate_in_a_named_function(2048)
        snapshot = torch.mydev.memory._snapshot()
        self.assertEqual([entry["action"] for entry in snapshot["device_traces"][0]], ["snapshot"])
        self.assertIn("allocate_in_a_named_function", [f["name"] for f in block_at(snapshot, x.data_ptr())[1]["frames"]])
        torch.mydev.memory._record_memory_history(True, True, 100, clear_history=True)
        allocate_in_a_named_function(2048)
        self.assertGreater(len(torch.mydev.memory._snapshot()["device_traces"][0]), 1)
        torch.mydev.memory._record_memory_history(False)
        self.assertEqual(torch.mydev.memory._snapshot()["device_traces"][0], [])

    def test_what_mydev_does_not_record_is_refused(self):
        for option in ("compile_context", "global_record_annotations"):
            with self.assertRaisesRegex(NotImplementedError, f"{option}=True is not supported yet"):
                torch.mydev.memory._record_memory_history("all", **{option: True})
        self.assertEqual(list(inspect.signature(torch.mydev.memory._record_memory_history).parameters),
                         list(inspect.signature(torch.cuda.memory._record_memory_history).parameters))

    def test_state_only_keeps_stacks_without_a_trace(self):
        torch.mydev.memory._record_memory_history("state", clear_history=True)
        x = allocate_in_a_named_function(2048)
        snapshot = torch.mydev.memory._snapshot()
        self.assertEqual(snapshot["device_traces"][0], [])
        self.assertIn("allocate_in_a_named_function", [f["name"] for f in block_at(snapshot, x.data_ptr())[1]["frames"]])

    def test_turning_history_off_drops_the_trace_and_stops_stacks(self):
        allocate_in_a_named_function(2048)
        torch.mydev.memory._record_memory_history(None)
        x = allocate_in_a_named_function(2048)
        snapshot = torch.mydev.memory._snapshot()
        self.assertEqual(snapshot["device_traces"][0], [])
        self.assertEqual(block_at(snapshot, x.data_ptr())[1]["frames"], [])

    def test_cpp_stacks_on_request(self):
        torch.mydev.memory._record_memory_history("all", stacks="all", clear_history=True)
        x = allocate_in_a_named_function(4096)
        frames = block_at(torch.mydev.memory._snapshot(), x.data_ptr())[1]["frames"]
        self.assertTrue(any(frame["filename"].endswith(".py") for frame in frames))
        self.assertTrue(any("torch_mydev" in frame["name"] or "DeviceCache" in frame["name"] for frame in frames),
                        [frame["name"] for frame in frames])

    def test_bad_arguments_are_refused(self):
        with self.assertRaisesRegex(ValueError, "expected enabled"):
            torch.mydev.memory._record_memory_history("sometimes")
        with self.assertRaisesRegex(ValueError, "expected context"):
            torch.mydev.memory._record_memory_history("all", context="everything")
        with self.assertRaisesRegex(ValueError, "expected stacks"):
            torch.mydev.memory._record_memory_history("all", stacks="rust")
        with self.assertRaisesRegex(RuntimeError, "Invalid device index 9 for mydev"):
            torch.mydev.memory._record_memory_history("all", device="mydev:9")
        with self.assertRaisesRegex(RuntimeError, "Invalid device index 7 for mydev"):
            torch.mydev.memory._snapshot(device=7)
        with self.assertRaisesRegex(ValueError, "Expected a mydev device"):
            torch.mydev.memory._snapshot(device="cpu")
        with self.assertRaises(FileNotFoundError):
            torch.mydev.memory._dump_snapshot("/no/such/folder/snapshot.pickle")


class TestMemoryViewerReadsSnapshots(TestCase):
    def setUp(self):
        torch.mydev.memory._record_memory_history("all", clear_history=True)
        self.addCleanup(torch.mydev.memory._record_memory_history, None)
        self.keep = allocate_in_a_named_function(5 * MiB)
        allocate_in_a_named_function(1000)
        self.snapshot = torch.mydev.memory._snapshot()

    def test_segment_summary(self):
        summary = _memory_viz.segsum(self.snapshot)
        segments = [s for s in self.snapshot["segments"] if s["device"] == 0]
        self.assertIn(f"segments: {len(segments)}\n", summary)
        allocated = sum(s["allocated_size"] for s in segments)
        self.assertIn(f"total_allocated: {_memory_viz._format_size(allocated)}\n", summary)

    def test_trace_listing_replays_the_actions(self):
        listing = _memory_viz.trace(self.snapshot)
        self.assertIn(f"{len(self.snapshot['device_traces'][0])} entries", listing)
        self.assertIn("= seg_", listing)  # the 5 MiB block, in a segment allocated while recording
        self.assertIn("free completed for", listing)  # the 1000-byte one

    def test_html_plots(self):
        for page in (_memory_viz.trace_plot(self.snapshot), _memory_viz.segment_plot(self.snapshot)):
            self.assertIn("<html", page.lower())
            self.assertGreater(len(page), 1000)

    def test_dump_snapshot_pickles_it(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "snapshot.pickle")
            torch.mydev.memory._dump_snapshot(path)
            with open(path, "rb") as file:
                loaded = pickle.load(file)
        self.assertEqual(set(loaded), {"segments", "device_traces", "allocator_settings"})
        _, block = block_at(loaded, self.keep.data_ptr())
        self.assertEqual(block["requested_size"], 5 * MiB)


class TestOutOfMemoryMessage(TestCase):
    def test_names_the_device_the_sizes_and_what_is_cached(self):
        keep = torch.empty(3 * MiB, dtype=torch.uint8, device="mydev")
        total = torch.mydev.get_device_properties(0).total_memory
        with self.assertRaises(torch.OutOfMemoryError) as caught:
            torch.empty(total + MiB, dtype=torch.uint8, device="mydev")
        message = str(caught.exception)
        self.assertRegex(message, r"mydev out of memory\. Tried to allocate [\d.]+ GiB\. mydev:0 has a total capacity of")
        self.assertRegex(message, r"Of the allocated memory [\d.]+ MiB is allocated by PyTorch, and [\d.]+ \w+ is "
                                  r"reserved by PyTorch but unallocated")
        del keep


if __name__ == "__main__":
    run_tests()
