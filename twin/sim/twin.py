"""The Twin: one MuJoCo model, the data of the thread that owns it, and the scheduler."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.models.loading import apply_home, arm_actuator_indices, arm_qpos_indices, load_scene
from rob_twin.models.names import Arm
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.scheduler import Scheduler


class ThreadOwnershipError(RobTwinError, RuntimeError):
    """An MjData used from a thread that does not own it (DESIGN.md: one thread per MjData)."""


@dataclass(frozen=True)
class TwinConfig:
    seed: int = 0
    control_noise: float = 0.0  # std of pseudorandom noise added to servo targets [rad]
    home: bool = True


def default_config() -> TwinConfig:
    return TwinConfig()


class Twin:
    """ROB in its scene, stepped in lockstep by a scheduler.

    The thread that creates a Twin owns its MjData; ``step`` from another thread raises
    ThreadOwnershipError. Other threads make their own data with ``new_data()``.
    """

    def __init__(
        self,
        config: TwinConfig | None = None,
        model: mujoco.MjModel | None = None,
        data: mujoco.MjData | None = None,
    ):
        """``data``: an MjData of ``model`` to drive (e.g. a ``dm_control.mujoco.Physics``'s);
        a new one by default."""
        self.config = config or default_config()
        self.model = model if model is not None else load_scene()
        self.data = data if data is not None else mujoco.MjData(self.model)
        self._owner = threading.get_ident()
        self.rng = np.random.default_rng(self.config.seed)
        self.scheduler = Scheduler(float(self.model.opt.timestep))
        self.arm_qpos = {arm: arm_qpos_indices(self.model, arm) for arm in Arm}
        self.arm_ctrl = {arm: arm_actuator_indices(self.model, arm) for arm in Arm}
        if self.config.home:
            apply_home(self.model, self.data)
        else:
            mujoco.mj_forward(self.model, self.data)

    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return self.scheduler.time

    def new_data(self) -> mujoco.MjData:
        """A fresh MjData for another thread, copied from this one's current state."""
        data = mujoco.MjData(self.model)
        data.qpos[:] = self.data.qpos
        data.qvel[:] = self.data.qvel
        mujoco.mj_forward(self.model, data)
        return data

    def set_arm_targets(self, arm: Arm, q: np.ndarray) -> None:
        """Command the seven servos of ``arm`` to ``q`` [rad] (clipped to ctrlrange)."""
        q = np.asarray(q, float)
        if q.shape != (7,) or not np.all(np.isfinite(q)):
            raise TwinInputError(
                f"{getattr(arm, 'value', arm)} arm target", q.tolist(), "7 finite values [rad]"
            )
        idx = self.arm_ctrl[arm]
        lo, hi = self.model.actuator_ctrlrange[idx].T
        self.data.ctrl[idx] = np.clip(q, lo, hi)

    def arm_positions(self, arm: Arm) -> np.ndarray:
        """Measured joint angles of ``arm`` [rad]."""
        return self.data.qpos[self.arm_qpos[arm]].copy()

    def step(self, n: int = 1) -> None:
        """Advance ``n`` physics steps, running every due task before each step."""
        if threading.get_ident() != self._owner:
            raise ThreadOwnershipError(
                "Twin.step called from a thread that does not own its MjData"
            )
        noise = self.config.control_noise
        for _ in range(n):
            self.scheduler.run_due()
            if noise > 0:
                saved = self.data.ctrl.copy()
                self.data.ctrl[:] += self.rng.normal(0.0, noise, self.model.nu)
                mujoco.mj_step(self.model, self.data)
                self.data.ctrl[:] = saved
            else:
                mujoco.mj_step(self.model, self.data)
            self.scheduler.step_count += 1

    def run_for(self, seconds: float) -> None:
        self.step(int(round(seconds / self.scheduler.dt)))
