"""What PyTorch's own test suite says about one test of an OpInfo or ModuleInfo for one dtype.

Upstream attaches skips, expected failures and tolerance overrides to named
tests, e.g. ``DecorateInfo(unittest.skip("output is non-deterministic"),
"TestCommon", "test_compare_cpu")``. They are ordinary unittest decorators
whose effect may depend on the device type and on the test instance, so the
faithful way to read them is the test framework's own: decorate a probe test
function with them and call it with a stand-in for the test instance.

Depends on torch only, so the CUDA golden recorder (goldens.py) shares it.
"""
import re
import unittest
from dataclasses import dataclass

# Skips that say the test cannot run here at all: it is written for another
# device type (onlyCUDA, onlyCPU: "Only runs on cuda"), needs a dependency this
# machine lacks ("Triton DSL not available"), or is left out of default runs
# for its running time (slowTest). Every other skip of a CPU comparison says
# the results need not match on a device with kernels of its own.
CANNOT_RUN_HERE = re.compile(r"only runs on|not available|is slow", re.IGNORECASE)
# onlyCPU, onlyCUDA, onlyOn: the skip names the one device type the test is for.
ONLY_RUNS_ON = re.compile(r"only runs on (\w+)", re.IGNORECASE)


@dataclass(frozen=True)
class UpstreamVerdict:
    skip_reason: str | None
    expects_failure: bool
    atol: float
    rtol: float

    @property
    def runs(self):
        # A skip that only excuses different results (undefined overflow,
        # unordered outputs, random streams) guards against devices with kernels
        # and generators of their own; mydev runs the CPU's, so it can still pass.
        return self.skip_reason is None or not CANNOT_RUN_HERE.search(self.skip_reason)

    @property
    def confined_to(self):
        """The one device type upstream runs this test on (onlyCPU, onlyCUDA), or None."""
        found = ONLY_RUNS_ON.search(self.skip_reason or "")
        return found.group(1).lower() if found else None

    @property
    def runs_with_cpu_kernels(self):
        # A device that runs the CPU's kernels has the kernel of an op upstream
        # tests on the CPU only (onlyCPU: no other device type implements it).
        return self.runs or self.confined_to == "cpu"

    @property
    def mismatch_excuse(self):
        """Why upstream expects results to differ here, or None when they must match."""
        if self.skip_reason is not None and not CANNOT_RUN_HERE.search(self.skip_reason):
            return f"upstream skips it: {self.skip_reason}"
        if self.expects_failure:
            return "upstream marks it as an expected failure"
        return None

    def to_json(self):
        return {
            "skip": self.skip_reason,
            "expected_failure": self.expects_failure,
            "atol_override": self.atol,
            "rtol_override": self.rtol,
        }


class _TestInstanceStandIn:
    """The attributes upstream decorators read from a device-type test instance."""

    def __init__(self, device_type, dtype):
        self.device_type = device_type
        self.dtype = dtype
        self.precision = 0.0
        self.rel_tol = 0.0

    def fail(self, msg=None):
        # common_device_type.expectedFailure calls this when the decorated test passes.
        raise AssertionError(msg)

    def skipTest(self, reason):
        raise unittest.SkipTest(reason)


def upstream_verdict(info, test_class, test_name, device_type, dtype, param_kwargs=None):
    """Reads the decorators ``info`` (an OpInfo or ModuleInfo) attaches to ``test_class.test_name``."""

    def probe(*args, **kwargs):
        return None

    test = probe
    for decorator in info.get_decorators(test_class, test_name, device_type, dtype, param_kwargs or {}):
        test = decorator(test)

    skip_reason = getattr(test, "__unittest_skip_why__", None) if getattr(test, "__unittest_skip__", False) else None
    expects_failure = bool(getattr(test, "__unittest_expecting_failure__", False))
    if skip_reason is None:
        try:
            test(_TestInstanceStandIn(device_type, dtype), device_type, dtype=dtype)
        except unittest.SkipTest as skip:
            skip_reason = str(skip) or "skipped"
        except AssertionError:
            expects_failure = True

    # As in DeviceTypeTestBase._apply_precision_override_for_test: a tolerance
    # override replaces the precision override for its dtype.
    atol = getattr(test, "precision_overrides", {}).get(dtype, 0.0)
    rtol = 0.0
    tolerance = getattr(test, "tolerance_overrides", {}).get(dtype)
    if tolerance is not None:
        atol, rtol = tolerance.atol, tolerance.rtol
    return UpstreamVerdict(skip_reason, expects_failure, float(atol), float(rtol))
