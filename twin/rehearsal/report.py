"""The rehearsal's report: ``rehearsal.json``, ``rehearsal.md`` and ``stopping.png``
(simulated; written with the project's report helpers in ``rob_twin.twin.scenario.report``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rob_twin.twin.render.figures import save_png
from rob_twin.twin.scenario.report import EVIDENCE, json_default, markdown_table
from rob_twin.twin.scenario.run_folder import write_atomic, write_json_atomic


def stop_plot(report: dict, path: Path) -> Path | None:
    """Joint angles of the RIGHT arm around a Stop while moving (PNG); None without a trace."""
    gate = next((g for g in report["gates"] if g["name"] == "stopping"), None)
    trace = gate and gate["cases"][0].get("trace")
    if not trace or not trace["t_s"]:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.array(trace["t_s"])
    cmd, meas = np.array(trace["commanded_rad"]), np.array(trace["measured_rad"])
    fig, ax = plt.subplots(figsize=(9, 4))
    for j in range(cmd.shape[1]):
        line = ax.plot(t, cmd[:, j] - cmd[0, j], "--", lw=1)[0]
        ax.plot(t, meas[:, j] - cmd[0, j], color=line.get_color(), lw=1.5, label=f"j{j + 1}")
    ax.axvline(0.0, color="k", lw=0.8)
    ax.text(0.005, ax.get_ylim()[1] * 0.9, "stop()", fontsize=9)
    ax.set_xlabel("simulated time after stop() [s]")
    ax.set_ylabel("travel from the stop pose [rad]")
    ax.set_title("Stop while moving: owner-commanded (dashed) vs simulated (solid) - simulated")
    ax.legend(ncol=7, fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_png(fig, path)


def write_report(report: dict, out_dir: Path | str) -> tuple[Path, Path]:
    """``rehearsal.json``, ``rehearsal.md`` and ``stopping.png`` under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plot = stop_plot(report, out / "stopping.png")
    jp, mp = out / "rehearsal.json", out / "rehearsal.md"
    write_json_atomic(jp, report, default=json_default)
    lines = [
        "# Pre-commissioning rehearsal (simulated)",
        "",
        f"hardware_io: false. {EVIDENCE['note']} A passing gate here is a rehearsal, "
        "not a commissioning result: every gate must be repeated on the physical arms.",
        "",
        f"Overall: **{'PASS' if report['passed'] else 'FAIL'}**",
        "",
        "| gate | verdict | requirement |",
        "|---|---|---|",
    ]
    lines += [
        f"| {g['name']} | {'PASS' if g['passed'] else 'FAIL'} | {g['requirement']} |"
        for g in report["gates"]
    ]
    if plot is not None:
        lines += ["", f"![stop while moving]({plot.name})"]
    for g in report["gates"]:
        lines += ["", f"## {g['name']}: {'PASS' if g['passed'] else 'FAIL'}", ""]
        if g.get("detail"):
            lines += [g["detail"], ""]
        for key in ("cases", "rates", "joints"):
            if key in g:
                lines += [_gate_table(g[key]), ""]
        for key, val in g.items():
            if key not in (
                "name",
                "passed",
                "requirement",
                "detail",
                "cases",
                "rates",
                "joints",
                "limits",
            ):
                lines.append(f"- {key}: {val}")
    write_atomic(mp, "\n".join(lines) + "\n")
    return jp, mp


def _gate_table(rows: list[dict]) -> str:
    """Every column any row has (in first-seen order), the stop trace left out."""
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    return markdown_table(rows, [c for c in cols if c != "trace"])
