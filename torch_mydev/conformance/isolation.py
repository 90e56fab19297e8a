"""Runs conformance requests in worker subprocesses, so that a crash or a hang costs one pair, not the run.

A pair whose worker dies (a segfault in a kernel, an abort, os._exit) is
recorded as ``crash`` with the signal or exit code and the end of the
worker's log; a pair that gets no answer within the timeout is recorded as
``timeout`` and its worker is killed. Either way the next pair starts a fresh
worker. Each worker's stderr goes to its own log file.
"""
import json
import os
import select
import signal
import subprocess
import sys
import time

from .outcome import CRASH, TIMEOUT, pair_without_samples

STARTUP_TIMEOUT = 600.0
LOG_TAIL_LINES = 8


class WorkerDied(Exception):
    pass


class WorkerTimedOut(Exception):
    pass


class WorkerProcess:
    def __init__(self, log_path):
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "torch_mydev.conformance.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        self._pending = b""
        try:
            self._read_message(STARTUP_TIMEOUT)
        except (WorkerDied, WorkerTimedOut) as failure:
            self.kill()
            raise RuntimeError(f"a conformance worker could not start: {failure}") from None

    def request(self, message, timeout):
        try:
            self._process.stdin.write((json.dumps(message) + "\n").encode())
            self._process.stdin.flush()
        except BrokenPipeError:
            raise WorkerDied(self._death_notice()) from None
        return self._read_message(timeout)

    def _read_message(self, timeout):
        deadline = time.monotonic() + timeout
        stdout = self._process.stdout.fileno()
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimedOut(f"no answer within {timeout:g} s")
            readable, _, _ = select.select([stdout], [], [], remaining)
            if readable:
                chunk = os.read(stdout, 65536)
                if not chunk:
                    raise WorkerDied(self._death_notice())
                self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def _death_notice(self):
        code = self._process.wait()
        if code < 0:
            cause = f"killed by {_signal_name(-code)} (exit code {code})"
        else:
            cause = f"exited with code {code}"
        return f"worker {cause}; log {self.log_path}: {self.log_tail()}"

    def log_tail(self):
        with open(self.log_path, errors="replace") as log:
            lines = [line.strip() for line in log.read().splitlines() if line.strip()]
        return " | ".join(lines[-LOG_TAIL_LINES:]) or "(empty)"

    def kill(self):
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()

    def close(self):
        self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class IsolatedRunner:
    """Sends each request to a live worker, replacing the worker after a crash or a timeout."""

    def __init__(self, log_dir, timeout):
        self.log_dir = log_dir
        self.timeout = timeout
        self.workers_started = 0
        self._worker = None
        os.makedirs(log_dir, exist_ok=True)

    def run(self, request):
        if self._worker is None:
            self.workers_started += 1
            self._worker = WorkerProcess(os.path.join(self.log_dir, f"worker-{self.workers_started:03d}.log"))
        started = time.monotonic()
        try:
            return self._worker.request(request, self.timeout)
        except WorkerDied as died:
            self._worker = None
            result = pair_without_samples(CRASH, str(died))
        except WorkerTimedOut as timed_out:
            self._worker.kill()
            log_path, self._worker = self._worker.log_path, None
            result = pair_without_samples(TIMEOUT, f"{timed_out}; worker killed; log {log_path}")
        return {**result, "seconds": round(time.monotonic() - started, 3)}

    def close(self):
        if self._worker is not None:
            self._worker.close()
            self._worker = None
