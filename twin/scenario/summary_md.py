"""``summary.md``: a run summary (``rob_twin.twin.scenario.report``) written for people.

Tables with units in their headers, numbers rounded to what they mean (times [s] to the
millisecond, clearances in millimetres, tracking errors in milliradians), lists and dicts
written out (``closed: 99``, ``partial_output, uncertain_output``), ``-`` for nothing; never a
Python repr. ``failed_markdown`` is the page of a run that stopped with an error.
Simulated figures only: every page says ``hardware_io: false``.
"""

from __future__ import annotations

import math

HEADER = (
    "hardware_io: false. Figures are from the MuJoCo twin (simulated), not from a physical robot."
)
NOTHING = "-"

# figure name suffix -> (unit shown, scale, decimals)
_UNITS = (
    ("_rad_s", "rad/s", 1.0, 4),
    ("_mrad", "mrad", 1.0, 2),
    ("_rad", "rad", 1.0, 4),
    ("_m_s", "m/s", 1.0, 3),
    ("_us", "us", 1.0, 0),
    ("_mm", "mm", 1.0, 2),
    ("_n", "N", 1.0, 2),  # forces in newtons: peak_internal_force_n -> [N]
    ("_m", "mm", 1000.0, 2),
    ("_s", "s", 1.0, 3),
)


def words(value: object, decimals: int = 4) -> str:
    """Any value as words, never a Python repr: None ``none``, booleans ``yes`` / ``no``,
    numbers rounded (``number``), ``{"right": 0, "left": 0}`` as ``right 0, left 0`` (a
    nested dict in parentheses), a list as ``a, b`` (``none`` when empty; a nested list or
    dict in parentheses)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return number(value, decimals)
    if hasattr(value, "item") and callable(value.item) and not hasattr(value, "__len__"):
        return words(value.item(), decimals)  # a numpy scalar
    if isinstance(value, dict):
        if not value:
            return "none"
        parts = []
        for k, v in value.items():
            text = words(v, decimals)
            parts.append(f"{k} ({text})" if isinstance(v, dict) and v else f"{k} {text}")
        return ", ".join(parts)
    if isinstance(value, (list, tuple, set, frozenset)):
        if not value:
            return "none"
        nested = (list, tuple, dict)
        return ", ".join(
            f"({words(v, decimals)})" if isinstance(v, nested) and v else words(v, decimals)
            for v in value
        )
    if hasattr(value, "tolist"):  # a numpy array
        return words(value.tolist(), decimals)
    return str(value)


def label(name: str) -> str:
    """``plan_min_clearance_m`` -> ``plan min clearance [mm]``."""
    for suffix, unit, _, _ in _UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return f"{name[: -len(suffix)].replace('_', ' ')} [{unit}]"
    return name.replace("_", " ")


def number(value: float | None, decimals: int = 4) -> str:
    """``value`` rounded to ``decimals`` places, trailing zeros kept off past the first;
    None (a statistic of no samples) is ``n/a``."""
    if value is None:
        return "n/a"
    if not math.isfinite(value):
        return "not finite" if math.isnan(value) else ("+inf" if value > 0 else "-inf")
    if value != 0 and abs(value) < 10 ** (-decimals):
        return f"{value:.2e}"
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0")
        text = text + "0" if text.endswith(".") else text
    return text


def cell(value: object, name: str = "") -> str:
    """One table cell: ``value`` of figure ``name`` (its unit scales and rounds numbers)."""
    if value is None or value == "":
        return NOTHING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        for suffix, _, scale, decimals in _UNITS:
            if name.endswith(suffix):
                if isinstance(value, int) and scale == 1.0:
                    return str(value)
                return number(float(value) * scale, decimals)
        return str(value) if isinstance(value, int) else number(value)
    if isinstance(value, dict):
        if not value:
            return "none"
        return "; ".join(f"{k}: {cell(v, str(k) if not name else name)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v, name) for v in value) if value else "none"
    return str(value).replace("|", "/").replace("\n", " ")


def table(
    rows: list[dict], columns: list[str] | None = None, first: str | None = None
) -> list[str]:
    """Markdown lines of a table of ``rows``; headers are ``label``s (units included)."""
    if not rows:
        return ["(none)"]
    columns = columns or list(dict.fromkeys(k for r in rows for k in r))
    heads = [label(c) if c != first else c for c in columns]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c), c) for c in columns) + " |" for r in rows]
    return lines


def figures_table(figures: dict) -> list[str]:
    """A two-column ``figure | value`` table."""
    lines = ["| figure | value |", "|---|---|"]
    lines += [f"| {label(k)} | {cell(v, k)} |" for k, v in figures.items()]
    return lines


def speed_words(ratio: float | None) -> str:
    """Simulated seconds per wall second as words: ``2.0`` -> ``2.0x faster than real time``,
    ``0.5`` -> ``2.0x slower than real time``; ``""`` when unknown."""
    if not ratio or not math.isfinite(ratio) or ratio <= 0:
        return ""
    if ratio >= 1.0:
        return f"{number(ratio, 1)}x faster than real time"
    return f"{number(1.0 / ratio, 1)}x slower than real time"


def keyframes_words(reached: dict | None) -> str:
    """``{"right": {"reached": 2, "keyframes": 2, ...}, ...}`` as ``right 2/2, left 1/2
    (missed: left at 3.5 s)``; ``""`` without keyframes."""
    if not reached:
        return ""
    text = ", ".join(f"{arm} {r['reached']}/{r['keyframes']}" for arm, r in reached.items())
    missed = [
        f"{arm} at {', '.join(number(t, 3) for t in r['missed_at_s'])} s"
        for arm, r in reached.items()
        if r.get("missed_at_s")
    ]
    return text + (f" (not reached: {'; '.join(missed)})" if missed else "")


def _video_line(s: dict) -> str:
    if s.get("video"):
        fps = s.get("render_fps")
        rate = f", {number(fps, 1)} frames/s rendering" if fps else ""
        return f"{s['video']} ({s.get('frames', 0)} frames{rate})"
    return f"not written: {s.get('video_skipped_reason') or 'no reason given'}"


def _expect_line(expect: dict) -> str:
    parts = []
    for key, value in expect.items():
        if value in ({}, [], None) or (key == "failed_plans" and value == 0):
            continue
        parts.append(f"{key.replace('_', ' ')}: {cell(value)}")
    return "; ".join(parts) or "nothing (no refusal, failed plan step or fault is allowed)"


def _pipeline_rows(s: dict) -> list[dict]:
    rows = []
    for arm, figs in s.get("pipeline", {}).items():
        err = (s.get("max_abs_tracking_error_rad") or {}).get(arm)
        rows.append(
            {
                "arm": arm,
                "max_tracking_error_mrad": None if err is None else round(1000 * err, 2),
                "refused_targets": (s.get("refused_targets") or {}).get(arm) or None,
                **{k: v for k, v in figs.items() if k != "bus"},
                "bus_channel": figs.get("bus"),
            }
        )
    return rows


FIGURE_CAPTIONS = {
    "joints.png": "Joint angles of both arms over simulated time: what the owners commanded "
    "(dashed) and what the simulated arms did (solid), one colour per joint.",
    "bus.png": "Latency histograms of every simulated CAN bus (queueing, command to drive, "
    "feedback to host), with its load and p99 in each panel's title.",
    "held_object.png": "The held box: internal force between the hands and squeeze (top), and "
    "each arm's joint torques, one line per joint (below), over simulated time.",
}
OTHER_FIGURE = "A figure this run wrote (simulated)."


def figures_section(pngs: list[str]) -> list[str]:
    """Markdown lines showing every figure of ``pngs`` (file names in the run folder), each
    with its caption (``FIGURE_CAPTIONS``)."""
    lines = ["", "## Figures (simulated)"]
    for name in pngs:
        caption = FIGURE_CAPTIONS.get(name, OTHER_FIGURE)
        lines += ["", f"![{name.removesuffix('.png')}]({name})", "", f"*{name}*: {caption}"]
    return lines


def run_markdown(
    s: dict, extra_sections: tuple[str, ...] = (), pngs: list[str] | None = None
) -> str:
    """The page of a finished (completed or interrupted) run summary ``s``; ``pngs``: the
    figures in the run folder (file names; None: ``joints.png``, and ``bus.png`` with bus
    timing), each shown with its caption."""
    verdict = "passed" if s.get("passed") else "FAILED"
    head = f"# Run `{s['scenario']}` (simulated): {s['status']}"
    if s.get("stopped_by"):
        head += f" by {s['stopped_by']}"
    lines = [head + (f", {verdict}" if s["status"] == "completed" else ""), "", HEADER, ""]
    if s.get("unexpected"):
        lines += ["Unexpected (the run fails):", ""] + [f"- {p}" for p in s["unexpected"]] + [""]
    ratio = s.get("sim_to_wall_ratio_physics_only")
    robot = s.get("robot") or {}
    outcome = {
        "status": s["status"],
        "passed": s.get("passed"),
        **(
            {
                "robot": f"{robot['name']} ({robot['file']}; {robot['family']} drives; "
                f"model {robot['model_hash']})"
            }
            if robot
            else {}
        ),
        "simulated time": f"{s['simulated_s']:.2f} s",
        "wall time": f"{s['wall_s']:.2f} s (physics {s['physics_wall_s']:.2f} s"
        + (f", {speed_words(ratio)}" if speed_words(ratio) else "")
        + ")",
        **(
            {
                "keyframes reached": keyframes_words(s["keyframes_reached"])
                + f"; reached: within {number(s.get('keyframe_tolerance_rad'), 3)} rad on "
                "every joint"
            }
            if s.get("keyframes_reached")
            else {}
        ),
        "video": _video_line(s),
        "failed plan steps": s.get("failed_plan_steps", 0),
        "expected by the scenario": _expect_line(s.get("expect") or {}),
        "joint plot": "joints.png",
        **{
            f"bus {b['bus']} over budget": (
                f"{100 * b['load']:.1f} % load > {100 * b['max_load']:.0f} %"
            )
            for b in s.get("bus_over_budget", [])
        },
    }
    lines += ["| outcome | value |", "|---|---|"]
    lines += [f"| {k} | {cell(v)} |" for k, v in outcome.items()]
    lines += ["", "## Owners -> codec -> CAN -> simulated drives, per arm", ""]
    lines += table(_pipeline_rows(s), first="arm")
    if s.get("plans"):
        rows = [{k: v for k, v in p.items() if k != "planning_s"} for p in s["plans"]]
        lines += ["", "## Planned moves (ArmGroup, executed in sync through the owners)", ""]
        lines += table(rows)
    if s.get("base"):
        lines += ["", "## Tracked base (simulated)", ""] + figures_table(s["base"])
    if s.get("held_object"):
        h = s["held_object"]
        keep = ("passed", "failures", "held_s", "peak_internal_force_n", "peak_squeeze_n")
        lines += ["", "## Held object (simulated)", ""]
        lines += figures_table({k: h[k] for k in keep if k in h})
    for name in extra_sections:
        if isinstance(s.get(name), dict):
            lines += ["", f"## {name} (simulated)", ""] + figures_table(s[name])
    if isinstance(s.get("bus"), dict):
        lines += [
            "",
            "## Simulated CAN buses (latencies p50 / p99 / max [us])",
            "",
            "| bus | config | load [%] | frames | lost | error frames | queue refusals | "
            "queueing | command->drive | feedback |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for b in s["bus"].values():
            lat = [b[k] for k in ("queue_latency", "command_to_drive_latency", "feedback_latency")]
            lines.append(
                f"| {b['bus']} | {b['config']} | {number(100 * b['load'], 1)} | {b['frames']} | "
                f"{b['frames_lost']} | {b['error_frames']} | "
                f"{cell(b.get('queue_refusals') or None)} | "
                + " | ".join(
                    " / ".join(number(x[q], 0) for q in ("p50_us", "p99_us", "max_us")) for x in lat
                )
                + " |"
            )
    else:
        lines += ["", f"Bus: {cell(s.get('bus'))}."]
    if pngs is None:
        pngs = ["joints.png"] + (["bus.png"] if isinstance(s.get("bus"), dict) else [])
    lines += [*figures_section(pngs), ""]
    return "\n".join(lines)


def failed_markdown(scenario: str, error: BaseException, note: str = "") -> str:
    """The page of a run that stopped with ``error``: what failed, and that no figures exist."""
    message = str(error).replace("\n", " ") or "(no message)"
    return "\n".join(
        [
            f"# Run `{scenario}` (simulated): failed",
            "",
            HEADER,
            "",
            "| outcome | value |",
            "|---|---|",
            "| status | failed |",
            f"| error | {type(error).__name__}: {cell(message)} |",
            f"| figures | {note or 'none: the run stopped with the error above'} |",
            "",
            "The run folder's summary.json says the same (`status: failed`).",
            "",
        ]
    )
