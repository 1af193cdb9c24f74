"""Summaries of a run: JSON and Markdown (``hardware_io: false``) and a joint plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rob_twin.twin.render.figures import save_png
from rob_twin.twin.scenario.plan_steps import failed_steps
from rob_twin.twin.scenario.run import RunResult
from rob_twin.twin.scenario.run_folder import write_atomic, write_json_atomic
from rob_twin.twin.scenario.summary_md import run_markdown

EVIDENCE = {
    "hardware_io": False,
    "evidence_class": "simulated",
    "note": "Simulated figures from the rob-twin digital twin; not evidence about a physical arm.",
}


def json_default(value):
    """For ``json.dumps(default=...)``: numpy scalars and arrays as numbers, anything else as
    text."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def markdown_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table of ``rows`` (list of dicts); columns: those of the
    first row."""
    if not rows:
        return "(no rows)\n"
    columns = columns or list(rows[0])
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = "".join("| " + " | ".join(str(r.get(c, "")) for c in columns) + " |\n" for r in rows)
    return head + body


def joint_plot(result: RunResult, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for ax, arm in zip(axes, ("right", "left"), strict=True):
        for j in range(result.commanded[arm].shape[1]):  # one line per joint of the arm
            line = ax.plot(result.times, result.commanded[arm][:, j], "--", lw=1)[0]
            ax.plot(
                result.times,
                result.measured[arm][:, j],
                color=line.get_color(),
                lw=1.5,
                label=f"j{j + 1}",
            )
        ax.set_ylabel(f"{arm} arm [rad]")
        ax.grid(alpha=0.3)
    axes[0].legend(ncol=7, fontsize=8, loc="upper right")
    axes[0].set_title(
        "Owner-commanded (dashed) vs simulated (solid) joint angles, via CAN - simulated"
    )
    axes[1].set_xlabel("simulated time [s]")
    fig.tight_layout()
    return save_png(fig, path)


def _bus_plot(result: RunResult, out_dir: Path) -> str | None:
    if not result.bus:
        return None
    from rob_twin.twin.bus.plot import bus_plot

    return str(
        bus_plot(
            result.bus,
            result.bus_latencies_s,
            out_dir / "bus.png",
            f"Simulated CAN buses during {result.scenario!r} (hardware_io: false)",
        )
    )


def _over_budget(buses: dict | None) -> dict:
    """``{"bus_over_budget": [...]}`` when a simulated bus ran above the bus budget's load
    (``rob_twin.twin.bus.budget``: 0.8, room for error frames and a diagnostic tool), else
    ``{}``."""
    from rob_twin.twin.bus.budget import BusBudgetConfig

    limit = BusBudgetConfig().max_load
    over = [
        {"bus": b["bus"], "config": b["config"], "load": b["load"], "max_load": limit}
        for b in (buses or {}).values()
        if b.get("load") is not None and b["load"] > limit
    ]
    return {"bus_over_budget": over} if over else {}


def _keyframes_reached(result: RunResult, keyframes: list | None) -> dict:
    """``{"keyframes_reached": {arm: {...}}, "keyframe_tolerance_rad": tol}`` for a run with
    keyframes, else ``{}``."""
    if not keyframes:
        return {}
    from rob_twin.twin.scenario.run_captions import KEYFRAME_TOLERANCE_RAD, keyframes_reached

    return {
        "keyframes_reached": keyframes_reached(keyframes, result.times, result.measured),
        "keyframe_tolerance_rad": KEYFRAME_TOLERANCE_RAD,
    }


def summarize(
    result: RunResult,
    out_dir: Path,
    problems: list[str] | None = None,
    expect: dict | None = None,
    extra: dict | None = None,
    keyframes: list | None = None,
) -> dict:
    """Write ``summary.json``, ``summary.md`` (for people: ``rob_twin.twin.scenario.summary_md``)
    and ``joints.png`` into ``out_dir``, each
    atomically (temporary file, then rename). ``problems``: what the run did that its
    scenario did not expect (``rob_twin.twin.scenario.verdict``); ``expect``: the scenario's
    declaration; ``extra``: further sections ({name: {figure: value}}), each a table of its own;
    ``keyframes``: the scenario's keyframes, judged reached or not from the logged angles
    (``keyframes_reached``: ``rob_twin.twin.scenario.run_captions``, the captions' rule).
    With bus timing on, ``bus.png`` and a table of the simulated buses too."""
    out_dir.mkdir(parents=True, exist_ok=True)
    err = {
        a: (
            float(np.max(np.abs(result.commanded[a] - result.measured[a])))
            if len(result.commanded[a])
            else None
        )
        for a in result.commanded
    }
    problems = list(problems or [])
    summary = {
        **EVIDENCE,
        "status": result.status,
        "stopped_by": result.stopped_by,
        "scenario": result.scenario,
        **({"robot": result.robot} if getattr(result, "robot", None) else {}),
        "calibration": getattr(result, "calibration", "uncalibrated"),
        "passed": result.status == "completed" and not problems,
        "unexpected": problems,
        "simulated_s": round(result.simulated_s, 6),
        "wall_s": round(result.wall_s, 3),
        "physics_wall_s": round(result.physics_wall_s, 3),
        "sim_to_wall_ratio_physics_only": round(
            result.simulated_s / max(result.physics_wall_s, 1e-9), 2
        ),
        "frames": result.frames,
        "render_fps": round(result.frames / result.render_wall_s, 1)
        if result.render_wall_s > 0
        else None,
        "video": result.video,
        "video_skipped_reason": result.video_skipped_reason,
        "max_abs_tracking_error_rad": err,
        "refused_targets": result.refused_targets,
        "failed_plan_steps": len(failed_steps(result.plans)),
        **_keyframes_reached(result, keyframes),
        "expect": expect or {},
        "pipeline": result.pipeline,
        "plans": result.plans,
        **({"base": result.base} if getattr(result, "base", None) else {}),
        **({"held_object": result.held} if getattr(result, "held", None) else {}),
        "plot": str(joint_plot(result, out_dir / "joints.png")),
        "bus": result.bus if result.bus is not None else "bus timing off: frames arrive instantly",
        **_over_budget(result.bus),
        "bus_plot": _bus_plot(result, out_dir),
        **(extra or {}),
    }
    pngs = sorted(p.name for p in out_dir.glob("*.png"))  # every figure of the run, listed
    write_atomic(out_dir / "summary.md", run_markdown(summary, tuple(extra or {}), pngs))
    write_json_atomic(out_dir / "summary.json", summary)  # last: its status says the run is over
    return summary
