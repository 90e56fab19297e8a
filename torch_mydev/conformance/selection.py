"""Which (op, dtype) pairs a run covers, from the command line's name patterns and dtype names.

Depends on torch only, so the CUDA golden recorder (goldens.py) shares it.
"""
import fnmatch

import torch

ALL = "all"


def parse_patterns(text):
    """Comma-separated names or shell-style globs (``linalg.*``); ``all`` matches everything."""
    return [part.strip() for part in text.split(",") if part.strip()]


def matches(names, patterns):
    """Whether any of an entry's names (an OpInfo's ``name`` and ``full_name``) matches a pattern."""
    return any(pattern == ALL or fnmatch.fnmatchcase(name, pattern) for name in names for pattern in patterns)


def unmatched_patterns(all_names, patterns):
    """The patterns that select nothing: almost always a typo the user wants to hear about."""
    return [p for p in patterns if p != ALL and not any(matches(names, [p]) for names in all_names)]


def dtype_name(dtype):
    return str(dtype).removeprefix("torch.")


def parse_dtypes(text):
    """``float32,int64`` as torch dtypes, or None for ``all`` (every dtype each op declares)."""
    names = parse_patterns(text)
    if ALL in names:
        return None
    dtypes = []
    for name in names:
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"unknown dtype {name!r}")
        dtypes.append(dtype)
    return dtypes


def op_names(op):
    return (op.name, op.full_name)


def op_pairs(ops, patterns, dtypes, device_types=("cpu",)):
    """(op, dtype) for every selected op and every requested dtype it declares on all of ``device_types``.

    ``dtypes=None`` takes every declared dtype. OpInfo's ``dtypes`` are the CPU
    dtypes, which every device without its own ``dtypesIf`` entry inherits.
    """
    pairs = []
    for op in ops:
        if not matches(op_names(op), patterns):
            continue
        declared = set.intersection(*(set(op.supported_dtypes(device)) for device in device_types))
        wanted = declared if dtypes is None else [d for d in dtypes if d in declared]
        pairs.extend((op, dtype) for dtype in sorted(wanted, key=dtype_name))
    return pairs
