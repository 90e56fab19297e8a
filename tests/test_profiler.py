"""The device in torch.profiler, as CUDA shows in it: every kernel, copy and memset the device ran, on the device's
timeline (pid = device, tid = stream), linked to the ATen op that launched it (FunctionEvent.kernels, device-time
columns, flow arrows in the exported Chrome trace); device memory events under profile_memory; the legacy profiler's
device times; and a CPU-only profile that the device leaves alone."""
import json
import os
import tempfile

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from torch.testing._internal.common_utils import run_tests, TestCase

from helpers import run_python

DEVICE_ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def profiled(work, **kwargs):
    with profile(activities=DEVICE_ACTIVITIES, **kwargs) as prof:
        work()
    return prof


def exported_trace(prof):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as file:
            return json.load(file)


def device_events(prof):
    return [event for event in prof.events() if event.device_type == DeviceType.PrivateUse1]


class TestDeviceTimeline(TestCase):
    def test_each_op_lists_the_kernels_it_launched(self):
        x = torch.randn(64, 64, device="mydev")
        prof = profiled(lambda: torch.mm(x, x).sin())
        by_name = {event.name: event for event in prof.events() if event.device_type == DeviceType.CPU}
        for op in ("aten::mm", "aten::sin"):
            kernels = by_name[op].kernels
            self.assertEqual([kernel.name for kernel in kernels], [op.replace("aten::", "mydev:")])
            self.assertEqual(kernels[0].device, 0)
            self.assertGreater(kernels[0].duration, 0)

    def test_dtype_probes_of_a_first_launch_stay_out_of_the_profile(self):
        result = run_python("""
            import torch
            from torch.profiler import profile, ProfilerActivity
            x = torch.randn(8, 8, device="mydev")
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
                torch.mm(x, x)
            print(sorted({e.name for e in prof.events() if e.name.startswith("aten::")}))
        """)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "['aten::mm']")

    def test_an_op_is_one_row_not_one_inside_another(self):
        # item() and the functional GELU and ReLU backward once dispatched again inside themselves.
        x = torch.randn(64, 64, device="mydev", requires_grad=True)
        torch.mydev.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            x.sum().item()
            torch.nn.functional.gelu(x).sum().backward()
            torch.relu(x).sum().backward()
        names = [event.name for event in prof.events()]
        for name in ("aten::item", "aten::_local_scalar_dense", "aten::gelu", "aten::gelu_backward",
                     "aten::threshold_backward"):
            self.assertEqual(names.count(name), 1, name)

    def test_kernels_run_on_the_device_timeline_after_their_launch(self):
        x = torch.randn(256, 256, device="mydev")
        prof = profiled(lambda: [x @ x for _ in range(3)])
        kernels = device_events(prof)
        self.assertEqual([k.name for k in kernels], ["mydev:mm"] * 3)
        launches = sorted((e for e in prof.events() if e.name == "mydevLaunchKernel"), key=lambda e: e.time_range.start)
        ordered = sorted(kernels, key=lambda k: k.time_range.start)
        self.assertEqual(len(launches), len(ordered))
        for launch, kernel in zip(launches, ordered):
            self.assertGreaterEqual(kernel.time_range.start, launch.time_range.start)
        # One stream runs its kernels one after another.
        for earlier, later in zip(ordered, ordered[1:]):
            self.assertLessEqual(earlier.time_range.end, later.time_range.start + 1)

    def test_key_averages_carry_device_time(self):
        x = torch.randn(128, 128, device="mydev")
        prof = profiled(lambda: [torch.mm(x, x) for _ in range(4)])
        mm = next(row for row in prof.key_averages() if row.key == "aten::mm")
        self.assertEqual(mm.count, 4)
        self.assertGreater(mm.device_time_total, 0)
        kernel = next(row for row in prof.key_averages() if row.key == "mydev:mm")
        self.assertEqual(kernel.count, 4)
        self.assertAlmostEqual(kernel.self_device_time_total, mm.device_time_total, delta=1.0)
        table = prof.key_averages().table(sort_by="device_time_total", row_limit=5)
        self.assertIn("MYDEV total", table)
        self.assertIn("aten::mm", table)

    def test_copies_and_memsets_are_device_activities(self):
        host = torch.randn(1000)

        def work():
            on_device = host.to("mydev")
            on_device.zero_()
            on_device.to("mydev:1")
            on_device.cpu()

        trace = exported_trace(profiled(work))
        copies = [e for e in trace["traceEvents"] if e.get("cat") == "gpu_memcpy"]
        directions = sorted(e["args"]["direction"] for e in copies)
        self.assertEqual(directions, ["DtoD", "DtoH", "HtoD"])
        self.assertTrue(all(e["args"]["bytes"] == 4000 for e in copies))
        memsets = [e for e in trace["traceEvents"] if e.get("cat") == "gpu_memset"]
        self.assertEqual(len(memsets), 1)
        self.assertEqual(memsets[0]["args"]["bytes"], 4000)

    def test_exported_trace_has_device_rows_streams_and_flows(self):
        x = torch.randn(32, 32, device="mydev")
        side = torch.mydev.Stream()

        def work():
            y = x * 2
            with torch.mydev.stream(side):
                z = x + 1
            return y, z

        trace = exported_trace(profiled(work))
        events = trace["traceEvents"]
        kernels = [e for e in events if e.get("cat") == "kernel"]
        self.assertGreaterEqual(len(kernels), 2)
        self.assertTrue(all(e["pid"] == 0 for e in kernels))
        self.assertEqual(len({e["tid"] for e in kernels}), 2)
        self.assertTrue(all(e["dur"] >= 0 and e["ts"] > 0 for e in kernels))
        # The device process and its streams are named rows.
        names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e.get("ph") == "M" and "name" in e.get("args", {})}
        self.assertTrue(any("mydev" in name for name in names.values()))
        # Each kernel is the end of a flow from the host thread that launched it.
        flow_starts = {e["id"]: e for e in events if e.get("cat") == "ac2g" and e["ph"] == "s"}
        flow_ends = {e["id"]: e for e in events if e.get("cat") == "ac2g" and e["ph"] == "f"}
        self.assertGreaterEqual(len(flow_ends), len(kernels))
        for kernel in kernels:
            ending = [f for f in flow_ends.values() if f["pid"] == kernel["pid"] and f["tid"] == kernel["tid"]
                      and f["ts"] == kernel["ts"]]
            self.assertEqual(len(ending), 1, kernel["name"])
            start = flow_starts[ending[0]["id"]]
            self.assertNotEqual(start["pid"], kernel["pid"])
            self.assertLessEqual(start["ts"], kernel["ts"])
        launches = [e for e in events if e.get("name") == "mydevLaunchKernel"]
        self.assertGreaterEqual(len(launches), len(kernels))

    def test_on_trace_ready_receives_the_device_rows(self):
        x = torch.randn(16, 16, device="mydev")
        seen = []
        schedule = torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=1)
        with profile(activities=DEVICE_ACTIVITIES, schedule=schedule,
                     on_trace_ready=lambda p: seen.append(len(device_events(p)))) as prof:
            for _ in range(4):
                x.sin()
                prof.step()
        self.assertEqual(len(seen), 1)
        self.assertGreaterEqual(seen[0], 2)

    def test_tensorboard_trace_handler_writes_a_trace_with_device_rows(self):
        x = torch.randn(16, 16, device="mydev")
        with tempfile.TemporaryDirectory() as folder:
            with profile(activities=DEVICE_ACTIVITIES,
                         on_trace_ready=torch.profiler.tensorboard_trace_handler(folder)):
                x.cos()
            files = os.listdir(folder)
            self.assertEqual(len(files), 1)
            with open(os.path.join(folder, files[0])) as file:
                trace = json.load(file)
        self.assertTrue(any(e.get("cat") == "kernel" and e["name"] == "mydev:cos" for e in trace["traceEvents"]))

    def test_compiled_kernels_appear_on_the_device_timeline(self):
        x = torch.randn(64, device="mydev")
        compiled = torch.compile(lambda t: (t * 2).sin() + 1, backend="inductor")
        compiled(x)
        prof = profiled(lambda: compiled(x))
        self.assertTrue(any(event.name.startswith("mydev:cpp_fused") for event in device_events(prof)),
                        [event.name for event in device_events(prof)])


class TestProfilerLeavesOtherProfilesAlone(TestCase):
    def test_a_cpu_only_profile_has_no_device_rows(self):
        x = torch.randn(32, 32, device="mydev")
        profiled(lambda: x * 2)  # the device profiler is attached from now on
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            x * 3
        self.assertEqual(device_events(prof), [])
        self.assertTrue(any(event.name == "aten::mul" for event in prof.events()))

    def test_work_launched_before_the_profile_is_not_in_it(self):
        x = torch.randn(32, 32, device="mydev")
        x.tan()
        prof = profiled(lambda: x.exp())
        names = [event.name for event in device_events(prof)]
        self.assertIn("mydev:exp", names)
        self.assertNotIn("mydev:tan", names)


class TestDeviceMemoryEvents(TestCase):
    def test_profile_memory_records_device_allocations(self):
        def work():
            a = torch.empty(1 << 20, device="mydev")
            del a

        prof = profiled(work, profile_memory=True)
        empty = next(e for e in prof.events() if e.name == "aten::empty")
        self.assertEqual(empty.device_memory_usage, 4 << 20)
        self.assertEqual(empty.cpu_memory_usage, 0)
        freed = [e for e in prof.events() if e.name == "[memory]"]
        self.assertEqual([e.device_memory_usage for e in freed], [-(4 << 20)])
        trace = exported_trace(prof)
        instants = [e["args"] for e in trace["traceEvents"] if e.get("name") == "[memory]"]
        self.assertEqual([(a["Device Type"], a["Device Id"], a["Bytes"]) for a in instants],
                         [(int(DeviceType.PrivateUse1), 0, 4 << 20), (int(DeviceType.PrivateUse1), 0, -(4 << 20))])
        self.assertEqual(instants[0]["Total Allocated"] - instants[1]["Total Allocated"], 4 << 20)

    def test_memory_events_count_toward_the_op_that_allocated(self):
        x = torch.randn(256, device="mydev")
        prof = profiled(lambda: x * 2, profile_memory=True)
        mul = next(row for row in prof.key_averages() if row.key == "aten::mul")
        self.assertEqual(mul.device_memory_usage, 1024)


class TestLegacyProfiler(TestCase):
    def test_use_device_gives_device_times(self):
        x = torch.randn(128, 128, device="mydev")
        with torch.autograd.profiler.profile(use_device="mydev", use_kineto=False) as prof:
            for _ in range(3):
                torch.mm(x, x)
        mm = next(row for row in prof.key_averages() if row.key == "aten::mm")
        self.assertEqual(mm.count, 3)
        self.assertGreater(mm.device_time_total, 0)

    def test_use_device_with_kineto_gives_kernels(self):
        x = torch.randn(64, 64, device="mydev")
        with torch.autograd.profiler.profile(use_device="mydev", use_kineto=True) as prof:
            torch.mm(x, x)
        mm = next(event for event in prof.function_events if event.name == "aten::mm")
        self.assertIn("mydev:mm", [kernel.name for kernel in mm.kernels])
        self.assertGreater(mm.device_time_total, 0)


if __name__ == "__main__":
    run_tests()
