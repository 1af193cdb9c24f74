"""A finished study as a person reads it: ``summary.json`` (hardware_io: false), three
plots and ``report.md``.

Plots: success rate and median plan time against the clearance margin; the plan time
distribution per margin; the goal TCP positions (top and side views) with the failures
marked, so one sees where in the workspace plans fail. Figures are simulated.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from rob_twin.experiments.output import markdown_table, write_json  # noqa: E402
from rob_twin.experiments.study.spec import StudySpec  # noqa: E402
from rob_twin.twin.render.figures import spread_hist  # noqa: E402
from rob_twin.twin.scenario.summary_md import words  # noqa: E402


def statuses_words(statuses: dict[str, int]) -> str:
    """``{"success": 185, "no_path": 15}`` as ``success 185, no_path 15`` (``none`` when
    empty): how a study's status counts read in its report and on the terminal."""
    return words(statuses) if statuses else "none"


def _table(rows: list[dict], columns: list[str] | None = None) -> str:
    """``markdown_table`` of ``rows`` with every cell written as words (no Python repr:
    None is ``—``)."""
    cells = [{k: "—" if v is None else words(v) for k, v in r.items()} for r in rows]
    return markdown_table(cells, columns or (list(rows[0]) if rows else None))


def verdict(rows: list[dict]) -> str:
    """``clean`` (no row raised and some row succeeded), ``errors`` (a row raised: the study
    did not measure what it asked) or ``all failed`` (no row succeeded)."""
    if not any(r["status"] == "success" for r in rows):
        return "all failed"
    return "errors" if any(r["status"] == "error" for r in rows) else "clean"


def _per_margin(rows: list[dict], margins: list[float]) -> list[dict]:
    """Per margin: tasks, successes, errors (rows that raised); ``success_rate`` over the
    planned rows (errors left out; None when every row raised, never 0 %)."""
    out = []
    for m in margins:
        rs = [r for r in rows if r["margin_m"] == m]
        ok = [r for r in rs if r["status"] == "success"]
        planned = [r for r in rs if r["status"] != "error"]
        times = np.array([r["plan_time_s"] for r in rs if r["plan_time_s"] is not None])
        out.append(
            {
                "margin_m": m,
                "tasks": len(rs),
                "success": len(ok),
                "success_rate": round(len(ok) / len(planned), 4) if planned else None,
                "errors": sum(r["status"] == "error" for r in rs),
                "plan_time_ms_median": round(float(np.median(times)) * 1e3, 2)
                if times.size
                else None,
                "plan_time_ms_p95": round(float(np.percentile(times, 95)) * 1e3, 2)
                if times.size
                else None,
                "min_clearance_m": min((r["min_clearance_m"] for r in ok), default=None),
            }
        )
    return out


def summarize(
    spec: StudySpec, rows: list[dict], *, backend: str, wall_s: float, expected: int
) -> dict:
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    times = [r["plan_time_s"] for r in rows if r["plan_time_s"] is not None]
    return {
        "study": spec.name,
        "spec": spec.model_dump(mode="json"),
        "backend": backend,
        "tasks": expected,
        "finished": len(rows),
        "complete": len(rows) == expected,
        "statuses": statuses,
        "success_rate": round(statuses.get("success", 0) / len(rows), 4) if rows else None,
        "errors": statuses.get("error", 0),
        "verdict": verdict(rows),
        "plan_time_s_total": round(float(np.sum(times)), 3),
        "wall_s": round(wall_s, 3),
        "plans_per_s": round(len(rows) / wall_s, 3) if wall_s > 0 else None,
        "per_margin": _per_margin(rows, list(spec.margins_m)),
        "failed_rows": [r["row"] for r in rows if r["status"] != "success"][:50],
    }


def margin_series(per: list[dict]) -> dict[str, np.ndarray]:
    """What the margin plot draws: success [%] and median plan time [ms] per margin (NaN,
    a gap, where no row was planned), and the rows that raised per margin."""
    nan = float("nan")
    return {
        "margin_mm": np.array([p["margin_m"] * 1e3 for p in per]),
        "success_pct": np.array(
            [nan if p["success_rate"] is None else 100 * p["success_rate"] for p in per]
        ),
        "median_ms": np.array(
            [nan if p["plan_time_ms_median"] is None else p["plan_time_ms_median"] for p in per]
        ),
        "errors": np.array([p["errors"] for p in per]),
    }


def _plot_margins(per: list[dict], path: Path) -> None:
    s = margin_series(per)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(s["margin_mm"], s["success_pct"], "o-", color="tab:green", label="success")
    ax.set_xlabel("clearance margin [mm]")
    ax.set_ylabel("success of planned rows [%]", color="tab:green")
    ax.set_ylim(0, 105)
    ax2 = ax.twinx()
    ax2.plot(s["margin_mm"], s["median_ms"], "s--", color="tab:blue")
    ax2.set_ylabel("median plan time [ms]", color="tab:blue")
    bad = s["errors"] > 0
    if bad.any():  # rows that raised: a red cross and their count, never a 0 % point
        for x, n in zip(s["margin_mm"][bad], s["errors"][bad], strict=True):
            ax.axvline(x, color="tab:red", ls=":", lw=1.5)
            ax.annotate(
                f"{n} error rows",
                (x, 97.0),
                ha="right",
                color="tab:red",
                fontsize=8,
                xytext=(-3, 0),
                textcoords="offset points",
            )
        ax.set_title("success, plan time vs margin (simulated; red: error rows)", color="tab:red")
    else:
        ax.set_title("success and plan time vs margin (simulated)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_times(rows: list[dict], margins: list[float], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    data = [
        [
            1e3 * r["plan_time_s"]
            for r in rows
            if r["margin_m"] == m and r["plan_time_s"] is not None
        ]
        for m in margins
    ]
    log = spread_hist(
        ax,
        [d for d in data if d],
        [f"{1e3 * m:g} mm" for m, d in zip(margins, data, strict=True) if d],
    )  # a log axis where one slow row would squash the rest into one bar
    ax.set_xlabel(
        f"plan time [ms]{' (log scale)' if log else ''} (simulated planner, this machine)"
    )
    ax.set_ylabel("tasks")
    if any(data):
        ax.legend(title="margin", fontsize=8)
    else:
        ax.set_title("no row was planned (every row raised)", color="tab:red")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _kind(row: dict) -> str:
    return row["status"] if row["status"] in ("success", "error") else "failure"


def _plot_failures(rows: list[dict], arms: list[str], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, (i, j) in zip(axes, (("x", "y"), ("x", "z")), strict=True):
        for kind, style in (
            ("success", {"c": "0.7", "s": 8, "label": "success"}),
            ("failure", {"c": "tab:red", "s": 18, "marker": "x", "label": "planner failure"}),
            ("error", {"c": "k", "s": 24, "marker": "^", "label": "error (row raised)"}),
        ):
            pts = [
                (r[f"{a}_tcp_{i}"], r[f"{a}_tcp_{j}"])
                for r in rows
                for a in arms
                if _kind(r) == kind and r[f"{a}_tcp_{i}"] is not None
            ]
            if pts:
                ax.scatter(*zip(*pts, strict=True), **style)
        ax.set_xlabel(f"goal TCP {i} [m]")
        ax.set_ylabel(f"goal TCP {j} [m]")
        ax.set_aspect("equal", adjustable="datalim")
    axes[0].set_title("top view")
    axes[1].set_title("side view")
    axes[0].legend(fontsize=8)
    failed = sum(_kind(r) == "failure" for r in rows)
    errors = sum(_kind(r) == "error" for r in rows)
    fig.suptitle(
        f"where goals fail: {failed} planner failures, {errors} error rows of {len(rows)} "
        "tasks (world frame, simulated)",
        color="tab:red" if errors else "k",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


PLOTS = {
    "margins": "success_vs_margin.png",
    "times": "plan_times.png",
    "failures": "failure_map.png",
}


def write_report(
    spec: StudySpec, rows: list[dict], summary: dict, out_dir: Path, spec_path: str
) -> dict:
    """Write plots, ``summary.json`` and ``report.md`` into ``out_dir``; return the stamped
    summary."""
    _plot_margins(summary["per_margin"], out_dir / PLOTS["margins"])
    _plot_times(rows, list(spec.margins_m), out_dir / PLOTS["times"])
    _plot_failures(rows, list(spec.arms), out_dir / PLOTS["failures"])
    summary = dict(
        summary,
        plots={k: str(out_dir / v) for k, v in PLOTS.items()},
        table=str(out_dir / "rows.csv"),
    )
    data = write_json(out_dir / "summary.json", summary)
    failed = [r for r in rows if r["status"] != "success"][:20]
    lines = [
        f"# Study `{spec.name}` (simulated)",
        "",
        "hardware_io: false. Figures are from the ArmGroup planner on the MuJoCo model, "
        "not from a physical robot.",
        "",
        f"{summary['finished']} of {summary['tasks']} tasks finished on {summary['backend']} in "
        f"{summary['wall_s']} s ({words(summary['plans_per_s'])} plans/s); "
        f"statuses: {statuses_words(summary['statuses'])}; verdict: **{summary['verdict']}**"
        + (
            f" ({summary['errors']} error rows: they raised before planning, so the study "
            "did not measure them; see the failed rows below)."
            if summary["errors"]
            else "."
        ),
        "",
        _table(summary["per_margin"]),
        "",
        f"![success and plan time vs margin]({PLOTS['margins']})",
        "",
        f"![plan time distribution]({PLOTS['times']})",
        "",
        f"![where goals fail]({PLOTS['failures']})",
        "",
    ]
    if failed:
        lines += [
            f"Failed rows (first 20; replay one with `rob-twin study {spec_path} --replay ROW`):",
            "",
            _table(
                failed, ["row", "pair", "margin_m", "goal_seed", "plan_seed", "status", "error"]
            ),
        ]
    (out_dir / "report.md").write_text("\n".join(lines) + "\n")
    return data
