"""Op families for the report: which part of PyTorch an OpInfo or ModuleInfo exercises.

An op's namespace says it first (``linalg.``, ``fft.``, ``nn.functional.``,
...); ops in the main ``torch`` namespace fall back to ``factory`` for ops that
create tensors, then to their OpInfo class (``UnaryUfuncInfo`` is a unary
elementwise op, ``ReductionOpInfo`` a reduction, ...); the rest is ``other``.
Modules are grouped by the ``torch.nn.modules`` file that defines them
(``module.conv``, ``module.loss``, ...).
"""
from torch.testing._internal.opinfo.core import (
    BinaryUfuncInfo,
    ForeachFuncInfo,
    ReductionOpInfo,
    ShapeFuncInfo,
    SpectralFuncInfo,
    UnaryUfuncInfo,
)

_NAMESPACES = (
    ("linalg.", "linalg"),
    ("fft.", "fft"),
    ("special.", "special"),
    ("nn.functional.", "nn.functional"),
    ("masked.", "masked"),
    ("_masked.", "masked"),
    ("sparse.", "sparse"),
    ("signal.", "signal"),
    ("_foreach", "foreach"),
    ("jiterator_", "jiterator"),
    ("torch.ops.aten.", "aten"),
)

_CLASSES = (
    (SpectralFuncInfo, "fft"),
    (ForeachFuncInfo, "foreach"),
    (UnaryUfuncInfo, "unary"),
    (BinaryUfuncInfo, "binary"),
    (ReductionOpInfo, "reduction"),
    (ShapeFuncInfo, "shape"),
)


def op_family(op):
    for prefix, family in _NAMESPACES:
        if op.name.startswith(prefix):
            return family
    if "sparse" in op.name:
        return "sparse"
    if op.is_factory_function:
        return "factory"
    for cls, family in _CLASSES:
        if isinstance(op, cls):
            return family
    return "other"


def module_family(module_info):
    return "module." + module_info.module_cls.__module__.rsplit(".", 1)[-1]
