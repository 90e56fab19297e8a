"""A pytest plugin that the upstream-test runner loads into each pytest process it starts.

It reads its instructions from environment variables the runner sets:
``MYDEV_UPSTREAM_SKIPS`` (a JSON file: ``{pattern: reason}``; tests whose node id
matches a pattern are skipped with that reason), ``MYDEV_UPSTREAM_SELECT``
(optional: a file with one node id per line, the only tests to run),
``MYDEV_UPSTREAM_DONE`` (a
file with one node id per line: tests an earlier process of the same run
finished or crashed on, deselected here), and ``MYDEV_UPSTREAM_EVENTS`` (a
file this plugin appends to: a JSON line when a test starts and one with its
outcome, flushed at once, so that a process that dies still leaves the name
of the test it died in).
"""
import fnmatch
import json
import os
import time

import pytest

MESSAGE_LIMIT = 500
SKIP_PREFIX = "mydev skip list: "


def _load_skips():
    path = os.environ.get("MYDEV_UPSTREAM_SKIPS")
    if not path:
        return {}
    with open(path) as file:
        return json.load(file)


def _load_node_ids(variable):
    path = os.environ.get(variable)
    if not path or not os.path.exists(path):
        return None
    with open(path) as file:
        return {line.strip() for line in file if line.strip()}


class UpstreamRecorder:
    def __init__(self):
        self.skips = _load_skips()
        self.done = _load_node_ids("MYDEV_UPSTREAM_DONE") or set()
        self.selected = _load_node_ids("MYDEV_UPSTREAM_SELECT")
        self.events = open(os.environ["MYDEV_UPSTREAM_EVENTS"], "a")
        self.failed_phase = {}

    def skip_reason(self, nodeid):
        for pattern, reason in self.skips.items():
            if fnmatch.fnmatchcase(nodeid, pattern):
                return reason
        return None

    def write(self, record):
        self.events.write(json.dumps(record) + "\n")
        self.events.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        kept, finished = [], []
        for item in items:
            left_out = item.nodeid in self.done or (self.selected is not None and item.nodeid not in self.selected)
            (finished if left_out else kept).append(item)
            reason = self.skip_reason(item.nodeid)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=SKIP_PREFIX + reason))
        if finished:
            config.hook.pytest_deselected(items=finished)
            items[:] = kept
        self.write({"event": "collected", "count": len(kept), "time": time.time()})

    def pytest_runtest_logstart(self, nodeid, location):
        self.write({"event": "start", "nodeid": nodeid, "time": time.time()})

    def pytest_runtest_logreport(self, report):
        status = _status_of(report)
        if status is None:
            return
        if report.when != "call" and status == "pass":
            return
        if report.nodeid in self.failed_phase:
            return  # a failed setup is the outcome; its teardown adds nothing
        if status in ("fail", "error"):
            self.failed_phase[report.nodeid] = report.when
        self.write({
            "event": "outcome",
            "nodeid": report.nodeid,
            "status": status,
            "message": _message_of(report, status),
            "seconds": round(report.duration, 3),
        })

    def pytest_sessionfinish(self, session, exitstatus):
        self.write({"event": "finished", "exitstatus": int(exitstatus)})
        self.events.close()


def _status_of(report):
    if report.skipped:
        return "expected_failure" if hasattr(report, "wasxfail") else "skipped"
    if report.failed:
        if report.when == "call":
            return "unexpected_success" if hasattr(report, "wasxfail") else "fail"
        return "error"
    if report.when == "call":
        return "pass"
    return None


def _message_of(report, status):
    if status == "skipped" and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2])
        text = text[len("Skipped: "):] if text.startswith("Skipped: ") else text
    elif status in ("pass", "expected_failure"):
        return None
    else:
        lines = [line for line in report.longreprtext.splitlines() if line.startswith("E ")]
        text = "\n".join(line[1:].strip() for line in lines[:6]) if lines else report.longreprtext.strip()[-400:]
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


def pytest_configure(config):
    if os.environ.get("MYDEV_UPSTREAM_EVENTS"):
        config.pluginmanager.register(UpstreamRecorder(), "mydev-upstream-recorder")
