"""What a sweep compares: the figures of a run summary
(``rob_twin.twin.scenario.report.summarize``), flat, and their comparison with a stored baseline.

Numbers are compared within a tolerance (``abs + rel * |baseline|``); texts, booleans and
None (owner modes, latched faults and their reasons, plan statuses and execution outcomes)
exactly. Wall-clock figures (``wall``, ``planning_s``, rendering, the bus's live rate) are
left out: they describe the machine, not the twin; so are the paths of files a run wrote.
"""

from __future__ import annotations

import math

# Left out of the comparison: wall-clock and output-file figures.
SKIPPED = (
    "wall_s",
    "physics_wall_s",
    "sim_to_wall_ratio_physics_only",
    "frames",
    "render_fps",
    "video",
    "video_skipped_reason",
    "plot",
    "hardware_io",
    "evidence_class",
    "note",
    "scenario",
    "planning_s",
    "bus",
    "bus_plot",
    "expect",  # the scenario's declaration, not a figure: it shows in passed/unexpected
)
OUTPUT_SUFFIXES = ("_file", "_path", "_plot")  # paths of files a run wrote
DEFAULT_TOLERANCE = {"rel": 0.05, "abs": 1e-3}


def flatten(value, prefix: str = "") -> dict:
    """{dotted.path: leaf} of a summary (lists indexed: ``plans.0.status``), SKIPPED left out."""
    out = {}
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list) and not all(isinstance(v, str) for v in value):
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        return {prefix: value}
    for key, v in items:
        if key in SKIPPED or key.endswith(OUTPUT_SUFFIXES):
            continue
        out.update(flatten(v, f"{prefix}.{key}" if prefix else key))
    return out


def run_figures(summary: dict) -> dict:
    return flatten(summary)


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def tolerance_for(name: str, tolerances: dict) -> dict:
    """The tolerance of figure ``name``: its own entry, else the longest matching prefix,
    else ``default``."""
    best = tolerances.get("default", DEFAULT_TOLERANCE)
    for key in sorted(tolerances, key=len):
        if key != "default" and (name == key or name.startswith(key + ".")):
            best = tolerances[key]
    return {**DEFAULT_TOLERANCE, **best}


def compare(baseline: dict, now: dict, tolerances: dict) -> list[dict]:
    """Every figure that changed beyond its tolerance (or appeared, or vanished)."""
    changes = []
    for name in sorted(set(baseline) | set(now)):
        b, n = baseline.get(name, "(absent)"), now.get(name, "(absent)")
        if is_number(b) and is_number(n):
            tol = tolerance_for(name, tolerances)
            allowed = tol["abs"] + tol["rel"] * abs(b)
            if math.isfinite(b) and math.isfinite(n) and abs(n - b) <= allowed:
                continue
            changes.append({"figure": name, "baseline": b, "now": n, "allowed": f"+-{allowed:.4g}"})
        elif b != n:
            changes.append({"figure": name, "baseline": b, "now": n, "allowed": "exact"})
    return changes
