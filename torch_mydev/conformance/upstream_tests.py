"""Runs PyTorch's own device-generic test files on mydev through PrivateUse1TestBase.

PyTorch's test files are not part of the torch wheel; a vendor points the kit
at a PyTorch source checkout (``--upstream-tests path/to/pytorch/test``) or at
individual files. Each file runs under pytest in a subprocess with
``PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1``, so that
``instantiate_device_type_tests`` instantiates the mydev variants
(``TestFooPRIVATEUSE1.test_bar_mydev``). Then the CPU twins of the mydev tests
that failed (``TestFooCPU.test_bar_cpu``) run in a second pass: a mydev test
that fails while its CPU twin fails too is reported as ``fails_on_cpu_too``:
the test file does not match the installed torch (or tests something broken
upstream), which is no defect of the device. The plugin in upstream_plugin.py skips
the tests of the mydev skip list (upstream_skips.py: every entry has a
reason) and records each test's outcome as it happens. A test that crashes the
process or runs past the timeout is recorded as ``crash`` or ``timeout``, and
the file goes on in a new process without the tests already done.
"""
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import torch

from .upstream_skips import UPSTREAM_SKIPS

# Upstream test files that instantiate device-generic tests for every device
# type (no only_for restricting them to CPU/CUDA), in the order a run takes them.
DEFAULT_FILES = (
    "test_view_ops.py",
    "test_shape_ops.py",
    "test_sort_and_select.py",
    "test_indexing.py",
    "test_tensor_creation_ops.py",
    "test_unary_ufuncs.py",
    "test_binary_ufuncs.py",
    "test_reductions.py",
    "test_type_promotion.py",
    "test_torch.py",
)

STATUSES = (
    "pass", "expected_failure", "fail", "error", "unexpected_success", "fails_on_cpu_too", "skipped", "crash", "timeout",
)
PASSING = ("pass", "expected_failure")
NOT_COUNTED = ("skipped", "fails_on_cpu_too")  # left out of the pass rate's denominator
FAILING = ("fail", "error", "unexpected_success", "crash", "timeout")
CPU_CLASS_SUFFIX, DEVICE_CLASS_SUFFIX = "CPU::", "PRIVATEUSE1::"
# pytest's exit statuses that mean the file did not run as it should.
PYTEST_PROBLEMS = {
    2: "interrupted, usually by an error while collecting the tests (an import of a name this torch lacks?)",
    3: "internal error",
    4: "usage error",
    5: "no tests collected: the file instantiates no device-generic tests for privateuse1",
}
MAX_RESTARTS = 50
POLL_SECONDS = 0.5
LOG_TAIL_CHARACTERS = 2000


def find_test_files(paths):
    """The test files named by ``paths``: files as given, and DEFAULT_FILES found in each directory."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            found = [os.path.join(path, name) for name in DEFAULT_FILES if os.path.isfile(os.path.join(path, name))]
            if not found:
                raise ValueError(f"{path} holds none of the upstream device-generic test files ({', '.join(DEFAULT_FILES)})")
            files += found
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise ValueError(f"no such upstream test file or directory: {path}")
    return [os.path.abspath(file) for file in files]


class FileRun:
    """The pytest processes that together run one upstream test file: the mydev tests, then the CPU twins of
    those that failed."""

    def __init__(self, path, work_dir, skips, timeout):
        self.path = path
        self.name = os.path.basename(path)
        self.timeout = timeout
        self.stem = os.path.join(work_dir, self.name.replace(".py", ""))
        self.skips_path = self.stem + ".skips.json"
        self.log_path = self.stem + ".log"
        self.ini_path = self.stem + ".pytest.ini"
        for suffix in (".log", ".privateuse1.events.jsonl", ".privateuse1.done.txt", ".cpu.events.jsonl",
                       ".cpu.done.txt", ".cpu.select.txt"):
            if os.path.exists(self.stem + suffix):
                os.remove(self.stem + suffix)
        with open(self.skips_path, "w") as file:
            json.dump(skips, file)
        with open(self.ini_path, "w") as file:
            file.write("[pytest]\n")
        self.outcomes = {}
        self.processes = 0
        self.problem = None

    def run(self, on_outcome):
        device_pass = TestPass(self, "privateuse1", on_outcome)
        device_pass.run()
        self.problem = device_pass.problem
        failing = [test for test, outcome in self.outcomes.items() if outcome["status"] in FAILING]
        if failing:
            TestPass(self, "cpu", lambda outcome: None, select=[cpu_twin(test) for test in failing]).run()

    def record(self, event):
        nodeid = event["nodeid"]
        self.outcomes[nodeid] = {"test": nodeid, "status": event["status"], "message": event.get("message"),
                                 "seconds": event.get("seconds")}
        return self.outcomes[nodeid]

    def log_tail(self):
        with open(self.log_path, errors="replace") as log:
            return log.read()[-LOG_TAIL_CHARACTERS:].strip()

    def device_outcomes(self):
        """The mydev tests' outcomes, failures whose CPU twin failed too marked ``fails_on_cpu_too``."""
        device = {}
        for test, outcome in self.outcomes.items():
            if DEVICE_CLASS_SUFFIX not in test:
                continue
            cpu = self.outcomes.get(cpu_twin(test))
            if outcome["status"] in FAILING and cpu is not None and cpu["status"] in FAILING:
                outcome = {**outcome, "status": "fails_on_cpu_too",
                           "message": f"{outcome['message']}\n(on the CPU: {cpu['message']})"}
            device[test] = outcome
        return device

    def summary(self):
        device = self.device_outcomes()
        counts = Counter(outcome["status"] for outcome in device.values())
        return {
            "file": self.path,
            "tests": len(device),
            **{status: counts[status] for status in STATUSES},
            "pass_rate_non_skipped": _rate(counts, len(device)),
            "cpu_twins_run": sum(CPU_CLASS_SUFFIX in test for test in self.outcomes),
            "processes": self.processes,
            "problem": self.problem,
        }


def cpu_twin(device_test):
    """The CPU test instantiated from the same template as a mydev test: the class suffix and the device token,
    which is the last ``_mydev`` of the name (only dtype suffixes follow it)."""
    path, test_class, name = device_test.split("::")
    head, _, tail = name.rpartition("_" + torch._C._get_privateuse1_backend_name())
    return f"{path}::{test_class[: -len('PRIVATEUSE1')]}CPU::{head}_cpu{tail}"


def passing_and_counted(counts, tests):
    """The tests that pass, of those the pass rate counts (not skipped, not failing on the CPU too)."""
    passing = sum(counts[status] for status in PASSING)
    return passing, tests - sum(counts[status] for status in NOT_COUNTED)


def _rate(counts, tests):
    passing, counted = passing_and_counted(counts, tests)
    return round(100.0 * passing / counted, 2) if counted else None


class TestPass:
    """The tests of one device type in one file, in as many pytest processes as crashes and timeouts need."""

    def __init__(self, file_run, device_type, on_outcome, select=None):
        self.file = file_run
        self.device_type = device_type
        self.on_outcome = on_outcome
        self.events_path = f"{file_run.stem}.{device_type}.events.jsonl"
        self.done_path = f"{file_run.stem}.{device_type}.done.txt"
        self.select_path = None
        if select is not None:
            self.select_path = f"{file_run.stem}.{device_type}.select.txt"
            with open(self.select_path, "w") as file:
                file.write("\n".join(select) + "\n")
        self.problem = None

    def command(self):
        return [
            sys.executable, "-m", "pytest", self.file.name,
            "-c", self.file.ini_path, "--rootdir", os.path.dirname(self.file.path),
            "--noconftest", "-p", "no:cacheprovider", "-p", "torch_mydev.conformance.upstream_plugin",
            "-q", "--tb=short", "--disable-warnings",
        ]

    def environment(self):
        env = dict(os.environ)
        env.update({
            "PYTORCH_TESTING_DEVICE_ONLY_FOR": self.device_type,
            "MYDEV_UPSTREAM_EVENTS": self.events_path,
            "MYDEV_UPSTREAM_DONE": self.done_path,
            "MYDEV_UPSTREAM_SKIPS": self.file.skips_path,
            "PYTHONPATH": os.pathsep.join(filter(None, [os.path.dirname(self.file.path), env.get("PYTHONPATH")])),
        })
        if self.select_path is not None:
            env["MYDEV_UPSTREAM_SELECT"] = self.select_path
        return env

    def run(self):
        for _ in range(MAX_RESTARTS + 1):
            self.file.processes += 1
            if self._run_process():
                return
        self.problem = f"stopped after {MAX_RESTARTS} restarts"

    def _run_process(self):
        """Runs pytest until it exits; False when it must be restarted (a crash or a timeout)."""
        with open(self.file.log_path, "ab") as log:
            process = subprocess.Popen(self.command(), cwd=os.path.dirname(self.file.path), env=self.environment(),
                                       stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return self._follow(process)
        except KeyboardInterrupt:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise

    def _follow(self, process):
        reader = EventReader(self.events_path)
        running, started, exit_status = None, time.monotonic(), None
        while True:
            code = process.poll()
            for event in reader.new_events():
                if event["event"] == "start":
                    running, started = event["nodeid"], time.monotonic()
                elif event["event"] == "outcome":
                    self._record(event)
                    running = None
                elif event["event"] == "finished":
                    exit_status = event["exitstatus"]
            if code is not None:
                break
            if running is not None and time.monotonic() - started > self.file.timeout:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                self._record({"nodeid": running, "status": "timeout",
                              "message": f"no result after {self.file.timeout:.0f} s; the process was killed"})
                return False
            time.sleep(POLL_SECONDS)
        if running is not None:
            how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            self._record({"nodeid": running, "status": "crash",
                          "message": f"the test process died ({how}); log: {self.file.log_path}"})
            return False
        if exit_status is None:
            self.problem = f"pytest ended with exit status {code} before running tests: {self.file.log_tail()}"
        elif exit_status in PYTEST_PROBLEMS:
            self.problem = f"pytest: {PYTEST_PROBLEMS[exit_status]} (exit status {exit_status}): {self.file.log_tail()}"
        return True

    def _record(self, event):
        outcome = self.file.record(event)
        with open(self.done_path, "a") as done:
            done.write(event["nodeid"] + "\n")
        self.on_outcome(outcome)


class EventReader:
    """Reads the JSON lines the plugin appends, as they arrive."""

    def __init__(self, path):
        self.path = path
        self.offset = os.path.getsize(path) if os.path.exists(path) else 0
        self.partial = ""

    def new_events(self):
        if not os.path.exists(self.path):
            return []
        with open(self.path) as file:
            file.seek(self.offset)
            chunk = file.read()
            self.offset = file.tell()
        lines = (self.partial + chunk).split("\n")
        self.partial = lines.pop()
        return [json.loads(line) for line in lines if line]


def run_upstream_tests(paths, output_dir, timeout=600.0, skips=None, progress=None):
    """Runs the upstream test files; returns the ``upstream`` section of results.json.

    ``progress``, if given, has ``begin(label)`` and ``finish(status)`` (progress.UpstreamProgress).
    """
    files = find_test_files(paths)
    skips = UPSTREAM_SKIPS if skips is None else skips
    work_dir = os.path.join(output_dir, "upstream-logs")
    os.makedirs(work_dir, exist_ok=True)
    summaries, not_passing = [], []
    interrupted = False
    for path in files:
        run = FileRun(path, work_dir, skips, timeout)
        if progress is not None:
            progress.begin(run.name)
        try:
            run.run(lambda outcome: progress.finish(outcome["status"]) if progress is not None else None)
        except KeyboardInterrupt:
            run.problem, interrupted = "interrupted: the results of this file are partial", True
        summaries.append(run.summary())
        not_passing += [outcome for outcome in run.device_outcomes().values() if outcome["status"] not in PASSING]
        if interrupted:
            break
    return {"files": summaries, "summary": _total(summaries), "not_passing": not_passing, "skip_list": skips,
            "interrupted": interrupted}


def _total(summaries):
    counts = Counter({status: sum(summary[status] for summary in summaries) for status in STATUSES})
    tests = sum(summary["tests"] for summary in summaries)
    return {
        "files": len(summaries),
        "tests": tests,
        **{status: counts[status] for status in STATUSES},
        "pass_rate_non_skipped": _rate(counts, tests),
        "cpu_twins_run": sum(summary["cpu_twins_run"] for summary in summaries),
    }
