"""Comparing a device result with its reference: structure, types, device, dtype, shape, then values.

Values are compared like ``torch.testing.assert_close`` (NaNs in the same
places are equal) with each dtype's default tolerances, raised to at least the
tolerance a caller passes (upstream overrides, or the cross-device floor used
for CUDA goldens).
"""
import math
from dataclasses import dataclass

import torch
from torch.testing._comparison import default_tolerances
from torch.utils import _pytree as pytree

MESSAGE_LIMIT = 600


@dataclass(frozen=True)
class Tolerance:
    """The smallest atol/rtol to accept, on top of each compared dtype's default ones."""

    atol: float = 0.0
    rtol: float = 0.0

    def for_dtype(self, dtype):
        rtol, atol = default_tolerances(dtype)
        return max(atol, self.atol), max(rtol, self.rtol)


@dataclass(frozen=True)
class Mismatch:
    where: str
    message: str
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    atol: float | None = None
    rtol: float | None = None

    def describe(self):
        if self.max_abs_error is None:
            return f"{self.where}: {self.message}"
        return (
            f"{self.where}: max abs error {self.max_abs_error:.3g} (atol {self.atol:.3g}), "
            f"max rel error {self.max_rel_error:.3g} (rtol {self.rtol:.3g})"
        )

    def to_json(self):
        return {
            "where": self.where,
            "message": self.message,
            "max_abs_error": json_number(self.max_abs_error),
            "max_rel_error": json_number(self.max_rel_error),
            "atol": self.atol,
            "rtol": self.rtol,
        }


def json_number(value):
    """JSON has no infinities or NaNs; spell them as strings."""
    if value is None or math.isfinite(value):
        return value
    return str(value)


def compare(actual, expected, tolerance, device_type, where, *, values=True):
    """The first difference between ``actual`` (the device's result) and ``expected``, or None. With
    ``values=False``, only what does not depend on the values: structure, types, devices, dtypes, shapes, layouts
    (for results drawn from a random generator, whose numbers devices do not share)."""
    actual_leaves, actual_spec = pytree.tree_flatten_with_path(actual)
    expected_leaves, expected_spec = pytree.tree_flatten_with_path(expected)
    if actual_spec != expected_spec:
        return Mismatch(where, _clip(f"result structure differs: expected {expected_spec}, got {actual_spec}"))
    for (path, actual_leaf), (_, expected_leaf) in zip(actual_leaves, expected_leaves):
        leaf_where = where + pytree.keystr(path)
        mismatch = compare_leaf(actual_leaf, expected_leaf, tolerance, device_type, leaf_where, values=values)
        if mismatch is not None:
            return mismatch
    return None


def compare_leaf(actual, expected, tolerance, device_type, where, *, values=True):
    if isinstance(expected, torch.Tensor):
        return _compare_tensor(actual, expected, tolerance, device_type, where, values)
    if type(actual) is not type(expected):
        return Mismatch(where, f"expected a {type(expected).__name__}, got a {type(actual).__name__}")
    if not values:
        return None
    if isinstance(expected, (float, complex)):
        dtype = torch.complex128 if isinstance(expected, complex) else torch.float64
        return _compare_values(torch.tensor(actual, dtype=dtype), torch.tensor(expected, dtype=dtype), tolerance, where)
    if actual != expected:
        return Mismatch(where, _clip(f"expected {expected!r}, got {actual!r}"))
    return None


def _compare_tensor(actual, expected, tolerance, device_type, where, values):
    if not isinstance(actual, torch.Tensor):
        return Mismatch(where, f"expected a tensor, got a {type(actual).__name__}")
    if device_type is not None and actual.device.type != device_type:
        return Mismatch(where, f"result is on {actual.device}, expected a {device_type} tensor")
    if actual.dtype != expected.dtype:
        return Mismatch(where, f"dtype differs: expected {expected.dtype}, got {actual.dtype}")
    if actual.shape != expected.shape:
        return Mismatch(where, f"shape differs: expected {tuple(expected.shape)}, got {tuple(actual.shape)}")
    if actual.layout != expected.layout:
        return Mismatch(where, f"layout differs: expected {expected.layout}, got {actual.layout}")
    if not values:
        return None
    return _compare_values(actual.detach().cpu(), expected.detach(), tolerance, where)


def _compare_values(actual, expected, tolerance, where):
    atol, rtol = tolerance.for_dtype(expected.dtype)
    try:
        torch.testing.assert_close(
            actual, expected, atol=atol, rtol=rtol, equal_nan=True, check_device=False, check_stride=False
        )
    except AssertionError as difference:
        max_abs, max_rel = _error_magnitudes(actual, expected)
        return Mismatch(where, _clip(str(difference)), max_abs, max_rel, atol, rtol)
    return None


def _error_magnitudes(actual, expected):
    """Largest absolute and relative differences; a NaN against a number counts as infinite."""
    if expected.layout != torch.strided:
        actual, expected = actual.to_dense(), expected.to_dense()
    wide = torch.complex128 if expected.is_complex() else torch.float64
    actual = actual.resolve_conj().resolve_neg().to(wide)
    expected = expected.resolve_conj().resolve_neg().to(wide)
    if expected.numel() == 0:
        return 0.0, 0.0
    same = (actual == expected) | (actual.isnan() & expected.isnan())
    difference = (actual - expected).abs().nan_to_num(nan=math.inf, posinf=math.inf).masked_fill(same, 0.0)
    relative = (difference / expected.abs()).nan_to_num(nan=math.inf, posinf=math.inf).masked_fill(same, 0.0)
    return difference.max().item(), relative.max().item()


def _clip(text):
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."
