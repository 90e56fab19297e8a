"""Totals and pass rates of a list of pair results: overall, per dtype, per op family and per kind."""
from collections import defaultdict

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
