"""Statuses of one sample and of one (op or module, dtype) pair, and how sample outcomes add up."""
from collections import Counter
from dataclasses import dataclass

PASS = "pass"
MISMATCH = "mismatch"
ERROR = "error"
NOT_IMPLEMENTED = "not_implemented"
SKIPPED = "skipped"
CRASH = "crash"
TIMEOUT = "timeout"
# The op exists only on another device type (CUDA's jiterator, Triton
# overrides): there is no CPU reference to compare with, so no pair to judge.
NOT_APPLICABLE = "not_applicable"
STATUSES = (PASS, MISMATCH, ERROR, NOT_IMPLEMENTED, SKIPPED, CRASH, TIMEOUT, NOT_APPLICABLE)

# A sample on which the reference and the device raise the same exception type
# behaves the same on both: it counts as passing.
BOTH_RAISE = "both_raise"
# A sample whose results upstream excuses from matching (torch.empty's
# uninitialised memory, a non-deterministic kernel) that matched when both
# sides ran again under torch.use_deterministic_algorithms(True): it counts as
# passing, and the pair says so.
PASS_DETERMINISTIC = "pass_deterministic"
# A sample that drew from the device's random generator: its values come from
# the device's own random streams (on CUDA as on mydev, not the CPU's), so it is
# judged by what must still agree: the results' structure, dtypes, shapes and
# device against the reference, and the values against a second run on the
# device from the same seed. It counts as passing, and the pair says so.
PASS_RANDOM = "pass_random"

# When samples of one pair disagree, the pair reports the most serious status.
_SEVERITY = (ERROR, NOT_IMPLEMENTED, MISMATCH, PASS, SKIPPED)
_PASSING_SAMPLES = (PASS, BOTH_RAISE, PASS_DETERMINISTIC, PASS_RANDOM)
MESSAGE_LIMIT = 500


def exception_text(exception):
    text = f"{type(exception).__name__}: {exception}".strip()
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


def is_not_implemented(exception):
    return isinstance(exception, NotImplementedError) or "not implemented for" in str(exception)


@dataclass(frozen=True)
class SampleOutcome:
    status: str
    stage: str | None = None
    message: str | None = None
    mismatch: object = None

    @classmethod
    def from_device_exception(cls, exception, stage):
        status = NOT_IMPLEMENTED if is_not_implemented(exception) else ERROR
        return cls(status, stage, exception_text(exception))

    def describe(self):
        detail = self.mismatch.describe() if self.mismatch is not None else self.message
        return f"{self.stage}: {detail}" if self.stage else detail


class PairTally:
    """Collects the sample outcomes of one pair and condenses them into the pair's result."""

    def __init__(self):
        self.counts = Counter()
        self.first = {}

    def add(self, label, outcome):
        self.counts[outcome.status] += 1
        self.first.setdefault(outcome.status, (label, outcome))

    def result(self, mismatch_excuse=None, no_samples_reason="no sample inputs for this dtype"):
        samples = {"run": sum(n for status, n in self.counts.items() if status != SKIPPED), **self.counts}
        passing = sum(self.counts[s] for s in _PASSING_SAMPLES)
        statuses = {PASS if status in _PASSING_SAMPLES else status for status in self.counts}
        status = next((s for s in _SEVERITY if s in statuses), SKIPPED)
        if status == PASS:
            reasons = []
            if PASS_DETERMINISTIC in self.first:
                rerun, first = self.counts[PASS_DETERMINISTIC], self.first[PASS_DETERMINISTIC][1]
                reasons.append(f"{rerun} of {samples['run']} samples matched in deterministic mode only: {first.message}")
            if PASS_RANDOM in self.first:
                reasons.append(
                    f"{self.counts[PASS_RANDOM]} of {samples['run']} samples drew from the device's random generator: "
                    "compared by structure, dtype and shape, and reproduced from the same seed, not by value"
                )
            return {"status": PASS, "reason": "; ".join(reasons) or None, "samples": samples, "failure": None}
        if status == SKIPPED:
            reason = self.first[SKIPPED][1].describe() if SKIPPED in self.first else no_samples_reason
            return {"status": SKIPPED, "reason": reason, "samples": samples, "failure": None}
        label, outcome = self.first[status]
        reason = f"{outcome.describe()} [sample {label}; {passing} of {samples['run']} samples passed]"
        if status == MISMATCH and mismatch_excuse is not None:
            status, reason = SKIPPED, f"{mismatch_excuse}; measured here: {reason}"
        failure = {
            "sample": label,
            "stage": outcome.stage,
            "message": outcome.message,
            "mismatch": outcome.mismatch.to_json() if outcome.mismatch is not None else None,
        }
        return {"status": status, "reason": reason, "samples": samples, "failure": failure}


def pair_without_samples(status, reason):
    """The result of a pair that ran no sample to completion: skipped, crashed, timed out or failed in the kit."""
    return {"status": status, "reason": reason, "samples": {"run": 0}, "failure": None}


def skipped_pair(reason):
    return pair_without_samples(SKIPPED, reason)


def not_applicable_pair(reason):
    return pair_without_samples(NOT_APPLICABLE, reason)
