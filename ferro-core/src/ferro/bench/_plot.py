"""``ferro bench --plot out.png``: one bar chart per case, each contender's time or throughput side by side.

matplotlib is imported by :func:`plot` only (``pip install ferro-core[bench]``);
the figure is drawn without pyplot, so no GUI backend or global state is involved.
"""

from __future__ import annotations

import math
from typing import Any

from ._cases import IMPORT_TARGET

_REFERENCE_COLOURS = {"numpy": "#4c72b0", "torch": "#dd8452"}
_FERRO_COLOURS = ("#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd")
_SCALE = {"us": 1e6, "ms": 1e3}


def _colours(report: dict[str, Any]) -> dict[str, str]:
    """One colour per contender, the same in every panel: references fixed, ferro backends in order."""
    names: list[str] = []
    for e in report["cases"]:
        names += [n for n in e["results"] if n not in names]
    out = dict(_REFERENCE_COLOURS)
    others = [n for n in names if n not in out]
    out.update({n: _FERRO_COLOURS[i % len(_FERRO_COLOURS)] for i, n in enumerate(others)})
    return out


def _case_bars(entry: dict[str, Any]) -> tuple[list[str], list[float | None], str]:
    """Contender names, their bar heights (None: the op raised) and the axis label of one case."""
    unit = entry.get("throughput_unit")
    names = list(entry["results"])
    values: list[float | None] = []
    for n in names:
        res = entry["results"][n]
        if "error" in res:
            values.append(None)
        elif unit:
            values.append(res[unit])
        else:
            values.append(res["seconds"] * _SCALE.get(entry.get("unit", "us"), 1e6))
    label = f"{unit} (higher is better)" if unit else f"{entry.get('unit', 'us')} per call (lower is better)"
    return names, values, label


def _draw(ax: Any, title: str, names: list[str], values: list[float | None], label: str,
          colours: dict[str, str]) -> None:
    heights = [v or 0.0 for v in values]
    bars = ax.bar(range(len(names)), heights, color=[colours.get(n, "#999999") for n in names])
    top = max(heights, default=0.0) or 1.0
    for bar, v in zip(bars, values):
        text = "n/a" if v is None else f"{v:.3g}" if v < 1000 else f"{v:.0f}"
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height() + top * 0.01, text, ha="center", va="bottom",
                fontsize=8)
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel(label, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(axis="y", labelsize=8)


def plot(report: dict[str, Any], path: str) -> None:
    """Draw ``report`` (from ``build_report`` or its JSON) into ``path``; the format follows its suffix."""
    from matplotlib.figure import Figure

    panels: list[tuple[str, list[str], list[float | None], str]] = []
    for e in report["cases"]:
        check = "" if "pass" not in e else (" PASS" if e["pass"] else " FAIL")
        panels.append((f"{e['name']}\nferro target: {e['target']}{check}", *_case_bars(e)))
    if "imports" in report:
        med = report["imports"]["median_s"]
        check = " PASS" if report["imports"]["pass"] else " FAIL"
        title = (f"python -c 'import X' (median of {report['imports']['runs']})\n"
                 f"ferro target: time vs numpy <= {IMPORT_TARGET:g}{check}")
        panels.append((title, list(med), [v * 1e3 for v in med.values()], "ms (lower is better)"))
    ncols = max(1, min(len(panels), 3))
    nrows = max(1, math.ceil(len(panels) / ncols))
    fig = Figure(figsize=(4.6 * ncols, 3.9 * nrows + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    colours = _colours(report)
    colours.setdefault("ferro", _FERRO_COLOURS[0])
    for ax, (title, names, values, label) in zip(axes, panels):
        _draw(ax, title, names, values, label, colours)
    for ax in axes[len(panels):]:
        ax.set_axis_off()
    if not panels:
        axes[0].text(0.5, 0.5, "no case was run", ha="center", va="center")
    meta = report["meta"]
    fig.suptitle(f"ferro bench: {meta['stat']} of rounds; numpy {meta['numpy']}, torch {meta['torch']}, "
                 f"{meta['cpus']} CPUs", fontsize=10)
    fig.savefig(path, dpi=100)
