"""results.json: the machine-readable report of a conformance run."""
import json

from .compare import json_number
from .summary import summarize, summarize_error_inputs

FORMAT = "torch_mydev.conformance.results"
VERSION = 1


def build_report(*, environment, options, results, goldens, complete, seconds, upstream=None, error_inputs=None):
    """``goldens`` is None, or ``{"file": ..., "metadata": ..., "results": [...]}``; ``upstream`` is None or
    what upstream_tests.run_upstream_tests returned; ``error_inputs`` is None or the error-input results of the ops."""
    report = {
        "format": FORMAT,
        "version": VERSION,
        "complete": complete,
        "seconds": round(seconds, 1),
        "environment": environment,
        "options": options,
        "summary": summarize(results),
        "results": results,
    }
    if error_inputs is not None:
        report["error_inputs"] = {"summary": summarize_error_inputs(error_inputs), "results": error_inputs}
    if goldens is not None:
        report["goldens"] = {**goldens, "summary": summarize(goldens["results"])}
    if upstream is not None:
        report["upstream"] = upstream
    return report


def write_json(report, path):
    with open(path, "w") as file:
        json.dump(_finite(report), file, indent=1, allow_nan=False)
        file.write("\n")


def _finite(value):
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    if isinstance(value, float):
        return json_number(value)
    return value
