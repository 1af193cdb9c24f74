"""Whether the twin's replay of a recording touches anything: a fit of such a recording is
partly a fit of the contact.

A calibration recording should move the arms through free space: where a link rubs the
body, which samples touch depends on the parameters, so the fit's cost jumps as a
parameter moves, and the contact's friction reads as joint friction (simulated, the
calibration benchmark's OpenArm excitation before it was kept off the torso: right J1
viscous friction fitted 70 % high with an interval that excluded the truth;
``excitation_clearance``). ``replay_contacts`` replays a recording with the fitted values
and lists every geom pair that penetrates (distance below ``-DEPTH_M``) at some sampled
instant and did not already at the first (a gripper's fingers pressed together), with the
share of the samples it touches in and when it first does. ``rob-twin calibrate`` writes
them into its report (``contacts``) and says so. Units: metres, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.models.robot import Robot
from rob_twin.twin.calibration.contact_pairs import pair_distances, pair_name

DEPTH_M = 1e-4  # a pair this far inside each other touches (MuJoCo's soft contact)
SAMPLE_S = 0.01


@dataclass(frozen=True)
class ReplayContact:
    """``pair`` ("geom a vs geom b") touches in ``share`` of the samples [0..1], first at
    ``first_s`` [s] of the replay, at most ``depth_m`` [m] deep."""

    pair: str
    share: float
    first_s: float
    depth_m: float

    def as_dict(self) -> dict:
        return {
            "pair": self.pair,
            "share": round(self.share, 4),
            "first_s": round(self.first_s, 3),
            "depth_m": round(self.depth_m, 5),
        }

    def describe(self) -> str:
        return (
            f"{self.pair} in {100 * self.share:.0f} % of the samples from t={self.first_s:.2f} s "
            f"({1000 * self.depth_m:.1f} mm deep)"
        )


def replay_contacts(
    recording, parameters: dict[str, float] | None, robot: Robot, seconds: float | None = None
) -> list[ReplayContact]:
    """The pairs the twin's replay of ``recording`` with ``parameters`` (None: nominal)
    brings into contact over its first ``seconds`` [s] (None: all), most touching first."""
    from rob_twin.twin.bus.replay import replay

    result = replay(
        recording, seconds=seconds, sample_every_s=SAMPLE_S, parameters=parameters, robot=robot
    )
    model = result.model if result.model is not None else robot.model()
    data = mujoco.MjData(model)

    def touching(qpos: np.ndarray) -> dict[tuple[int, int], float]:
        """{pair: depth [m]} of the pairs penetrating deeper than ``DEPTH_M`` at ``qpos``."""
        data.qpos[:] = qpos
        mujoco.mj_kinematics(model, data)
        return {g: -d for g, d in pair_distances(model, data).items() if d < -DEPTH_M}

    at_start = touching(result.qpos[0])
    count: dict[tuple[int, int], int] = {}
    first: dict[tuple[int, int], float] = {}
    deepest: dict[tuple[int, int], float] = {}
    for t, q in zip(result.times, result.qpos, strict=True):
        for g, depth in touching(q).items():
            if g in at_start:
                continue
            count[g] = count.get(g, 0) + 1
            first.setdefault(g, float(t - result.times[0]))
            deepest[g] = max(deepest.get(g, 0.0), depth)
    n = len(result.times)
    found = [
        ReplayContact(
            pair_name(model, g),
            count[g] / n,
            first[g],
            deepest[g],
        )
        for g in count
    ]
    return sorted(found, key=lambda c: -c.share)
