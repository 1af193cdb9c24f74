"""The ``ideal`` drive family: a planned motion executed by position servos, no CAN model.

For robots a robot file drives with ``family = "ideal"`` (``rob_twin.models.robot_model``:
each arm joint has a position servo, ``ctrl`` = joint position [rad]). ``run_ideal`` plays a
planner ``Plan`` on its own ``MjData`` of the canonical model: at every physics step each
moving joint's servo target is the plan's position linearly interpolated between its
samples (the plan's 125 Hz time base), then held at the last sample for ``settle_s``.
Every other position actuator (grippers, idle arms) holds where its joint starts. No
owner, codec or bus runs: what comes back is what the servos did with the plan.

Returns the measured joint trajectory at every physics step, the commanded one and the
tracking error (measured - commanded). A run whose physics diverges raises
``IdealRunDivergedError`` (nothing is retried). Simulated figures; ``hardware_io`` is False.
Units: seconds, radians.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.twin.errors import TwinInputError

SETTLE_S = 0.5  # hold at the last sample after the plan [s]
MAX_DURATION_S = 600.0  # a plan longer than this is not an execution to simulate [s]


class IdealRunError(TwinInputError):
    """A plan, start state or setting the ideal runner refuses (state unchanged)."""

    subject = "ideal run"


class IdealRunDivergedError(RobTwinError):
    """The physics diverged during the run (MuJoCo's bad-acceleration warning or a non-finite
    joint position): servo gains too stiff for the model's time step. Not retried."""


@dataclass(frozen=True)
class IdealConfig:
    """settle_s: hold time after the plan's last sample [s], in [0, 60]."""

    settle_s: float = SETTLE_S

    def __post_init__(self) -> None:
        s = self.settle_s
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 <= s <= 60:
            raise IdealRunError("settle_s", s, "a number of seconds in [0, 60]")


def default_config() -> IdealConfig:
    return IdealConfig()


@dataclass(frozen=True)
class IdealExecution:
    """One simulated execution: ``t`` [s] (M,) physics step times from the plan's start;
    ``commanded`` / ``measured`` (M, n) servo targets and joint positions [rad] of
    ``joint_names`` (the plan's moving arms, in plan order)."""

    t: np.ndarray
    joint_names: tuple[str, ...]
    commanded: np.ndarray
    measured: np.ndarray
    plan_duration_s: float
    hardware_io: bool = False

    @property
    def tracking_error(self) -> np.ndarray:
        """measured - commanded [rad], (M, n)."""
        return self.measured - self.commanded

    @property
    def max_error_rad(self) -> float:
        """Largest |tracking error| over every step and joint [rad]."""
        return float(np.abs(self.tracking_error).max())

    @property
    def final_error_rad(self) -> float:
        """Largest |measured - commanded| at the last step (after settling) [rad]."""
        return float(np.abs(self.tracking_error[-1]).max())

    def summary(self) -> dict:
        err = self.tracking_error
        return {
            "simulated": True,
            "hardware_io": self.hardware_io,
            "steps": int(self.t.size),
            "plan_duration_s": self.plan_duration_s,
            "max_tracking_error_rad": self.max_error_rad,
            "rms_tracking_error_rad": float(np.sqrt(np.mean(err**2))),
            "final_error_rad": self.final_error_rad,
        }


def _plan_arrays(plan) -> tuple[np.ndarray, tuple[str, ...], np.ndarray]:
    """(t (N,), joint names, q (N, n)) of ``plan``, checked."""
    try:
        t = np.asarray(plan.t, dtype=float)
        names = tuple(j for a in plan.arms.values() for j in a.joint_names)
        q = np.asarray(plan.stacked("q"), dtype=float)
    except (AttributeError, TypeError, ValueError):
        raise IdealRunError("plan", plan, "a planners Plan (t, arms, stacked)") from None
    if t.ndim != 1 or t.size < 1 or q.shape != (t.size, len(names)) or not names:
        raise IdealRunError("plan shape", (t.shape, q.shape), "t (N,) and q (N, joints)")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(q))):
        raise IdealRunError("plan values", "non-finite", "finite t [s] and q [rad]")
    if t[0] != 0.0 or np.any(np.diff(t) <= 0):
        raise IdealRunError("plan t", t[:3].tolist(), "starting at 0 s, strictly increasing")
    if t[-1] > MAX_DURATION_S:
        raise IdealRunError("plan duration", float(t[-1]), f"<= {MAX_DURATION_S} s")
    return t, names, q


def _servo_of(model: mujoco.MjModel, joint: str) -> tuple[int, int]:
    """(qpos address, actuator id) of ``joint`` and its one position servo."""
    jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint)
    hinge_or_slide = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    if jid < 0 or int(model.jnt_type[jid]) not in hinge_or_slide:
        raise IdealRunError("plan joint", joint, "a hinge or slide joint of the model")
    acts = [
        i
        for i in range(model.nu)
        if int(model.actuator_trntype[i]) == int(mujoco.mjtTrn.mjTRN_JOINT)
        and int(model.actuator_trnid[i, 0]) == jid
        and _is_position_servo(model, i)
    ]
    if len(acts) != 1:
        raise IdealRunError(
            f"position servos of {joint}", len(acts), "exactly 1 (drive family 'ideal')"
        )
    return int(model.jnt_qposadr[jid]), acts[0]


def _is_position_servo(model: mujoco.MjModel, i: int) -> bool:
    kp = float(model.actuator_gainprm[i, 0])
    return (
        int(model.actuator_gaintype[i]) == int(mujoco.mjtGain.mjGAIN_FIXED)
        and int(model.actuator_biastype[i]) == int(mujoco.mjtBias.mjBIAS_AFFINE)
        and kp > 0
        and math.isclose(float(model.actuator_biasprm[i, 1]), -kp)
    )


def _hold_others(model: mujoco.MjModel, data: mujoco.MjData, driven: set[int]) -> None:
    """Every other joint position servo's target := its joint's start position."""
    for i in range(model.nu):
        if i in driven or not _is_position_servo(model, i):
            continue
        if int(model.actuator_trntype[i]) != int(mujoco.mjtTrn.mjTRN_JOINT):
            continue
        q = data.qpos[model.jnt_qposadr[model.actuator_trnid[i, 0]]]
        lo, hi = model.actuator_ctrlrange[i]
        data.ctrl[i] = np.clip(q, lo, hi) if model.actuator_ctrllimited[i] else q


def _step_through(model, data, act, qadr, commanded, measured, warnings: list[str]) -> None:
    """One physics step per row of ``commanded``; ``measured`` filled in place."""
    bad_qacc = int(mujoco.mjtWarning.mjWARN_BADQACC)
    dt = float(model.opt.timestep)
    for i in range(len(commanded)):
        data.ctrl[act] = commanded[i]
        mujoco.mj_step(model, data)
        measured[i] = data.qpos[qadr]
        if data.warning[bad_qacc].number > 0 or not np.all(np.isfinite(measured[i])):
            raise IdealRunDivergedError(
                f"ideal run diverged at t={(i + 1) * dt:.4f} s (step {i + 1} of "
                f"{len(commanded)}, dt={dt} s, integrator "
                f"{mujoco.mjtIntegrator(model.opt.integrator).name}; MuJoCo: "
                f"{'; '.join(warnings) or 'non-finite qpos'}); valid: servo kp / kv that "
                "the model's time step integrates stably"
            )


def run_ideal(
    model: mujoco.MjModel,
    plan,
    start_qpos: np.ndarray | None = None,
    config: IdealConfig | None = None,
) -> IdealExecution:
    """Execute ``plan`` with the model's position servos; see the module docstring.

    model: the canonical model (not modified); plan: a ``rob_twin.planners.plan.Plan``;
    start_qpos: the full state (nq,) the plan starts from (the planning group's
    ``reference_qpos``; default the model's ``qpos0``) with the moving joints at the plan's
    first sample; config: ``default_config()``. IdealRunError on bad input.
    """
    config = config or default_config()
    if not isinstance(config, IdealConfig):
        raise IdealRunError("config", config, "an IdealConfig or None")
    t_plan, names, q_plan = _plan_arrays(plan)
    servos = [_servo_of(model, j) for j in names]
    try:
        start = model.qpos0.copy() if start_qpos is None else np.asarray(start_qpos, dtype=float)
    except (TypeError, ValueError):
        raise IdealRunError("start_qpos", start_qpos, f"({model.nq},) finite values") from None
    if start.shape != (model.nq,) or not np.all(np.isfinite(start)):
        raise IdealRunError("start_qpos", start.shape, f"({model.nq},) finite values")
    qadr = np.array([s[0] for s in servos])
    act = np.array([s[1] for s in servos])
    data = mujoco.MjData(model)
    data.qpos[:] = start
    data.qpos[qadr] = q_plan[0]
    _hold_others(model, data, set(act.tolist()))
    dt = float(model.opt.timestep)
    steps = int(math.ceil((t_plan[-1] + config.settle_s) / dt))
    t = np.arange(1, steps + 1) * dt
    commanded = np.column_stack([np.interp(t, t_plan, q_plan[:, k]) for k in range(len(names))])
    measured = np.empty_like(commanded)
    mujoco.mj_forward(model, data)
    warnings: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(warnings.append)  # in the error, not in MUJOCO_LOG.TXT
    try:
        _step_through(model, data, act, qadr, commanded, measured, warnings)
    finally:
        mujoco.set_mju_user_warning(previous)
    return IdealExecution(t, names, commanded, measured, float(t_plan[-1]))
