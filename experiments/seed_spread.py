"""How a figure spreads over planner seeds: median, min and max per figure."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def seed_spread(seeds: range, per_seed: list[dict], keys: Iterable[str]) -> dict:
    """The planner ``seeds`` (first, last), how many rows ``per_seed`` holds (one per seed),
    and per key of ``keys`` the median / min / max of that figure over the rows, rounded to
    4 decimals (in the figure's own unit)."""
    summary = {}
    for k in keys:
        v = np.array([row[k] for row in per_seed], float)
        summary[k] = {
            "median": round(float(np.median(v)), 4),
            "min": round(float(v.min()), 4),
            "max": round(float(v.max()), 4),
        }
    return {
        "planner_seeds": [seeds.start, seeds.stop - 1],
        "n_seeds": len(per_seed),
        "summary": summary,
    }
