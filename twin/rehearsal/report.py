"""The rehearsal's report: ``rehearsal.json``, ``rehearsal.md`` and ``stopping.png``
(simulated; written with the project's report helpers in ``rob_twin.twin.scenario.report``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rob_twin.twin.render.figures import save_png
from rob_twin.twin.scenario.report import EVIDENCE, json_default, markdown_table
from rob_twin.twin.scenario.run_folder import write_atomic, write_json_atomic
from rob_twin.twin.scenario.summary_md import words

NOTHING = "—"  # an empty cell or a figure with no value (None)
_ROW_KEYS = ("cases", "rates", "joints")  # a gate's rows: each passed / ok or not
_NOT_FIGURES = ("passed", "ok", "trace", "limits")  # left out of a row's words


def _cell(value: object) -> str:
    return NOTHING if value is None or value == "" else words(value).replace("|", "/")


def _row_words(row: dict) -> str:
    """A gate row as words: its name (``case``, or arm and joint, or rate) first, then its
    figures, e.g. ``partial batch (3 of 7 frames): expected partial_output, latched none``."""
    name_keys = [k for k in ("case", "arm", "joint", "rate_hz") if k in row]
    name = " ".join(
        f"joint {row[k]}" if k == "joint" else f"{row[k]} Hz" if k == "rate_hz" else str(row[k])
        for k in name_keys
    )
    figures = ", ".join(
        f"{k.replace('_', ' ')} {_cell(v)}"
        for k, v in row.items()
        if k not in (*name_keys, *_NOT_FIGURES)
    )
    return f"{name}: {figures}" if name else figures


def first_failure(gate: dict, limit: int = 300) -> str:
    """Why ``gate`` (a report's gate dict) failed, in one line: its ``detail`` when it has
    one, else its first failing row (a case, rate or joint whose ``passed`` / ``ok`` is
    false) as words, else its first limit that disagrees; ``""`` for a passed gate."""
    if gate.get("passed"):
        return ""
    text = gate.get("detail") or ""
    if not text:
        for key in _ROW_KEYS:
            bad = [
                r
                for r in gate.get(key) or ()
                if isinstance(r, dict) and (r.get("passed") is False or r.get("ok") is False)
            ]
            if bad:
                text = _row_words(bad[0]) + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
                break
    if not text:
        bad = [r for r in gate.get("limits") or () if r.get("consistent") is False]
        if bad:
            text = "limits disagree: " + _row_words(bad[0])
    if not text:
        rows = [r for key in _ROW_KEYS for r in gate.get(key) or () if isinstance(r, dict)]
        text = next((_row_words(r) for r in rows if "passed" not in r and "ok" not in r), "")
        text = text or "no failing figure named: see the gate's figures in the report"
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
        if not g["passed"]:
            lines += [f"First failure: {first_failure(g, limit=2000)}", ""]
        elif g.get("detail"):
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
                lines.append(f"- {key.replace('_', ' ')}: {_cell(val)}")
    write_atomic(mp, "\n".join(lines) + "\n")
    return jp, mp


def _gate_table(rows: list[dict]) -> str:
    """Every column any row has (in first-seen order), the stop trace left out."""
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    cells = [{c: _cell(v) for c, v in r.items()} for r in rows]
    return markdown_table(cells, [c for c in cols if c != "trace"])
