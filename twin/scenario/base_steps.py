"""Scenario steps that drive the tracked base: ``"base": [{"t": s, "v": m/s, "omega": rad/s}]``.

A scenario with base steps also runs both lidars and their merge; the merged scans are
kept (``merged_scans`` in the summary) and written to ``<out>/merged_scans.npz`` (stamps
[s], angle_min [rad], angle_increment [rad], ranges [m], ``inf`` for no return).

At each step's time ``t`` [s] the base is commanded forward speed ``v`` [m/s] and yaw rate
``omega`` [rad/s] (counter-clockwise); it holds that command until the next step. The
base drive watches both arm owners: a fault or Stop of either latches a base-stop, and the
remaining steps are then refused and reported, never retried. Steps are validated with
the scenario (``rob_twin.twin.scenario.schema.BaseStep``: each tread within its top speed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rob_twin.twin.base.lidar import LidarPair
from rob_twin.twin.base.scan_merge import ScanMerger, mounts_from_model
from rob_twin.twin.base.tread_drive import BaseCommandError, BaseDrive, BaseStoppedError


@dataclass(frozen=True)
class BaseStep:
    t: float  # [s]
    v: float  # [m/s]
    omega: float  # [rad/s]


@dataclass
class BaseScript:
    """Plays ``steps`` on a closed loop's twin through a BaseDrive that watches the owners."""

    loop: object
    steps: list[BaseStep]
    drive: BaseDrive = field(init=False)
    refused: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.drive = BaseDrive(self.loop.twin)
        self.drive.watch_owners(self.loop)
        self.lidars = LidarPair(self.loop.twin, seed=self.loop.config.seed)
        self.merger = ScanMerger(mounts_from_model(self.loop.twin.model)).attach(self.lidars)
        self._next = 0
        self.loop.twin.scheduler.add("base_script", self.drive.config.control_rate_hz, self._tick)

    def _tick(self, now: float) -> None:
        while self._next < len(self.steps) and self.steps[self._next].t <= now + 1e-9:
            step = self.steps[self._next]
            self._next += 1
            try:
                self.drive.command(step.v, step.omega)
            except (BaseStoppedError, BaseCommandError) as err:
                self.refused.append(
                    {"t": step.t, "v": step.v, "omega": step.omega, "why": str(err)}
                )

    def summary(self, out_dir: Path | None = None) -> dict:
        """Steps, refusals, the base-stop cause, the merged scans (count, and the file they
        were written to when ``out_dir`` is given)."""
        merged = self.merger.merged
        out = {
            "steps": len(self.steps),
            "refused": self.refused,
            "base_stop": self.drive.stop_cause,
            "merged_scans": len(merged),
            "unpaired_scans": self.merger.unpaired,
        }
        if out_dir is not None and merged:
            path = Path(out_dir) / "merged_scans.npz"
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(
                path,
                stamps_s=[m.stamp_s for m in merged],
                angle_min_rad=merged[0].angle_min_rad,
                angle_increment_rad=merged[0].angle_increment_rad,
                ranges_m=np.stack([m.ranges for m in merged]),
            )
            out["merged_scans_file"] = str(path)
        return out
