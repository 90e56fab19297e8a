"""The work of one run: every (op or module, dtype) pair the options select, every op's error inputs, and every
goldens entry."""
from .catalog import modules_by_name, ops_by_name
from .families import module_family, op_family
from .selection import dtype_name, matches, op_names, op_pairs, unmatched_patterns


class SelectionError(ValueError):
    pass


def plan_ops(patterns, dtypes):
    ops = list(ops_by_name().values())
    _check_patterns("--ops", "OpInfo", [op_names(op) for op in ops], patterns)
    return [_item("op", op.full_name, dtype, op_family(op)) for op, dtype in op_pairs(ops, patterns, dtypes)]


def plan_error_inputs(patterns):
    """One item per selected OpInfo, for its error inputs and its dtype errors: dtype-free (each builds its own
    tensors)."""
    ops = [op for op in ops_by_name().values() if matches(op_names(op), patterns)]
    return [_item("errors", op.full_name, "any", op_family(op)) for op in ops]


def plan_modules(patterns, dtypes):
    modules = list(modules_by_name().values())
    names = [module_names(module_info) for module_info in modules]
    _check_patterns("--modules", "ModuleInfo", names, patterns)
    items = []
    for module_info, aliases in zip(modules, names):
        if not matches(aliases, patterns):
            continue
        declared = set(module_info.supported_dtypes("cpu"))
        wanted = declared if dtypes is None else [dtype for dtype in dtypes if dtype in declared]
        family = module_family(module_info)
        items.extend(_item("module", module_info.name, dtype, family) for dtype in sorted(wanted, key=dtype_name))
    return items


def plan_goldens(goldens, patterns):
    """Every entry of a goldens file whose op matches ``patterns``, in the dtypes it was recorded in."""
    ops = ops_by_name()
    items = []
    for entry in goldens["entries"]:
        op = ops.get(entry["op"])
        names = op_names(op) if op is not None else (entry["op"],)
        if matches(names, patterns):
            items.append(_item("golden", entry["op"], entry["dtype"], op_family(op) if op is not None else "other"))
    return items


def module_names(module_info):
    # "nn.Linear", and "Linear" for convenience.
    return (module_info.name, module_info.module_cls.__name__)


def _check_patterns(option, database, all_names, patterns):
    unmatched = unmatched_patterns(all_names, patterns)
    if unmatched:
        raise SelectionError(f"{option}: no {database} matches {', '.join(unmatched)}")


def _item(kind, name, dtype, family):
    dtype = dtype if isinstance(dtype, str) else dtype_name(dtype)
    return {"kind": kind, "name": name, "dtype": dtype, "family": family}
