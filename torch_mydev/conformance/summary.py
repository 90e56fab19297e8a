"""Totals and pass rates of a list of pair results: overall, per dtype, per op family and per kind; and the totals
of the ops' error inputs."""
from collections import defaultdict

from .error_runner import CPU_ONLY_OUTCOMES, DTYPE_OUTCOMES, FAILING, OUTCOMES, cpu_only, dtype_error
from .outcome import NOT_APPLICABLE, PASS, SKIPPED, STATUSES


def summarize(results):
    return {
        **tally(results),
        "by_dtype": _grouped(results, "dtype"),
        "by_family": _grouped(results, "family"),
        "by_kind": _grouped(results, "kind"),
    }


def tally(results):
    counts = {status: 0 for status in STATUSES}
    for result in results:
        counts[result["status"]] += 1
    # Not-applicable pairs are listed but have no CPU reference: no rate counts them.
    pairs = len(results) - counts[NOT_APPLICABLE]
    return {
        "pairs": pairs,
        **counts,
        "samples_run": sum(result["samples"]["run"] for result in results),
        "pass_rate": _percent(counts[PASS], pairs),
        "pass_rate_non_skipped": _percent(counts[PASS], pairs - counts[SKIPPED]),
    }


def _grouped(results, key):
    groups = defaultdict(list)
    for result in results:
        groups[result[key]].append(result)
    return {name: tally(groups[name]) for name in sorted(groups)}


def _percent(part, whole):
    return round(100.0 * part / whole, 2) if whole else None


def summarize_error_inputs(results):
    """Ops by status, and their error inputs by outcome (error_runner.py): ``inputs`` counts those the device must
    reject at the call, ``cpu_only`` those only the CPU's list has (and the CPU rejects), run on the device too,
    ``dtype_inputs`` the samples in dtypes the CPU refuses."""
    names = (*OUTCOMES, *(cpu_only(outcome) for outcome in CPU_ONLY_OUTCOMES),
             *(dtype_error(outcome) for outcome in DTYPE_OUTCOMES))
    counts = {name: sum(result["samples"].get(name, 0) for result in results) for name in names}
    inputs = counts["at_call"] + sum(counts[outcome] for outcome in FAILING)
    dtype_inputs = sum(counts[dtype_error(outcome)] for outcome in DTYPE_OUTCOMES)
    return {
        **tally(results),
        "ops": len(results),
        "inputs": inputs,
        **counts,
        "cpu_only": sum(counts[cpu_only(outcome)] for outcome in CPU_ONLY_OUTCOMES),
        "dtype_inputs": dtype_inputs,
        "at_call_rate": _percent(counts["at_call"], inputs),
        "dtype_at_call_rate": _percent(counts[dtype_error("at_call")], dtype_inputs),
    }
