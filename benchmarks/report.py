"""The results table printed on the terminal, one row per case."""

COLUMNS = f"{'group':<14}{'case':<48}{'cpu':>11}{'mydev':>11}{'mydev/cpu':>11}{'target':>9}  result{'spread':>8}"


def readable_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.2f}{unit}"
    return f"{seconds / 1e-9:.0f}ns"


def row(result):
    return (
        f"{result['group']:<14}{result['case']:<48}"
        f"{readable_time(result['cpu_seconds']):>11}{readable_time(result['mydev_seconds']):>11}"
        f"{result['ratio']:>10.2f}x{result['target']:>8.2f}x  {'PASS' if result['meets_target'] else 'MISS':<6}"
        f"{result['spread']:>7.0%}"
    )
