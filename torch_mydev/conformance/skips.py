"""Pairs the kit does not run on mydev, each with the reason a reviewer can check.

Only differences that are not defects of the device belong here; everything
else is left failing in the report. Keys are (OpInfo full_name, dtype name);
a dtype of "*" covers every dtype.
"""
_REDUCED_PRECISION_AUTO_POLICY = (
    "its default options (acc_policy/chunking_method 'auto') pick a different accumulation policy for each device "
    "type in float16/bfloat16 (torch/nn/modules/linear_cross_entropy_options.py: 'accurate' on cpu, the generic "
    "default elsewhere), so CPU and device compute different approximations by design"
)

SKIPS = {
    ("nn.functional.linear_cross_entropy.chunked", "float16"): _REDUCED_PRECISION_AUTO_POLICY,
    ("nn.functional.linear_cross_entropy.chunked", "bfloat16"): _REDUCED_PRECISION_AUTO_POLICY,
    ("nn.functional.linear_cross_entropy.chunked_none", "float16"): _REDUCED_PRECISION_AUTO_POLICY,
    ("nn.functional.linear_cross_entropy.chunked_none", "bfloat16"): _REDUCED_PRECISION_AUTO_POLICY,
}


def skip_reason(full_name, dtype_name):
    """The documented reason to skip this pair on mydev, or None."""
    return SKIPS.get((full_name, dtype_name)) or SKIPS.get((full_name, "*"))
