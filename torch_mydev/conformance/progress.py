"""A plain-text progress bar on stderr: pairs done of total, passes so far, and the pair running now.

On a terminal one line is redrawn in place with ``\\r``; in a log file (CI) a
line is printed at most every ``interval`` seconds, and at the end.
"""
import shutil
import sys
import time


class Progress:
    def __init__(self, total, stream=None, interval=15.0):
        self.total = total
        self.stream = stream or sys.stderr
        self.interval = interval
        self.done = 0
        self.passed = 0
        self.current = ""
        self.started = time.monotonic()
        self._interactive = self.stream.isatty()
        self._last_line = 0.0

    def begin(self, label):
        self.current = label
        self._show()

    def finish(self, status):
        self.done += 1
        self.passed += status == "pass"
        self._show(final=self.done == self.total)

    def close(self):
        if self._interactive:
            self.stream.write("\n")
            self.stream.flush()

    def _line(self):
        percent = 100.0 * self.done / self.total if self.total else 100.0
        elapsed = time.monotonic() - self.started
        return f"[{self.done}/{self.total}] {percent:5.1f}% pass {self.passed}  {elapsed:6.0f}s  {self.current}"

    def _show(self, final=False):
        if self._interactive:
            width = shutil.get_terminal_size().columns - 1
            bar = self._bar(width=min(30, max(10, width // 4)))
            self.stream.write("\r" + (bar + " " + self._line())[:width].ljust(width))
            self.stream.flush()
        elif final or time.monotonic() - self._last_line >= self.interval:
            self._last_line = time.monotonic()
            self.stream.write("conformance " + self._line() + "\n")
            self.stream.flush()

    def _bar(self, width):
        filled = int(width * self.done / self.total) if self.total else width
        return "|" + "#" * filled + "-" * (width - filled) + "|"


class UpstreamProgress:
    """Progress of the upstream test files, whose test counts are known only as they run: one line per
    ``interval`` seconds and one when a file starts."""

    def __init__(self, stream=None, interval=15.0):
        self.stream = stream or sys.stderr
        self.interval = interval
        self.file = ""
        self.counts = {}
        self.started = time.monotonic()
        self._last_line = 0.0

    def begin(self, file):
        self.file = file
        self.counts = {}
        self._show(force=True)

    def finish(self, status):
        self.counts[status] = self.counts.get(status, 0) + 1
        self._show()

    def _show(self, force=False):
        if force or time.monotonic() - self._last_line >= self.interval:
            self._last_line = time.monotonic()
            done = sum(self.counts.values())
            counts = ", ".join(f"{count} {status}" for status, count in sorted(self.counts.items()))
            elapsed = time.monotonic() - self.started
            self.stream.write(f"upstream {self.file}: {done} tests ({counts or 'starting'})  {elapsed:6.0f}s\n")
            self.stream.flush()
