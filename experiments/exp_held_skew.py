"""Experiment ``held-skew``: the peak internal force on a box both hands carry when the two arms'
commands of one lockstep move are skewed by 0, 5, 20 and 47 ms.

Both hands grasp a 1 kg box (weld grasps, ``rob_twin.twin.sim.held_object``) and carry it
5 cm forward and 10 cm up along one lockstep Cartesian plan (``rob_twin.twin.sim.held_carry``).
Skew 0 is the synchronized executor's one shared start stamp; a skew is independent dispatch
with the left arm's commands that much late (47 ms: seed 002's cross-arm latency). Per skew
and robot: the peak internal force (``0.5 * (f_right - f_left)``, its norm) and squeeze
during the carry (and over the whole hold, the grasp included),
the worst joint torque as a fraction of its range, modelled slip and the ``held_object``
verdict under its default limits. Figures are simulated (``hardware_io: false``).
"""

from __future__ import annotations

from rob_twin.experiments.output import OUT_DIR, markdown_table, write_experiment
from rob_twin.experiments.registry import experiment
from rob_twin.models.names import DEFAULT_ROBOT
from rob_twin.twin.rehearsal.gates import RehearsalConfig
from rob_twin.twin.rehearsal.held_gate import HeldGateConfig, held_carry_run
from rob_twin.twin.sim.closed_loop import ClosedLoopConfig
from rob_twin.twin.sim.loops import loop_config

SKEWS_MS = (0.0, 5.0, 20.0, 47.0)


def base_config(robot: str, seed: int) -> ClosedLoopConfig:
    """The robot's default closed loop (no bus timing: the skew is the variable here); any
    robot with CAN drives (a shipped name or a robot file)."""
    return loop_config(robot, "experiment held-skew", seed=seed)


def skew_row(robot: str, skew_ms: float, seed: int) -> dict:
    """One carry of ``robot`` (a shipped name or a robot file) with the left arm ``skew_ms``
    late (each robot's own arm kinematics plan the carry)."""
    s = held_carry_run(
        RehearsalConfig(base=base_config(robot, seed)), HeldGateConfig(skew_s=skew_ms * 1e-3)
    )
    worst = max(s["torques"].values(), key=lambda t: t["worst_fraction"])
    return {
        "robot": robot,
        "skew_ms": skew_ms,
        "carry_peak_internal_n": round(s["carry_peak_internal_force_n"], 3),
        "carry_peak_squeeze_n": round(s["carry_peak_squeeze_n"], 3),
        "peak_internal_n": round(s["peak_internal_force_n"], 3),
        "worst_torque_fraction": round(worst["worst_fraction"], 3),
        "slipped": any(v["slipped"] for v in s["slips"].values()),
        "gate_passed": s["passed"],
        "failures": s["failures"],
    }


def plot(rows: list[dict], path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for robot in dict.fromkeys(r["robot"] for r in rows):
        mine = [r for r in rows if r["robot"] == robot]
        skews, peaks = [r["skew_ms"] for r in mine], [r["carry_peak_internal_n"] for r in mine]
        ax.plot(skews, peaks, "o-", label=robot)
    ax.axhline(HeldGateConfig().limits.internal_force_n, color="r", ls="--", label="gate limit")
    ax.set_xlabel("left arm's command skew [ms]")
    ax.set_ylabel("peak internal force during the carry [N]")
    ax.set_title("held box, lockstep carry (simulated; hardware_io: false)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return str(path)


@experiment("held-skew")
def run(
    seed: int = 0,
    skews_ms: tuple[float, ...] = SKEWS_MS,
    robots: tuple[str, ...] = (DEFAULT_ROBOT,),
) -> dict:
    """The skew table on ``robots`` (default ROB; ``("rob", "openarm")`` or robot files with CAN
    drives also run: each carry is planned with the robot's own arm kinematics)."""
    rows = [skew_row(robot, skew, seed) for robot in robots for skew in skews_ms]
    png = plot(rows, OUT_DIR / "experiments" / "held-skew" / "peak_internal_force.png")
    cols = [
        "robot",
        "skew_ms",
        "carry_peak_internal_n",
        "carry_peak_squeeze_n",
        "peak_internal_n",
        "worst_torque_fraction",
        "slipped",
        "gate_passed",
    ]
    result = {
        "experiment": "held-skew",
        "figures": "simulated",
        "seed": seed,
        "carry": {"translation_m": list(HeldGateConfig().translation_m)},
        "limits": vars(HeldGateConfig().limits),
        "rows": rows,
        "plot": png,
    }
    return write_experiment("held-skew", result, markdown_table(rows, cols))
