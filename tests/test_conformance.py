"""The vendor conformance kit (python -m torch_mydev.conformance), run the way a vendor runs it:
as a subprocess writing its report into a directory, plus in-process checks of its building blocks."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
from torch.testing._internal.common_utils import run_tests, TestCase

from torch.testing._internal.opinfo.core import SampleInput

from torch_mydev.conformance.catalog import ops_by_name
from torch_mydev.conformance.compare import compare, Tolerance
from torch_mydev.conformance.gradients import Differentiability
from torch_mydev.conformance.op_runner import run_op
from torch_mydev.conformance.sample_transfer import Call, DeviceTransfer, result_device_type
from torch_mydev.conformance.upstream_tests import run_upstream_tests

from helpers import run_python

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDER = os.path.join(REPOSITORY, "torch_mydev", "conformance", "goldens.py")
STATUSES = ("pass", "mismatch", "error", "not_implemented", "skipped", "crash", "timeout", "not_applicable")


def run_kit(*args):
    return subprocess.run(
        [sys.executable, "-m", "torch_mydev.conformance", *args], capture_output=True, text=True, timeout=300
    )


def read_results(directory):
    with open(os.path.join(directory, "results.json")) as file:
        return json.load(file)


class TestConformanceRun(TestCase):
    """One small run shared by the tests that read its report."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.directory = tempfile.mkdtemp(prefix="conformance-")
        cls.process = run_kit(
            "--ops", "add,abs,nonzero,sum,masked_select,complex",
            "--dtypes", "float32,int64",
            "--modules", "nn.Linear",
            "--max-samples", "2",
            "--output", cls.directory,
        )  # fmt: skip
        cls.report = read_results(cls.directory) if cls.process.returncode == 0 else None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.directory)
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.assertEqual(self.process.returncode, 0, self.process.stderr)

    def test_every_selected_pair_passes(self):
        pairs = {(r["kind"], r["name"], r["dtype"]): r for r in self.report["results"]}
        expected = {("op", name, dtype) for name in ("add", "abs", "nonzero", "sum") for dtype in ("float32", "int64")}
        expected |= {("op", "masked_select", "float32"), ("op", "masked_select", "int64"), ("op", "complex", "float32")}
        # ModuleInfos declare float32 and float64, so only float32 of the requested dtypes applies.
        expected.add(("module", "nn.Linear", "float32"))
        self.assertEqual(set(pairs), expected)
        for key, result in pairs.items():
            self.assertEqual(result["status"], "pass", f"{key}: {result['reason']}")
            self.assertEqual(result["samples"]["run"], 2, key)
        self.assertTrue(pairs[("op", "add", "float32")]["backward"])
        self.assertFalse(pairs[("op", "add", "int64")]["backward"])
        self.assertEqual(pairs[("op", "abs", "float32")]["family"], "unary")
        self.assertEqual(pairs[("op", "sum", "int64")]["family"], "reduction")

    def test_summary_adds_up(self):
        summary, results = self.report["summary"], self.report["results"]
        self.assertEqual(sum(summary[status] for status in STATUSES), len(results))
        self.assertEqual(summary["pairs"], len(results) - summary["not_applicable"])
        self.assertEqual(summary["samples_run"], sum(r["samples"]["run"] for r in results))
        self.assertEqual(summary["pass_rate"], 100.0)
        self.assertEqual(summary["pass_rate_non_skipped"], 100.0)
        for grouping in ("by_dtype", "by_family", "by_kind"):
            self.assertEqual(sum(group["pairs"] for group in summary[grouping].values()), summary["pairs"], grouping)
        self.assertEqual(summary["by_dtype"]["int64"]["pairs"], 5)
        environment = self.report["environment"]
        self.assertEqual(environment["device_name"], torch.mydev.get_device_name())
        self.assertEqual(environment["torch_version"], torch.__version__)
        self.assertTrue(self.report["complete"])

    def test_error_inputs_are_judged_by_when_they_raise(self):
        section = self.report["error_inputs"]
        results = {result["name"]: result for result in section["results"]}
        # Every selected op is judged. Of those, add, complex and masked_select have error inputs (add's the CPU does
        # not reject: they are for other devices); abs and complex have dtypes the CPU refuses (abs of bool).
        self.assertEqual(set(results), {"add", "abs", "nonzero", "sum", "complex", "masked_select"})
        for name in ("add", "nonzero", "sum"):
            self.assertEqual(results[name]["status"], "skipped", name)
        for name in ("abs", "complex", "masked_select"):
            result = results[name]
            self.assertEqual(result["kind"], "errors")
            self.assertEqual(result["status"], "pass", f"{name}: {result['reason']}")
            self.assertEqual(result["samples"]["at_call"] + result["samples"]["dtype_at_call"], result["samples"]["run"])
            self.assertGreater(result["samples"]["run"], 0)
        self.assertGreater(results["abs"]["samples"]["dtype_at_call"], 0)
        summary = section["summary"]
        self.assertEqual(summary["ops"], 6)
        self.assertEqual(summary["inputs"] + summary["dtype_inputs"],
                         sum(result["samples"]["run"] for result in results.values()))
        self.assertEqual((summary["late"], summary["wrong"], summary["silent"]), (0, 0, 0))
        self.assertEqual((summary["dtype_late"], summary["dtype_wrong"], summary["dtype_silent"]), (0, 0, 0))
        self.assertEqual(summary["at_call_rate"], 100.0)
        self.assertEqual(summary["dtype_at_call_rate"], 100.0)
        self.assertIn("error inputs and dtype errors of 6 ops", self.process.stdout)

    def test_html_report_is_self_contained(self):
        with open(os.path.join(self.directory, "report.html"), encoding="utf-8") as file:
            html = file.read()
        self.assertIn("<svg", html)
        self.assertIn("By op family", html)
        self.assertIn("By dtype", html)
        self.assertIn("All passed.", html)
        self.assertIn("mydev simulated device", html)
        self.assertIn("<h2>Error inputs</h2>", html)
        for external in ("http://", "https://", "src=", "<link"):
            self.assertNotIn(external, html.replace('xmlns="http://www.w3.org/2000/svg"', ""))


class TestConformanceIsolation(TestCase):
    def test_crash_and_hang_cost_one_pair_each(self):
        with tempfile.TemporaryDirectory(prefix="conformance-") as directory:
            process = run_kit(
                "--ops", "abs,add,neg",
                "--max-samples", "1",
                "--inject-crash", "abs",
                "--inject-hang", "add",
                "--timeout", "3",
                "--fail-under", "50",
                "--output", directory,
            )  # fmt: skip
            self.assertEqual(process.returncode, 1, process.stderr)
            report = read_results(directory)
        statuses = {r["name"]: r for r in report["results"]}
        self.assertEqual(statuses["abs"]["status"], "crash")
        self.assertIn("SIGSEGV", statuses["abs"]["reason"])
        self.assertEqual(statuses["add"]["status"], "timeout")
        self.assertEqual(statuses["neg"]["status"], "pass", statuses["neg"]["reason"])
        self.assertEqual([r["name"] for r in report["results"]][-1], "neg")
        self.assertEqual(report["summary"]["crash"], 1)
        self.assertEqual(report["summary"]["timeout"], 1)


DEVICE_GENERIC_TESTS = """
import os, signal, time, unittest
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, onlyCPU
from torch.testing._internal.common_utils import TestCase

class TestSample(TestCase):
    def test_passes(self, device):
        self.assertEqual((torch.ones(3, device=device) + 1).cpu(), torch.full((3,), 2.0))
    def test_fails_on_the_device(self, device):
        self.assertEqual(torch.device(device).type, "cpu")
    def test_fails_everywhere(self, device):
        self.assertEqual(torch.ones(3, device=device).cpu(), torch.zeros(3))
    def test_crashes(self, device):
        if self.device_type != "cpu":
            os.kill(os.getpid(), signal.SIGSEGV)
    def test_hangs(self, device):
        if self.device_type != "cpu":
            time.sleep(600)
    def test_runs_after_the_crash(self, device):
        self.assertEqual(torch.arange(4, device=device).sum().item(), 6)
    def test_on_the_skip_list(self, device):
        raise RuntimeError("the skip list should have kept this from running")
    @unittest.expectedFailure
    def test_expected_to_fail(self, device):
        raise RuntimeError("known")
    @onlyCPU
    def test_cpu_only(self, device):
        pass

instantiate_device_type_tests(TestSample, globals())
"""


class TestConformanceUpstream(TestCase):
    """PyTorch's device-generic test files through PrivateUse1TestBase, on a file written here."""

    def write_test_file(self, directory, text=DEVICE_GENERIC_TESTS):
        path = os.path.join(directory, "test_device_generic_sample.py")
        with open(path, "w") as file:
            file.write(text)
        return path

    def test_each_test_gets_its_outcome_and_a_crash_or_hang_costs_one_test(self):
        with tempfile.TemporaryDirectory(prefix="upstream-") as directory:
            path = self.write_test_file(directory)
            upstream = run_upstream_tests(
                [path], os.path.join(directory, "out"), timeout=3, skips={"*::test_on_the_skip_list_*": "a reason"}
            )
        prefix = "test_device_generic_sample.py::TestSamplePRIVATEUSE1::"
        outcomes = {o["test"][len(prefix):]: o for o in upstream["not_passing"]}
        self.assertEqual(
            {name: o["status"] for name, o in outcomes.items()},
            {
                "test_fails_on_the_device_mydev": "fail",
                "test_fails_everywhere_mydev": "fails_on_cpu_too",
                "test_crashes_mydev": "crash",
                "test_hangs_mydev": "timeout",
                "test_on_the_skip_list_mydev": "skipped",
                "test_cpu_only_mydev": "skipped",
            },
        )
        self.assertIn("SIGSEGV", outcomes["test_crashes_mydev"]["message"])
        self.assertEqual(outcomes["test_on_the_skip_list_mydev"]["message"], "mydev skip list: a reason")
        self.assertIn("'mydev' != 'cpu'", outcomes["test_fails_on_the_device_mydev"]["message"])
        self.assertIn("on the CPU: AssertionError: Tensor-likes are not close",
                      outcomes["test_fails_everywhere_mydev"]["message"])
        file = upstream["files"][0]
        # The CPU twins of the four failing tests ran, in a second pass.
        self.assertEqual((file["tests"], file["pass"], file["expected_failure"], file["cpu_twins_run"]), (9, 2, 1, 4))
        self.assertEqual(file["processes"], 4)  # the crash and the timeout each cost a restart, then the CPU pass
        # 3 passing (one an expected failure) of the 6 neither skipped nor failing on the CPU too.
        self.assertEqual(upstream["summary"]["pass_rate_non_skipped"], 50.0)

    def test_kit_reports_upstream_tests(self):
        passing_only = DEVICE_GENERIC_TESTS.split("    def test_fails_on_the_device")[0] + "\ninstantiate_device_type_tests(TestSample, globals())\n"
        with tempfile.TemporaryDirectory(prefix="upstream-") as directory:
            path = self.write_test_file(directory, passing_only)
            process = run_kit("--upstream-tests", path, "--upstream-only", "--fail-under", "100", "--output", directory)
            self.assertEqual(process.returncode, 0, process.stderr)
            report = read_results(directory)
            with open(os.path.join(directory, "report.html")) as html:
                self.assertIn("PyTorch's device-generic tests", html.read())
        self.assertEqual(report["upstream"]["summary"]["tests"], 1)
        self.assertEqual(report["upstream"]["summary"]["pass"], 1)
        self.assertEqual(report["results"], [])
        self.assertIn("upstream tests: 1 in 1 files", process.stdout)

    def test_a_file_that_cannot_be_collected_is_reported(self):
        with tempfile.TemporaryDirectory(prefix="upstream-") as directory:
            path = self.write_test_file(directory, "from torch.testing._internal.common_utils import no_such_helper\n")
            upstream = run_upstream_tests([path], os.path.join(directory, "out"))
        file = upstream["files"][0]
        self.assertEqual(file["tests"], 0)
        self.assertIn("error while collecting", file["problem"])
        self.assertIn("no_such_helper", file["problem"])

    def test_missing_upstream_path_is_a_usage_error(self):
        process = run_kit("--upstream-tests", "/nonexistent/test", "--upstream-only")
        self.assertEqual(process.returncode, 2)
        self.assertIn("no such upstream test file or directory", process.stderr)


class TestConformanceGoldens(TestCase):
    def test_recorded_outputs_round_trip_and_tampering_shows(self):
        with tempfile.TemporaryDirectory(prefix="conformance-") as directory:
            goldens_path = os.path.join(directory, "goldens.pt")
            # Run the recorder by its script path, as on a CUDA machine without
            # torch_mydev, and check it did not load torch_mydev.
            record = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__'); "
                    "assert 'torch_mydev' not in sys.modules",
                    RECORDER, "record", "--out", goldens_path,
                    "--ops", "add,abs", "--max-samples", "2", "--device", "cpu",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )  # fmt: skip
            self.assertEqual(record.returncode, 0, record.stderr)
            goldens = torch.load(goldens_path, weights_only=False)
            self.assertEqual(goldens["metadata"]["device"], "cpu")
            # abs has a single sample input; add has more than two.
            self.assertEqual([(e["op"], len(e["samples"])) for e in goldens["entries"]], [("abs", 1), ("add", 2)])

            add_entry = next(e for e in goldens["entries"] if e["op"] == "add")
            add_entry["samples"][1]["output"] = add_entry["samples"][1]["output"] + 0.5
            torch.save(goldens, goldens_path)
            output = os.path.join(directory, "report")
            process = run_kit("--goldens", goldens_path, "--goldens-only", "--fail-under", "50", "--output", output)
            self.assertEqual(process.returncode, 0, process.stderr)
            report = read_results(output)
            with open(os.path.join(output, "report.html"), encoding="utf-8") as file:
                html = file.read()
            # --fail-under gates the goldens comparison too (1 of its 2 entries passes).
            stricter = run_kit("--goldens", goldens_path, "--goldens-only", "--fail-under", "51", "--output", output)
            self.assertEqual(stricter.returncode, 1, stricter.stderr)
            self.assertIn("below --fail-under 51.0%", stricter.stderr)
            self.assertIn("goldens from", stricter.stderr)
        # A goldens-only run reports no sweep against the CPU, and charts the goldens by family and dtype.
        self.assertNotIn("pairs with a CPU reference", process.stdout)
        self.assertIn("goldens from", process.stdout)
        self.assertIn("CUDA goldens", html)
        self.assertNotIn("ran on the device and on the CPU", html)
        self.assertEqual(html.count("By dtype"), 1)

        self.assertEqual(report["results"], [])
        results = {r["name"]: r for r in report["goldens"]["results"]}
        self.assertEqual(results["abs"]["status"], "pass", results["abs"]["reason"])
        self.assertEqual(results["abs"]["samples"]["run"], 1)
        self.assertEqual(results["add"]["status"], "mismatch")
        self.assertEqual(results["add"]["samples"], {"run": 2, "pass": 1, "mismatch": 1})
        mismatch = results["add"]["failure"]["mismatch"]
        self.assertEqual(mismatch["where"], "output")
        self.assertAlmostEqual(mismatch["max_abs_error"], 0.5, places=5)
        self.assertTrue(results["add"]["failure"]["sample"].startswith("#1"))
        self.assertEqual(report["goldens"]["summary"]["mismatch"], 1)


class TestConformanceOptions(TestCase):
    def test_a_selection_without_pairs_is_a_usage_error(self):
        process = run_kit("--ops", "add", "--dtypes", "float8_e4m3fn")
        self.assertEqual(process.returncode, 2)
        self.assertIn("nothing to run: no op or module of --ops 'add' in the dtypes of --dtypes 'float8_e4m3fn'",
                      process.stderr)

    def test_injected_faults_select_what_ops_and_modules_select(self):
        from torch_mydev.conformance.__main__ import parse_args, request_for

        _, args = parse_args(["--inject-crash", "round", "--inject-hang", "Linear"])
        item = {"kind": "op", "name": "round.decimals_3", "dtype": "float32"}
        self.assertEqual(request_for(item, args)["fault"], "crash")
        self.assertEqual(request_for({**item, "name": "abs"}, args)["fault"], None)
        self.assertEqual(request_for({"kind": "module", "name": "nn.Linear", "dtype": "float32"}, args)["fault"], "hang")

    def test_fail_under_gates_every_part_on_exact_counts(self):
        from torch_mydev.conformance.__main__ import parts_below

        def pairs(passing, skipped=0, failing=0):
            return {"pass": passing, "skipped": skipped, "pairs": passing + skipped + failing}

        options = {"goldens_only": False, "upstream_only": False}
        sweep_only = {"options": options, "summary": pairs(99, skipped=5, failing=1)}
        self.assertEqual(parts_below(sweep_only, 99), [])
        self.assertEqual(parts_below(sweep_only, 99.5), ["pairs with a CPU reference: 99 of 100 pass (99.00%)"])
        # a rate rounded to two decimals would read 100.0 here
        large = {"options": options, "summary": pairs(20_000, failing=1)}
        self.assertEqual(len(parts_below(large, 100)), 1)
        with_goldens = {
            **sweep_only,
            "goldens": {"metadata": {"device_name": "NVIDIA H100"}, "summary": pairs(1, failing=1)},
        }
        self.assertEqual(parts_below(with_goldens, 90), ["goldens from NVIDIA H100: 1 of 2 pass (50.00%)"])
        nothing_compared = {"options": options, "summary": pairs(0, skipped=3)}
        self.assertEqual(parts_below(nothing_compared, 0), ["pairs with a CPU reference: nothing was compared"])
        upstream_only = {
            "options": {"goldens_only": False, "upstream_only": True},
            "summary": pairs(0),
            "upstream": {"summary": {"tests": 10, "pass": 7, "expected_failure": 1, "skipped": 1,
                                     "fails_on_cpu_too": 0}},
        }
        self.assertEqual(parts_below(upstream_only, 80), [])
        self.assertEqual(parts_below(upstream_only, 90), ["upstream tests: 8 of 9 pass (88.89%)"])
        def error_summary(at_call=0, inputs=0, cpu_only=0, cpu_only_silent=0, dtype_at_call=0, dtype_inputs=0,
                          failed_ops=0):
            return {**sweep_only, "error_inputs": {"summary": {
                "at_call": at_call, "inputs": inputs, "cpu_only": cpu_only, "cpu_only_wrong": 0,
                "cpu_only_silent": cpu_only_silent, "dtype_at_call": dtype_at_call, "dtype_inputs": dtype_inputs,
                "ops": 10, "error": failed_ops, "crash": 0, "timeout": 0}}}

        self.assertEqual(parts_below(error_summary(9, 10), 90), [])
        self.assertEqual(parts_below(error_summary(9, 10), 95), ["error inputs raised at the call: 9 of 10 pass (90.00%)"])
        self.assertEqual(parts_below(error_summary(10, 10, cpu_only=4, cpu_only_silent=1), 99),
                         ["error inputs only the CPU checks, raised at the call or late: 3 of 4 pass (75.00%)"])
        self.assertEqual(parts_below(error_summary(dtype_at_call=3, dtype_inputs=4), 99),
                         ["dtype errors raised at the call: 3 of 4 pass (75.00%)"])
        # ops without error inputs whose dtype errors all raise at the call pass the gate
        self.assertEqual(parts_below(error_summary(dtype_at_call=4, dtype_inputs=4), 99), [])
        self.assertEqual(parts_below(error_summary(), 99), ["error inputs and dtype errors: nothing was compared"])
        self.assertEqual(parts_below(error_summary(10, 10, failed_ops=1), 99),
                         ["ops whose error inputs and dtype errors were judged: 9 of 10 pass (90.00%)"])

    def test_an_error_raised_at_the_call_only_by_a_first_launch_is_late(self):
        # In a fresh process: index_select's first launch of a signature waits for its kernel, so an index out of
        # range raises at the call until a valid call ran (tests/test_bad_input.py), and at the next synchronization
        # after it. The kit judges it late either way, whatever ran before in its worker.
        result = run_python('''
            import torch
            from torch.testing._internal.opinfo.core import ErrorInput, SampleInput
            from torch_mydev.conformance.error_runner import _call
            device = torch.device("mydev")
            x = torch.arange(5.0, device=device)
            bad = ErrorInput(SampleInput(x, args=(0, torch.tensor([10], device=device))), error_type=IndexError,
                             error_regex="out of range")
            first, raised = _call(torch.index_select, bad, device)
            torch.index_select(x, 0, torch.tensor([3], device=device)).cpu()
            second, _ = _call(torch.index_select, bad, device)
            print(first, "first launch of its signature" in raised, second)
            ''')
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["late", "True", "late"])

    def test_error_inputs_are_classified_against_the_cpu(self):
        from torch.testing._internal.opinfo.core import ErrorInput

        from torch_mydev.conformance.error_runner import COMMON_DTYPES, run_error_inputs

        def behave(x, how):
            """Raises ValueError('bad input') on the CPU; on mydev, as `how` says."""
            if x.device.type == "cpu" or how == "at_call":
                if how == "cpu_does_not_raise":
                    return x
                raise ValueError("bad input")
            if how == "wrong":
                raise TypeError("another error")
            if how == "late":
                index = torch.tensor([0], device=x.device)
                torch.take(x, index)  # a valid take first, so that the next one is launched asynchronously
                torch.take(x, index + 100)  # out of range: fails on the stream
            return x

        class FakeOp:
            error_inputs_func = True

            def supported_dtypes(self, device):
                return COMMON_DTYPES

            def error_inputs(self, device):
                for how in ("at_call", "late", "wrong", "silent", "cpu_does_not_raise"):
                    yield ErrorInput(SampleInput(torch.ones(3, device=device), args=(how,)),
                                     error_type=ValueError, error_regex="bad input")

            def __call__(self, x, how):
                return behave(x, how)

        result = run_error_inputs(FakeOp(), device=torch.device("mydev"))
        self.assertEqual(result["status"], "mismatch")
        samples = result["samples"]
        self.assertEqual({k: samples[k] for k in ("at_call", "late", "wrong", "silent", "cpu_does_not_raise")},
                         {"at_call": 1, "late": 1, "wrong": 1, "silent": 1, "cpu_does_not_raise": 1})
        self.assertEqual(samples["run"], 4)
        self.assertEqual([failure["outcome"] for failure in result["inputs"]], ["late", "wrong", "silent"])
        self.assertIn("1 late, 1 wrong, 1 silent of 4", result["reason"])

    def test_dtype_errors_must_raise_at_the_call_with_the_cpus_message(self):
        """Each common dtype an op does not list for the CPU gives its first sample in that dtype: where the CPU
        refuses it, the device must raise at the call, with the CPU's message."""
        from torch_mydev.conformance.error_runner import run_error_inputs

        class FakeOp:
            error_inputs_func = None

            def supported_dtypes(self, device):
                return {torch.float32, torch.float64, torch.complex64, torch.complex128, torch.bfloat16, torch.float16,
                        torch.bool, torch.uint8}

            def sample_inputs(self, device, dtype):
                yield SampleInput(torch.ones(3, device=device, dtype=dtype))

            def __call__(self, x):
                refusal = f"\"fake_cpu\" not implemented for '{x.dtype}'"
                if x.device.type == "cpu" or x.dtype == torch.int8:
                    raise NotImplementedError(refusal)
                if x.dtype == torch.int16:
                    raise NotImplementedError("\"another_kernel_cpu\" not implemented")
                if x.dtype == torch.int32:
                    index = torch.tensor([0], device=x.device)
                    torch.take(x, index)
                    torch.take(x, index + 100)  # out of range: fails on the stream
                return x

        result = run_error_inputs(FakeOp(), device=torch.device("mydev"))
        samples = result["samples"]
        self.assertEqual({k: samples[f"dtype_{k}"] for k in ("at_call", "late", "wrong", "silent")},
                         {"at_call": 1, "late": 1, "wrong": 1, "silent": 1})
        self.assertEqual(result["status"], "mismatch")
        self.assertEqual([(failure["input"], failure["outcome"]) for failure in result["inputs"]],
                         [("int16 sample", "wrong"), ("int32 sample", "late"), ("int64 sample", "silent")])
        self.assertIn("1 late, 1 wrong, 1 silent of the dtype errors", result["reason"])

    def test_dtype_errors_of_real_ops_raise_at_the_call(self):
        from torch_mydev.conformance.catalog import ops_by_name
        from torch_mydev.conformance.error_runner import run_error_inputs

        for name in ("bitwise_and", "gcd", "softmax", "nn.functional.conv2d", "scatter_reduce.mean"):
            result = run_error_inputs(ops_by_name()[name], device=torch.device("mydev"))
            self.assertGreater(result["samples"]["dtype_at_call"], 0, msg=name)
            self.assertEqual(result["status"], "pass", msg=f"{name}: {result['reason']}")

    def test_error_inputs_of_each_device_are_paired_by_what_they_expect(self):
        """Upstream builds some error inputs for the CPU alone (bounds that CUDA checks in its kernels) and some for
        other devices alone: each device input meets the CPU input expecting the same error, and the CPU's own run on
        the device apart, where late is what CUDA does and silent fails."""
        from torch.testing._internal.opinfo.core import ErrorInput

        from torch_mydev.conformance.error_runner import COMMON_DTYPES, run_error_inputs

        class FakeOp:
            error_inputs_func = True

            def __init__(self, cpu_only_outcome):
                self.cpu_only_outcome = cpu_only_outcome

            def supported_dtypes(self, device):
                return COMMON_DTYPES

            def error_inputs(self, device):
                yield ErrorInput(SampleInput(torch.ones(3, device=device), args=("dtype",)), error_regex="bad dtype")
                if torch.device(device).type == "cpu":
                    yield ErrorInput(SampleInput(torch.ones(3, device=device), args=("bounds",)),
                                     error_type=IndexError, error_regex="out of bounds")
                else:
                    yield ErrorInput(SampleInput(torch.ones(3, device=device), args=("devices",)),
                                     error_regex="same device")
                yield ErrorInput(SampleInput(torch.ones(3, device=device), args=("shape",)), error_regex="bad shape")
                # The same call, expected to fail with another exception elsewhere (as upstream's narrow_copy inputs).
                if torch.device(device).type == "cpu":
                    yield ErrorInput(SampleInput(torch.ones(3, device=device), args=("dim",)), error_regex="dim < 3")
                else:
                    yield ErrorInput(SampleInput(torch.ones(3, device=device), args=("dim",)),
                                     error_type=IndexError, error_regex="Dimension out of range")

            def __call__(self, x, check):
                if check == "dtype":
                    raise RuntimeError("bad dtype")
                if check == "shape":
                    raise RuntimeError("bad shape")
                if check == "devices":
                    raise RuntimeError("Expected all tensors to be on the same device")
                if check == "dim":
                    if x.device.type == "cpu":
                        raise RuntimeError("Expected dim < 3")
                    raise IndexError("Dimension out of range")
                if x.device.type == "cpu":
                    raise IndexError("index 5 is out of bounds")
                if self.cpu_only_outcome == "late":
                    torch.take(x, torch.tensor([0], device=x.device))
                    torch.take(x, torch.tensor([100], device=x.device))
                return x

        late = run_error_inputs(FakeOp("late"), device=torch.device("mydev"))
        self.assertEqual(late["status"], "pass", late["reason"])
        samples = late["samples"]
        # dtype, devices (the device's own), shape and dim (paired by its call) raise at the call; positional pairing
        # would have judged the device's "devices" input against the CPU's "bounds" one, and so on down the lists.
        self.assertEqual((samples["run"], samples["at_call"]), (4, 4))
        self.assertEqual((samples["cpu_only_late"], samples["cpu_only_silent"]), (1, 0))

        silent = run_error_inputs(FakeOp("silent"), device=torch.device("mydev"))
        self.assertEqual(silent["status"], "mismatch")
        self.assertEqual(silent["samples"]["cpu_only_silent"], 1)
        self.assertEqual([(failure["input"], failure["outcome"]) for failure in silent["inputs"]],
                         [("CPU-only #1", "silent")])
        self.assertIn("1 silent of the CPU-only inputs", silent["reason"])


class TestConformanceBuildingBlocks(TestCase):
    def test_transfer_keeps_layout_bits_and_aliasing(self):
        base = torch.randn(4, 6)
        transposed = base[:, 1:4].t()
        expanded = torch.randn(3, 1).expand(3, 5)
        conjugated = torch.randn(2, 2, dtype=torch.complex64).conj()
        negated = torch._neg_view(torch.randn(3))
        leaf = torch.randn(2, requires_grad=True)
        moved = DeviceTransfer("mydev").call(
            Call(transposed, (expanded, [conjugated, negated], base), {"weight": leaf, "device": "cpu"})
        )
        moved_expanded, (moved_conjugated, moved_negated), moved_base = moved.args
        for original, copy in ((transposed, moved.input), (expanded, moved_expanded), (conjugated, moved_conjugated)):
            self.assertEqual(copy.device.type, "mydev")
            self.assertEqual(copy.stride(), original.stride())
            self.assertEqual(copy.storage_offset(), original.storage_offset())
            self.assertEqual(copy.cpu(), original)
        self.assertTrue(moved_conjugated.is_conj())
        self.assertTrue(moved_negated.is_neg())
        self.assertEqual(moved_negated.cpu(), negated)
        self.assertEqual(moved.input.untyped_storage().data_ptr(), moved_base.untyped_storage().data_ptr())
        self.assertTrue(moved.kwargs["weight"].requires_grad and moved.kwargs["weight"].is_leaf)
        self.assertEqual(moved.kwargs["device"], "mydev")

    def test_a_tensor_used_twice_is_one_tensor_on_the_device(self):
        # nn.KLDivLoss's scalar sample passes one tensor as input and target: its gradient sums both uses.
        shared = torch.tensor(0.25, dtype=torch.float64, requires_grad=True) * 1
        moved = DeviceTransfer("mydev").call(Call(shared, (shared,), {}))
        self.assertIs(moved.input, moved.args[0])
        kl_div = torch.nn.functional.kl_div
        cpu_grad = torch.autograd.grad(kl_div(shared, shared, reduction="sum"), shared)
        mydev_grad = torch.autograd.grad(kl_div(moved.input, moved.args[0], reduction="sum"), moved.input)
        self.assertEqual(mydev_grad[0].cpu(), cpu_grad[0], atol=0, rtol=0)

    def test_upstream_skips_that_only_excuse_differences_still_run(self):
        ops = ops_by_name()
        # "Overflow when downcasting signed type is undefined": mydev runs the CPU's kernel, so it still compares.
        overflowing = ops["byte"]
        result = run_op(overflowing, torch.float32, device=torch.device("mydev"), max_samples=2, backward=False)
        self.assertEqual(result["status"], "pass", result["reason"])
        self.assertIsNotNone(result["upstream"]["skip"])
        # An op that only exists on CUDA has no CPU reference: listed, and left out of the pass rates.
        cuda_only = ops["jiterator_unary"]
        result = run_op(cuda_only, torch.float32, device=torch.device("mydev"), max_samples=2, backward=False)
        self.assertEqual(result["status"], "not_applicable")
        self.assertIn("runs it on cuda only, so there is no CPU reference", result["reason"])
        # An op upstream tests on the CPU only has its CPU kernel on mydev, so it runs, backward included.
        cpu_only = ops["sparse.mm.reduce"]
        result = run_op(cpu_only, torch.float32, device=torch.device("mydev"), max_samples=4, backward=True)
        self.assertEqual((result["status"], result["samples"]["run"]), ("pass", 4), result["reason"])
        self.assertIn("Only runs on cpu", result["upstream"]["skip"])

    def test_results_upstream_calls_non_deterministic_are_compared_in_deterministic_mode(self):
        # torch.empty's memory differs between the CPU and mydev; with torch.use_deterministic_algorithms both
        # fill it (NaN, the largest integer), so the values compare.
        for dtype in (torch.float32, torch.int64):
            result = run_op(ops_by_name()["empty"], dtype, device=torch.device("mydev"), max_samples=3, backward=False)
            self.assertEqual(result["status"], "pass", result["reason"])
            self.assertEqual(result["samples"]["run"], 3)
        self.assertFalse(torch.are_deterministic_algorithms_enabled())

    def test_compare_checks_device_dtype_and_values(self):
        expected = torch.tensor([1.0, float("nan"), 3.0])
        self.assertIsNone(compare(expected.to("mydev"), expected, Tolerance(), "mydev", "output"))
        self.assertIn("expected a mydev tensor", compare(expected, expected, Tolerance(), "mydev", "output").message)
        widened = compare(expected.double().to("mydev"), expected, Tolerance(), "mydev", "output")
        self.assertIn("dtype differs", widened.message)
        off = torch.tensor([1.0, float("nan"), 3.5], device="mydev")
        mismatch = compare((off,), (expected,), Tolerance(), "mydev", "output")
        self.assertEqual((mismatch.where, mismatch.max_abs_error), ("output[0]", 0.5))
        self.assertIsNone(compare((off,), (expected,), Tolerance(atol=0.6), "mydev", "output"))

    def test_results_are_expected_where_pytorch_puts_them(self):
        device = torch.device("mydev")
        transfer = DeviceTransfer(device)
        numbers_only = transfer.call(Call(-8.5, (-1.75,), {}))
        self.assertEqual(result_device_type(numbers_only, device), "cpu")
        self.assertEqual(result_device_type(transfer.call(Call(torch.ones(2), (3.0,), {})), device), "mydev")
        factory = transfer.call(Call(5, (), {"device": "cpu"}))
        self.assertEqual(result_device_type(factory, device), "mydev")
        # zeros_like(t, device="cpu") with the "cpu" kept on purpose (placement) asks for a CPU result.
        kept = transfer.call(Call(torch.ones(2), (), {"device": "cpu"}), placement=[False, True])
        self.assertEqual(result_device_type(kept, device), "cpu")

    def test_differentiability_follows_the_sample_function_then_falls_back_to_floats(self):
        weight, running_mean, index = torch.randn(3), torch.zeros(3), torch.tensor([0, 2])

        def samples_with_grad():
            yield SampleInput(weight.clone().requires_grad_(), args=(running_mean, index))
            raise ValueError("`requires_grad=True` is not supported for boolean and integral dtypes")

        differentiability = Differentiability(samples_with_grad)
        self.assertEqual(differentiability.of(Call(weight, (running_mean, index), {})), [True, False, False])
        self.assertEqual(differentiability.of(Call(weight, (running_mean, index), {})), [True, True, False])

    def test_every_sample_runs_forward_and_backward_alike_on_both_sides(self):
        # Regressions: views a sample function takes in no-grad mode got no gradient on the CPU side (abs, the
        # contiguous no-op), Python-number samples were expected on the device (mul), and sample functions that
        # raise for integral tensors with requires_grad failed the whole pair (addcmul).
        device = torch.device("mydev")
        for name in ("abs", "contiguous", "mul", "addcmul"):
            op = ops_by_name()[name]
            result = run_op(op, torch.float32, device=device, max_samples=None, backward=True)
            self.assertEqual(result["status"], "pass", f"{name}: {result['reason']}")
            self.assertTrue(result["backward"], name)
            self.assertEqual(result["samples"]["run"], len(list(op.reference_inputs("cpu", torch.float32))), name)


if __name__ == "__main__":
    run_tests()
