"""The results table printed on the terminal, one row per case: the plain host,
then the tuned host, whose ratio the target is held against."""

COLUMNS = (
    f"{'group':<14}{'case':<48}"
    f"{'plain: cpu':>12}{'mydev':>10}{'ratio':>8}"
    f"{'tuned: cpu':>12}{'mydev':>10}{'ratio':>8}"
    f"{'target':>8}  result{'spread':>8}{'cores':>11}"
)


def readable_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.2f}{unit}"
    return f"{seconds / 1e-9:.0f}ns"


def host_columns(measured):
    return (
        f"{readable_time(measured['cpu_seconds']):>12}{readable_time(measured['mydev_seconds']):>10}"
        f"{measured['ratio']:>7.2f}x"
    )


def row(result):
    return (
        f"{result['group']:<14}{result['case']:<48}"
        f"{host_columns(result['plain'])}{host_columns(result['tuned'])}"
        f"{result['target']:>7.2f}x  {'PASS' if result['meets_target'] else 'MISS':<6}"
        f"{result['tuned']['spread']:>7.0%}"
        f"{result['tuned']['cpu_busy_cores']:>7.2f}/{result['tuned']['mydev_busy_cores']:.2f}"
    )
