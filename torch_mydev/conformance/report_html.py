"""report.html: a self-contained report a vendor can attach to a release.

One file with inline CSS, inline SVG charts and a few lines of inline
JavaScript to filter the table; it loads nothing from anywhere.
"""
from html import escape

from .outcome import STATUSES
from .upstream_tests import STATUSES as UPSTREAM_STATUSES

COLORS = {
    "pass": "#2e7d32",
    "mismatch": "#f9a825",
    "error": "#c62828",
    "not_implemented": "#7b1fa2",
    "skipped": "#9e9e9e",
    "crash": "#3e2723",
    "timeout": "#1565c0",
    "not_applicable": "#e0e0e0",
}

UPSTREAM_COLORS = {
    "pass": "#2e7d32",
    "expected_failure": "#66bb6a",
    "fail": "#f9a825",
    "error": "#c62828",
    "unexpected_success": "#7b1fa2",
    "fails_on_cpu_too": "#bcaaa4",
    "skipped": "#9e9e9e",
    "crash": "#3e2723",
    "timeout": "#1565c0",
}

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
.meta { color: #555; } code { background: #f3f3f3; padding: 0 0.3em; }
.cards { display: flex; flex-wrap: wrap; gap: 0.6em; margin: 1em 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 0.5em 0.9em; min-width: 7em; }
.card .n { font-size: 1.5em; font-weight: 600; } .card .l { color: #555; font-size: 0.85em; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px; margin-right: 0.3em; }
.legend span { margin-right: 1em; white-space: nowrap; }
table { border-collapse: collapse; width: 100%; font-size: 0.9em; }
th, td { border-bottom: 1px solid #eee; padding: 0.3em 0.5em; text-align: left; vertical-align: top; }
th { background: #fafafa; position: sticky; top: 0; }
td.reason { font-family: ui-monospace, monospace; font-size: 0.85em; word-break: break-word; }
.status { color: #fff; border-radius: 3px; padding: 0 0.4em; white-space: nowrap; }
.filters { margin: 0.6em 0; } .filters input { width: 22em; }
svg { max-width: 100%; height: auto; } svg text { font: 12px system-ui, sans-serif; fill: #222; }
"""

SCRIPT = """
function filterRows(section) {
  const status = document.getElementById(section + '-status').value;
  const text = document.getElementById(section + '-text').value.toLowerCase();
  let shown = 0;
  for (const row of document.querySelectorAll('#' + section + '-table tbody tr')) {
    const visible = (!status || row.dataset.status === status) && row.textContent.toLowerCase().includes(text);
    row.style.display = visible ? '' : 'none';
    shown += visible;
  }
  document.getElementById(section + '-count').textContent = shown;
}
"""


def render_html(report):
    environment, summary = report["environment"], report["summary"]
    device = environment["device_name"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>PyTorch conformance report: {escape(device)}</title>",
        f"<style>{STYLE}</style><script>{SCRIPT}</script></head><body>",
        f"<h1>PyTorch conformance report: {escape(device)}</h1>",
        f'<p class="meta">torch {escape(environment["torch_version"])}'
        f' &middot; torch_mydev {escape(str(environment["torch_mydev_version"]))}'
        f' &middot; {escape(environment["date"])} &middot; {report["seconds"]:.0f} s'
        f'{"" if report["complete"] else " &middot; <strong>interrupted: partial results</strong>"}'
        f'<br><code>{escape(environment["command_line"])}</code></p>',
    ]
    options = report["options"]
    if not options["goldens_only"] and not options["upstream_only"]:
        parts += [
            "<p>Every (op or module, dtype) pair ran on the device and on the CPU with the same inputs and seeds; "
            "outputs and gradients were compared with the CPU reference using PyTorch's OpInfo/ModuleInfo databases "
            "and the tolerances and skips upstream attaches to its own CPU-comparison tests.</p>",
            "<h2>Summary</h2>",
            _cards(summary, "pairs with a CPU reference"),
            _legend(),
            "<h3>By op family</h3>",
            _chart(summary["by_family"]),
            "<h3>By dtype</h3>",
            _chart(summary["by_dtype"]),
            "<h2>Pairs that did not pass</h2>",
            _failure_table("pairs", report["results"]),
        ]
    if "error_inputs" in report:
        parts += _error_inputs_section(report["error_inputs"])
    if "goldens" in report:
        goldens = report["goldens"]
        metadata = goldens["metadata"]
        parts += [
            "<h2>CUDA goldens</h2>",
            f'<p class="meta">Stored outputs from <code>{escape(goldens["file"])}</code>, recorded on '
            f'{escape(str(metadata["device_name"]))} ({escape(str(metadata["device"]))}) with torch '
            f'{escape(str(metadata["torch_version"]))} on {escape(str(metadata["date"]))}; the same inputs were run on '
            f"the device and compared with atol = rtol = 1e-3 or upstream's larger overrides.</p>",
            _cards(goldens["summary"], "goldens compared"),
            _legend(),
            "<h3>By op family</h3>",
            _chart(goldens["summary"]["by_family"]),
            "<h3>By dtype</h3>",
            _chart(goldens["summary"]["by_dtype"]),
            "<h3>Goldens that did not pass</h3>",
            _failure_table("goldens", goldens["results"]),
        ]
    if "upstream" in report:
        parts += _upstream_section(report["upstream"])
    parts += [
        "<h2>Environment</h2>",
        _key_values(environment),
        "<h2>Options</h2>",
        _key_values(report["options"]),
        "</body></html>",
    ]
    return "\n".join(parts)


def write_html(report, path):
    with open(path, "w", encoding="utf-8") as file:
        file.write(render_html(report))


def _cards(summary, compared):
    cards = [(compared, summary["pairs"], None)]
    cards += [(status.replace("_", " "), summary[status], COLORS[status]) for status in STATUSES]
    cards += [
        ("pass rate, all pairs", _percent(summary["pass_rate"]), None),
        ("pass rate, not skipped", _percent(summary["pass_rate_non_skipped"]), None),
        ("samples run", summary["samples_run"], None),
    ]
    html = ['<div class="cards">']
    for label, value, color in cards:
        swatch = f'<span class="swatch" style="background:{color}"></span>' if color else ""
        html.append(
            f'<div class="card"><div class="n">{escape(str(value))}</div>'
            f'<div class="l">{swatch}{escape(label)}</div></div>'
        )
    html.append("</div>")
    return "".join(html)


def _legend():
    items = "".join(
        f'<span><span class="swatch" style="background:{COLORS[s]}"></span>{escape(s.replace("_", " "))}</span>'
        for s in STATUSES
    )
    return f'<p class="legend">{items}</p>'


def _chart(groups, label_width=170, bar_width=600, row_height=20):
    """One horizontal bar per group, split by status in proportion to its pairs."""
    names = sorted(groups, key=lambda name: (-groups[name]["pairs"], name))
    height = row_height * len(names) + 4
    width = label_width + bar_width + 280
    rows = []
    for row, name in enumerate(names):
        group = groups[name]
        y = row * row_height + 2
        rows.append(f'<text x="{label_width - 6}" y="{y + 14}" text-anchor="end">{escape(name)}</text>')
        x = float(label_width)
        for status, share in _segments(group, bar_width):
            rows.append(
                f'<rect x="{x:.1f}" y="{y}" width="{share:.1f}" height="{row_height - 4}" fill="{COLORS[status]}">'
                f"<title>{escape(name)}: {group[status]} {escape(status)}</title></rect>"
            )
            x += share
        rate = _percent(group["pass_rate_non_skipped"])
        rows.append(
            f'<text x="{label_width + bar_width + 8}" y="{y + 14}">{group["pass"]}/{group["pairs"]} pass, '
            f"{rate} of not skipped</text>"
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'viewBox="0 0 {width} {height}">{"".join(rows)}</svg>'
    )


def _segments(group, bar_width, minimum=3.0):
    """(status, width) per non-empty status; a rare failure still gets a visible sliver, taken from the widest."""
    present = [status for status in STATUSES if group[status]]
    listed = sum(group[status] for status in present)  # "pairs" leaves out the not-applicable ones
    widths = {status: max(minimum, bar_width * group[status] / listed) for status in present}
    widest = max(present, key=lambda status: group[status])
    widths[widest] -= sum(widths.values()) - bar_width
    return [(status, widths[status]) for status in present]


def _failure_table(section, results):
    failing = [result for result in results if result["status"] != "pass"]
    if not results:
        return "<p>Nothing ran.</p>"
    if not failing:
        return "<p>All passed.</p>"
    present = [status for status in STATUSES if any(result["status"] == status for result in failing)]
    options = "".join(f'<option value="{s}">{escape(s.replace("_", " "))}</option>' for s in present)
    rows = []
    for result in failing:
        status = result["status"]
        rows.append(
            f'<tr data-status="{status}"><td>{escape(result["kind"])}</td><td>{escape(result["name"])}</td>'
            f'<td>{escape(result["dtype"])}</td><td>{escape(result["family"])}</td>'
            f'<td><span class="status" style="background:{COLORS[status]}">'
            f'{escape(status.replace("_", " "))}</span></td>'
            f'<td class="reason">{escape(result.get("reason") or "")}</td></tr>'
        )
    return (
        f'<div class="filters">Status <select id="{section}-status" onchange="filterRows(\'{section}\')">'
        f'<option value="">all</option>{options}</select> '
        f'Search <input id="{section}-text" type="search" oninput="filterRows(\'{section}\')" '
        f'placeholder="name, dtype, message"> '
        f'<span id="{section}-count">{len(failing)}</span> shown</div>'
        f'<table id="{section}-table"><thead><tr><th>kind</th><th>name</th><th>dtype</th><th>family</th><th>status</th>'
        f'<th>reason</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _error_inputs_section(error_inputs):
    summary = error_inputs["summary"]
    rate = summary["at_call_rate"]
    return [
        "<h2>Error inputs</h2>",
        "<p>Each op's error inputs (the bad calls of upstream's <code>TestCommon.test_errors</code>) ran on the CPU "
        "and on the device. Of those the CPU rejects as expected, each must raise on the device <em>at the call</em>, "
        "with the expected exception type and message: not only at the next synchronization (<em>late</em>), not "
        "another error (<em>wrong</em>), not nothing (<em>silent</em>). Inputs upstream builds for the CPU alone "
        "(bounds that CUDA checks in its kernels) run on the device too: there, late is what CUDA does, and only "
        "wrong or silent fails. Dtype errors: for each of the 12 common dtypes an op does not list for the CPU, its "
        "first sample in that dtype, where the CPU refuses it, must raise at the call with the CPU's message.</p>",
        f'<p class="meta">{summary["ops"]} ops; {summary["inputs"]} inputs the CPU rejects: {summary["at_call"]} at the '
        f'call ({_percent(rate)}), {summary["late"]} late, {summary["wrong"]} wrong, '
        f'{summary["silent"]} silent; {summary["cpu_does_not_raise"]} more the CPU does not reject. '
        f'{summary["cpu_only"]} only for the CPU: {summary["cpu_only_at_call"]} at the call, '
        f'{summary["cpu_only_late"]} late, {summary["cpu_only_wrong"]} wrong, {summary["cpu_only_silent"]} silent. '
        f'{summary.get("dtype_inputs", 0)} dtype errors: {summary.get("dtype_at_call", 0)} at the call, '
        f'{summary.get("dtype_late", 0)} late, {summary.get("dtype_wrong", 0)} wrong, '
        f'{summary.get("dtype_silent", 0)} silent.</p>',
        _cards(summary, "ops judged"),
        "<h3>Ops whose error inputs did not all raise at the call</h3>",
        _failure_table("errors", error_inputs["results"]),
    ]


def _upstream_section(upstream):
    summary = upstream["summary"]
    header = "".join(f"<th>{escape(status.replace('_', ' '))}</th>" for status in UPSTREAM_STATUSES)
    rows = []
    for file in upstream["files"]:
        cells = "".join(f"<td>{file[status]}</td>" for status in UPSTREAM_STATUSES)
        problem = f'<br><span class="reason">{escape(file["problem"])}</span>' if file["problem"] else ""
        rows.append(
            f'<tr><td>{escape(file["file"])}{problem}</td><td>{file["tests"]}</td>{cells}'
            f'<td>{_percent(file["pass_rate_non_skipped"])}</td></tr>'
        )
    totals = "".join(f"<th>{summary[status]}</th>" for status in UPSTREAM_STATUSES)
    failing = []
    for outcome in upstream["not_passing"]:
        status = outcome["status"]
        failing.append(
            f'<tr data-status="{status}"><td>{escape(outcome["test"])}</td>'
            f'<td><span class="status" style="background:{UPSTREAM_COLORS[status]}">'
            f'{escape(status.replace("_", " "))}</span></td>'
            f'<td class="reason">{escape(outcome.get("message") or "")}</td></tr>'
        )
    options = "".join(
        f'<option value="{s}">{escape(s.replace("_", " "))}</option>'
        for s in UPSTREAM_STATUSES
        if any(outcome["status"] == s for outcome in upstream["not_passing"])
    )
    skip_rows = "".join(
        f'<tr><td>{escape(pattern)}</td><td class="reason">{escape(reason)}</td></tr>'
        for pattern, reason in upstream["skip_list"].items()
    )
    return [
        "<h2>PyTorch's device-generic tests</h2>",
        "<p>Upstream test files run under pytest with <code>PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1</code>, so "
        "<code>instantiate_device_type_tests</code> runs their device variants on mydev through "
        f"<code>PrivateUse1TestBase</code>; the CPU twins of those that failed ran as the reference. "
        f"{summary['tests']} mydev tests in {summary['files']} files ({summary['cpu_twins_run']} CPU twins); pass rate "
        f"{_percent(summary['pass_rate_non_skipped'])} of the tests neither skipped nor failing on the CPU too "
        "(expected failures count as passing). A test that fails on the CPU as well does not match the installed "
        "torch, or tests something broken upstream: it is listed, but it is not held against the device.</p>",
        f"<table><thead><tr><th>file</th><th>tests</th>{header}<th>pass rate</th></tr></thead>"
        f'<tbody>{"".join(rows)}</tbody><tfoot><tr><th>all</th><th>{summary["tests"]}</th>{totals}'
        f'<th>{_percent(summary["pass_rate_non_skipped"])}</th></tr></tfoot></table>',
        "<h3>Tests that did not pass</h3>",
        (
            '<div class="filters">Status <select id="upstream-status" onchange="filterRows(\'upstream\')">'
            f'<option value="">all</option>{options}</select> Search <input id="upstream-text" type="search" '
            'oninput="filterRows(\'upstream\')" placeholder="test, message"> '
            f'<span id="upstream-count">{len(failing)}</span> shown</div>'
            '<table id="upstream-table"><thead><tr><th>test</th><th>status</th><th>message or reason</th></tr>'
            f'</thead><tbody>{"".join(failing)}</tbody></table>'
            if failing
            else "<p>Every test passed.</p>"
        ),
        "<h3>mydev skip list</h3>",
        f"<table><thead><tr><th>pattern</th><th>reason</th></tr></thead><tbody>{skip_rows}</tbody></table>"
        if skip_rows
        else "<p>Empty.</p>",
    ]


def _key_values(mapping):
    rows = "".join(
        f"<tr><th>{escape(str(key))}</th><td>{escape(str(value))}</td></tr>" for key, value in mapping.items()
    )
    return f"<table>{rows}</table>"


def _percent(value):
    return "n/a" if value is None else f"{value:.1f}%"
