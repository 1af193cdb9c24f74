"""Figures written to disk: one matplotlib figure saved as a PNG, atomically."""

from __future__ import annotations

import os
from pathlib import Path


def save_png(fig, path: Path, dpi: int = 90) -> Path:
    """Save a matplotlib figure atomically (temporary file, then rename) and close it."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, dpi=dpi, format="png")
    plt.close(fig)
    os.replace(tmp, path)
    return path


OUTLIER_RATIO = 20.0  # max / median above this: one row would squash the others, log axis


def needs_log_axis(values) -> bool:
    """True when the positive ``values``' maximum is more than ``OUTLIER_RATIO`` times their
    median (a linear axis would crowd all the others into one bar)."""
    import numpy as np

    v = np.asarray([x for x in values if x is not None and x > 0], dtype=float)
    return bool(v.size >= 2 and v.max() > OUTLIER_RATIO * np.median(v))


def spread_hist(ax, datasets: list, labels: list[str] | None = None, bins: int = 30) -> bool:
    """Stacked histogram of ``datasets`` (lists of numbers) on ``ax``; where an outlier rules
    (``needs_log_axis``) on a log x axis with log-spaced bins, the largest value annotated.
    Returns whether the axis is logarithmic."""
    import numpy as np

    flat = [x for d in datasets for x in d]
    log = needs_log_axis(flat)
    edges: int | np.ndarray = bins
    if log:
        pos = [x for x in flat if x > 0]
        edges = np.geomspace(min(pos), max(pos) * 1.0001, bins + 1)
        datasets = [[x for x in d if x > 0] for d in datasets]
    ax.hist(datasets, bins=edges, stacked=True, label=labels)
    if log:
        ax.set_xscale("log")
        top = max(flat)
        ax.annotate(
            f"max {top:.4g}\n({top / float(np.median(flat)):.0f}x the median)",
            xy=(top, 0),
            xytext=(0.98, 0.9),
            textcoords="axes fraction",
            ha="right",
            va="top",
            fontsize=8,
            arrowprops={"arrowstyle": "->", "lw": 0.8},
        )
    return log
