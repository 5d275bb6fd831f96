"""The sweep's plot: one panel per swept parameter, the spec's figure against it with 95% bands (PNG or SVG)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from tpufleet.sweep.driver import Outcome
from tpufleet.sweep.report import label, young_daly_minutes


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _lines(outcome: Outcome, param: str) -> dict[str, list[dict[str, Any]]]:
    """The finished points grouped by the values of the other swept parameters, each group in point order."""
    others = [name for name in outcome.spec.swept if name != param]
    groups: dict[str, list[dict[str, Any]]] = {}
    for index in sorted(outcome.points):
        point = outcome.points[index]
        name = ", ".join(f"{o}={label(point['params'][o])}" for o in others) or outcome.spec.metric
        groups.setdefault(name, []).append(point)
    return groups


def _panel(ax: Any, outcome: Outcome, param: str) -> None:
    spec = outcome.spec
    values = [p["params"][param] for p in outcome.points.values()]
    numeric = _numeric(values)
    ticks = sorted({label(v) for v in values}) if not numeric else []
    for name, points in _lines(outcome, param).items():
        points = sorted(points, key=lambda p: p["params"][param] if numeric else label(p["params"][param]))
        xs = [p["params"][param] if numeric else ticks.index(label(p["params"][param])) for p in points]
        figures = [p["metrics"].get(spec.metric, {}) for p in points]
        mean = [f.get("mean") for f in figures]
        low = [f.get("low") if f.get("low") is not None else f.get("mean") for f in figures]
        high = [f.get("high") if f.get("high") is not None else f.get("mean") for f in figures]
        line = ax.plot(xs, [float("nan") if m is None else m for m in mean], "o-", label=name)[0]
        ax.fill_between(xs, [float("nan") if v is None else v for v in low],
                        [float("nan") if v is None else v for v in high], color=line.get_color(), alpha=0.2)  # fmt: skip
        if param == "checkpoint_interval_min":
            marks = young_daly_minutes(spec, points[0]["params"])
            if marks is not None:
                ax.axvline(marks[0], color=line.get_color(), linestyle="--", linewidth=1)
                ax.axvline(marks[1], color=line.get_color(), linestyle=":", linewidth=1)
    if not numeric:
        ax.set_xticks(range(len(ticks)), ticks, rotation=20, fontsize=7)
    elif param == "checkpoint_interval_min":
        from matplotlib.ticker import NullFormatter, ScalarFormatter

        ax.set_xscale("log")  # intervals are compared by ratios (Young's optimum scales with a square root)
        ax.set_xticks(sorted(set(values)))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(
        param + (" (dashed: Young, dotted: Daly)" if spec.young_daly_for and param == "checkpoint_interval_min" else "")
    )
    ax.set_ylabel(f"{spec.metric} (mean, 95% band)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def plot(outcome: Outcome, image_format: str = "png") -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    params = list(outcome.spec.swept) or ["point"]
    fig, axes = plt.subplots(1, len(params), figsize=(6 * len(params), 4.2), dpi=110, squeeze=False)
    for ax, param in zip(axes[0], params, strict=True):
        if outcome.points and param in next(iter(outcome.points.values()))["params"]:
            _panel(ax, outcome, param)
    fig.suptitle(f"{outcome.spec.name}: {len(outcome.spec.seeds)} seed(s) per point")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=image_format)
    plt.close(fig)
    return buf.getvalue()
