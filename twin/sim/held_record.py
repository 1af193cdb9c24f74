"""Recording what the held box feels, every physics step, and the ``held_object`` verdict.

``HeldRecorder(loop, held)`` adds a scheduler task at the physics rate (1 kHz) that records,
from the last step's constraint forces: each hand's force on the box, the internal force
(``GraspWrench.internal_n``: its norm and its squeeze along the hand-to-hand axis), each
grasp's tangential force against its grip capacity (modelled slip,
``rob_twin.twin.sim.held_object``), and both arms' joint torques (``data.actuator_force`` of
the arm actuators) [N, Nm]. ``summary(limits)`` gives the peaks and the verdict: it fails when
the internal force or a joint torque exceeds its limit while the box is held, or a grasp
slips. ``plot(path)`` draws the internal force and the torques over time. Figures are
simulated (``hardware_io: false``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rob_twin.models.names import Arm
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.held_object import HeldObject


@dataclass(frozen=True)
class HeldObjectLimits:
    """internal_force_n: the most internal force the box may feel [N] (ASSUMED for the
    default 1 kg carton: about its own weight, 9.81 N, rounded up; a squeeze or stretch past
    that dents or tears it); torque_fraction: each arm joint's torque may reach
    this fraction of its actuator's force range; slip_allowed: whether a modelled slip
    fails the verdict (default: it does)."""

    internal_force_n: float = 10.0
    torque_fraction: float = 0.9
    slip_allowed: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.internal_force_n) and self.internal_force_n > 0):
            raise TwinInputError("internal_force_n", self.internal_force_n, "finite and > 0 N")
        if not (math.isfinite(self.torque_fraction) and 0 < self.torque_fraction <= 1):
            raise TwinInputError("torque_fraction", self.torque_fraction, "in (0, 1]")


def default_limits() -> HeldObjectLimits:
    return HeldObjectLimits()


class HeldRecorder:
    """Records the held box's forces and the arms' joint torques every physics step."""

    def __init__(self, loop, held: HeldObject):
        self.loop, self.held = loop, held
        model = loop.twin.model
        self.ctrl = {arm: loop.twin.arm_ctrl[arm] for arm in Arm}
        # each arm actuator's force range [Nm]; unbounded (inf) where the model sets none
        # (a generated robot's position servos): those joints are not judged
        self.torque_limit = {
            arm: np.where(
                model.actuator_forcelimited[idx] > 0,
                np.abs(model.actuator_forcerange[idx]).max(axis=1),
                np.inf,
            )
            for arm, idx in self.ctrl.items()
        }
        self.rows: list[np.ndarray] = []  # t, holding r/l, F_r, F_l, internal, squeeze, tan r/l
        self.torques: list[np.ndarray] = []  # joint torques [Nm], right arm's then left's
        loop.twin.scheduler.add("held/record", 1.0 / loop.twin.scheduler.dt, self._record)

    def _record(self, now: float) -> None:
        w = self.held.wrench()
        zero = np.zeros(3)
        row = np.concatenate(
            [
                [now, Arm.RIGHT in w.force, Arm.LEFT in w.force],
                w.force.get(Arm.RIGHT, zero),
                w.force.get(Arm.LEFT, zero),
                w.internal_n,
                [w.squeeze_n],
                [w.tangential_n.get(Arm.RIGHT, 0.0), w.tangential_n.get(Arm.LEFT, 0.0)],
            ]
        )
        self.rows.append(row)
        d = self.loop.twin.data
        self.torques.append(np.concatenate([d.actuator_force[self.ctrl[a]] for a in Arm]))

    def arrays(self) -> dict[str, np.ndarray]:
        """The records as arrays: t [s], force_right/left (n, 3) [N], internal (n, 3) [N],
        internal_norm, squeeze, tangential_right/left [N], torque_right/left (n, joints of the
        arm) [Nm], holding_right/left (bool)."""
        r = np.array(self.rows).reshape(-1, 15)
        nr, nl = len(self.ctrl[Arm.RIGHT]), len(self.ctrl[Arm.LEFT])
        tq = np.array(self.torques).reshape(-1, nr + nl)
        return {
            "t": r[:, 0],
            "holding_right": r[:, 1] > 0,
            "holding_left": r[:, 2] > 0,
            "force_right": r[:, 3:6],
            "force_left": r[:, 6:9],
            "internal": r[:, 9:12],
            "internal_norm": np.linalg.norm(r[:, 9:12], axis=1),
            "squeeze": r[:, 12],
            "tangential_right": r[:, 13],
            "tangential_left": r[:, 14],
            "torque_right": tq[:, :nr],
            "torque_left": tq[:, nr:],
        }

    def summary(self, limits: HeldObjectLimits | None = None) -> dict:
        """Peaks while held and the ``held_object`` verdict (simulated figures)."""
        lim = limits or default_limits()
        a = self.arrays()
        held = a["holding_right"] | a["holding_left"]
        cap = self.held.config.grip_capacity_n
        out: dict = {
            "hardware_io": False,
            "figures": "simulated",
            "box": {
                "mass_kg": self.held.mass_kg,
                "size_m": list(self.held.config.size_m),
                "grip_force_n": self.held.config.grip_force_n,
                "friction": self.held.config.friction,
                "grip_capacity_n": cap,
            },
            "limits": {
                "internal_force_n": lim.internal_force_n,
                "torque_fraction": lim.torque_fraction,
                "slip_allowed": lim.slip_allowed,
            },
            "samples": int(len(a["t"])),
            "held_s": float(held.sum() * self.loop.twin.scheduler.dt),
        }
        failures: list[str] = []
        if not held.any():
            out.update(peak_internal_force_n=0.0, peak_squeeze_n=0.0, slips={}, torques={})
            out["passed"], out["failures"] = True, []
            return out
        t = a["t"][held]
        k = int(np.argmax(a["internal_norm"][held]))
        out["peak_internal_force_n"] = float(a["internal_norm"][held][k])
        out["peak_internal_at_s"] = float(t[k])
        sq = a["squeeze"][held]
        out["peak_squeeze_n"] = float(sq[np.argmax(np.abs(sq))])
        if out["peak_internal_force_n"] > lim.internal_force_n:
            failures.append(
                f"internal force {out['peak_internal_force_n']:.3g} N at t = {t[k]:.3f} s "
                f"exceeds its limit {lim.internal_force_n} N"
            )
        slips = {}
        for arm in Arm:
            on = a[f"holding_{arm.value}"]
            tan = np.where(on, a[f"tangential_{arm.value}"], 0.0)
            over = np.flatnonzero(tan > cap)
            slips[arm.value] = {
                "peak_tangential_n": float(tan.max()),
                "capacity_n": cap,
                "slipped": bool(over.size),
                "first_slip_at_s": float(a["t"][over[0]]) if over.size else None,
            }
            if over.size and not lim.slip_allowed:
                failures.append(
                    f"{arm.value} grasp slips at t = {a['t'][over[0]]:.3f} s: tangential "
                    f"force {tan.max():.3g} N exceeds 2 * friction * grip force = {cap:.3g} N"
                )
        out["slips"] = slips
        torques = {}
        for arm in Arm:
            tq = np.abs(a[f"torque_{arm.value}"][held])
            ratio = tq / self.torque_limit[arm]
            j = int(np.argmax(ratio.max(axis=0)))
            torques[arm.value] = {
                "peak_nm": [round(float(v), 4) for v in tq.max(axis=0)],
                "limit_nm": [
                    float(v) * lim.torque_fraction if np.isfinite(v) else None
                    for v in self.torque_limit[arm]
                ],
                "worst_joint": j + 1,
                "worst_fraction": float(ratio[:, j].max()),
            }
            if ratio[:, j].max() > lim.torque_fraction:
                failures.append(
                    f"{arm.value} j{j + 1} torque {tq[:, j].max():.3g} Nm exceeds "
                    f"{lim.torque_fraction} of its range {self.torque_limit[arm][j]:.3g} Nm"
                )
        out["torques"] = torques
        out["passed"], out["failures"] = not failures, failures
        return out

    def plot(self, path: Path | str, title: str = "held object (simulated)") -> Path | None:
        """Internal force and both arms' joint torques over time, as a PNG; None without
        matplotlib."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return None
        a = self.arrays()
        fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
        axes[0].plot(a["t"], a["internal_norm"], label="|internal| [N]")
        axes[0].plot(a["t"], a["squeeze"], label="squeeze [N]")
        axes[0].legend(loc="upper right")
        for ax, arm in zip(axes[1:], Arm, strict=True):
            tau = np.asarray(a[f"torque_{arm.value}"])
            for j in range(tau.shape[1] if tau.ndim == 2 else 0):  # one line per joint
                ax.plot(a["t"], tau[:, j], lw=1.2, label=f"j{j + 1}")
            ax.set_ylabel(f"{arm.value} arm joint torque [Nm]")
            if tau.ndim == 2 and tau.shape[1]:
                ax.legend(loc="upper right", ncol=tau.shape[1], fontsize=7, title_fontsize=7)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("force [N]")
        axes[0].grid(alpha=0.3)
        axes[-1].set_xlabel("simulated time [s]")
        fig.suptitle(f"{title}; hardware_io: false")
        fig.tight_layout()
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=80)
        plt.close(fig)
        return out
