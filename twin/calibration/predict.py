"""What the twin predicts for a recording, next to what was recorded, joint by joint.

``predict(recording, parameters)`` replays the recording's host commands into a twin with
``parameters`` (``rob_twin.twin.bus.replay.replay``) and lines up, for every drive feedback
frame in the recording, the recorded position and current with the twin's at the same
instant: the frame's host-side stamp minus the arm's feedback delay. Positions are
compared in the drive's frame, as the drive reports them (joint angle minus its zero
offset, times its sign); currents in drive units (torque times the torque constant).
``Prediction.residual()`` is the vector a fit minimises: the predicted position against the
centre of the recorded count's quantisation cell (an Amber drive reports its position
truncated toward zero to a count of 1/128 deg, ``controllers.codec.encode_feedback``: the
true position lies up to a count beyond the recorded one, away from zero, half a count on
average), so that the truncation's bias (half a count of one sign per joint while the
joint stays on one side of zero, which a fit would otherwise take for a gain or a lag)
does not enter the fit; ``JointTrack.position_error`` stays the plain difference. ``robot`` (a
``rob_twin.models.robot.Robot`` with Amber or Damiao drives; None: the default robot): whose
twin replays the recording, and whose channels wire a recording without a sidecar.

Damiao drives answer every command with a state frame (its MST id) whose position is a
16-bit code over [-PMAX, PMAX], truncated (``controllers.damiao_codec.to_code``): the cell
of a recorded code is [code, code + 1) whatever the sign, its centre half a code above the
decoded value, and a count is 2 PMAX / 65535 (0.38 mrad at OpenArm's 12.5 rad). Their
"current" is the reported torque [N m] (a 12-bit code over [-TMAX, TMAX]); the twin's is the
drive's torque, the motor actuator's force.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from rob_twin.controllers.codec import COUNTS_PER_DEGREE, decode_feedback
from rob_twin.controllers.damiao_codec import Scaling, decode_state, looks_like_register_reply
from rob_twin.controllers.damiao_transport import mst_ids
from rob_twin.models.damiao_motors import MOTORS
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import (
    FEEDBACK_IDS,
    Arm,
    arm_actuators,
    arm_joints,
)
from rob_twin.models.robot import Robot, robot_of
from rob_twin.twin.bus.replay import Recording, bus_no, read_recording, replay
from rob_twin.twin.calibration.parameters import damiao_parameters, delays, drive_configs
from rob_twin.twin.drives.amber_drive import DRIVE_FRAME
from rob_twin.twin.drives.amber_robot import robot_channels

POSITION_QUANTUM_RAD = float(np.radians(1.0 / COUNTS_PER_DEGREE))  # one feedback count


class NoFeedbackError(RobTwinError, ValueError):
    """A recording without drive feedback: nothing to compare the twin with."""


@dataclass
class JointTrack:
    """One joint's recorded and predicted feedback at the recorded frames' instants.

    t [s] (the twin's clock), position_rec / position_pred [rad, drive frame],
    current_rec / current_pred [drive units; Damiao: N m]; position_centre [rad]: the centre
    of each recorded position's quantisation cell (None: computed as an Amber drive's)."""

    t: np.ndarray
    position_rec: np.ndarray
    position_pred: np.ndarray
    current_rec: np.ndarray
    current_pred: np.ndarray
    position_centre: np.ndarray | None = None

    @property
    def position_error(self) -> np.ndarray:
        return self.position_pred - self.position_rec

    @property
    def cell_error(self) -> np.ndarray:
        """Predicted position minus the centre of the recorded count's cell [rad]."""
        centre = (
            self.position_centre
            if self.position_centre is not None
            else cell_centre(self.position_rec)
        )
        return self.position_pred - centre


@dataclass
class Prediction:
    """Every joint's track (``tracks[(arm, j)]``), and the replay's figures;
    position_quantum_rad [rad] and current_quantum [drive units]: one count of the recorded
    feedback (the coarsest of the drives')."""

    tracks: dict[tuple[Arm, int], JointTrack]
    simulated_s: float
    wall_s: float
    notes: list[str] = field(default_factory=list)
    position_quantum_rad: float = POSITION_QUANTUM_RAD
    current_quantum: float = 1.0 / 256.0

    def residual(self, current_weight: float = 0.0) -> np.ndarray:
        """Position errors [rad] of every joint (against the centre of each recorded count's
        cell, see the module docstring), then (with ``current_weight`` > 0) current errors
        times the weight [rad per drive unit]."""
        parts = [tr.cell_error for tr in self.tracks.values()]
        if current_weight > 0:
            parts += [
                current_weight * (tr.current_pred - tr.current_rec) for tr in self.tracks.values()
            ]
        return np.concatenate(parts) if parts else np.zeros(0)

    def rms_by_joint(self) -> dict[str, float]:
        """RMS position error per joint [rad], keyed ``right/j1``."""
        return {
            f"{arm.value}/j{j}": float(np.sqrt(np.mean(tr.position_error**2)))
            for (arm, j), tr in self.tracks.items()
        }


def cell_centre(position_rad: np.ndarray) -> np.ndarray:
    """The centre of the quantisation cell of each recorded drive position [rad]: a count
    truncated toward zero stands for [c, c + 1) counts when c > 0, (c - 1, c] when c < 0
    and (-1, 1) at 0."""
    rec = np.asarray(position_rad, float)
    return rec + np.sign(rec) * (POSITION_QUANTUM_RAD / 2.0)


def damiao_scalings(robot: Robot) -> tuple[Scaling, ...]:
    """The factory wire scaling (PMAX/VMAX/TMAX) of each arm joint's motor of ``robot``."""
    return tuple(
        Scaling(m.pmax_rad, m.vmax_rad_s, m.tmax_nm) for m in map(MOTORS.get, robot.motors)
    )


def quanta(robot: Robot | None) -> tuple[float, float]:
    """(position [rad], current [drive units]) of one feedback count of ``robot``'s drives:
    the coarsest joint's (Amber: 1/128 deg and 1/256 unit; Damiao: 2 PMAX / 65535 rad and
    2 TMAX / 4095 N m)."""
    robot = robot_of(robot)
    if robot.family != "damiao":
        return POSITION_QUANTUM_RAD, 1.0 / 256.0
    sc = damiao_scalings(robot)
    return max(s.step("q") for s in sc), max(s.step("tau") for s in sc)


def _damiao_feedback(rec: Recording, shift_s: float, robot: Robot) -> dict[tuple[int, int], list]:
    """{(bus, joint): [(t on the twin's clock, position rad, torque N m, cell centre rad)]} of
    the Damiao state frames in ``rec`` (each joint's MST id, decoded with its motor's
    scaling)."""
    sc = damiao_scalings(robot)
    joint_of = {mst: j for j, mst in enumerate(mst_ids(len(sc)), start=1)}
    out: dict[tuple[int, int], list] = {}
    for f in rec.frames:
        j = joint_of.get(f.arbitration_id)
        if j is None or f.is_extended_id or len(f.data) != 8:
            continue
        if looks_like_register_reply(f.data, j):  # a register answer on the same MST id
            continue
        s = sc[j - 1]
        st = decode_state(f.data, s)
        half = s.pmax_rad / 65535.0  # half a count
        out.setdefault((f.bus, j), []).append(
            (f.timestamp_s + shift_s, st.q_rad, st.tau_nm, st.q_rad + half)
        )
    return out


def _recorded_feedback(rec: Recording, shift_s: float) -> dict[tuple[int, int], list]:
    """{(bus, joint): [(t on the twin's clock, position rad, current)]} of the recording."""
    out: dict[tuple[int, int], list] = {}
    for f in rec.frames:
        if f.arbitration_id in FEEDBACK_IDS and not f.is_extended_id:
            fb = decode_feedback(f.arbitration_id, f.data, DRIVE_FRAME)
            out.setdefault((f.bus, fb.joint), []).append(
                (f.timestamp_s + shift_s, fb.position_rad, fb.current)
            )
    return out


def _wiring(rec: Recording, robot: Robot | None = None) -> dict[int, Arm]:
    """{bus number: arm} of ``rec``: its sidecar's, else ``robot``'s channels."""
    channels = robot_channels(robot_of(robot))
    return rec.sidecar.wiring or {bus_no(channels[a.value]): a for a in Arm}


def predict(
    recording: Recording | str,
    parameters: dict[str, float] | None = None,
    seconds: float | None = None,
    robot: Robot | None = None,
    drive_noise_rad: float = 0.0,
    noise_realisation: int = 0,
) -> Prediction:
    """The twin's prediction of ``recording`` with ``parameters`` (None: the twin as it is),
    on ``robot``'s twin (None: the default robot); drive_noise_rad: the replay's own drive
    noise std [rad on a servo target] and its realisation (``replay``'s; 0: none)."""
    robot = robot_of(robot)
    rec = recording if isinstance(recording, Recording) else read_recording(recording)
    params = dict(parameters or {})
    result = replay(
        rec,
        seconds=seconds,
        sample_every_s=0.001,
        parameters=params or None,
        robot=robot,
        drive_noise_rad=drive_noise_rad,
        noise_realisation=noise_realisation,
    )
    model = result.model
    damiao = robot.family == "damiao"
    if damiao:
        recorded = _damiao_feedback(rec, result.shift_s, robot)
        zeros = {a: p.zero_offset_rad for a, p in damiao_parameters(params, robot).items()}
    else:
        recorded = {
            k: [(*r, None) for r in rows]
            for k, rows in _recorded_feedback(rec, result.shift_s).items()
        }
        configs = drive_configs(params, robot)
    if not recorded:
        ids = "their MST ids" if damiao else "ids 0x91..0x97"
        raise NoFeedbackError(f"{rec.path}: no drive feedback frames ({ids}) to compare")
    wiring = _wiring(rec, robot)
    fb_delay = {arm: d[1] for arm, d in delays(params).items()}
    import mujoco

    tracks: dict[tuple[Arm, int], JointTrack] = {}
    t_end = result.times[-1]
    for bus, arm in wiring.items():
        arm = Arm(arm)
        joints = arm_joints(arm)[: robot.joint_count(arm)]
        qadr = [
            int(model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)])
            for n in joints
        ]
        aid = [
            mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, n)
            for n in arm_actuators(arm)[: len(joints)]
        ]
        for j in range(1, len(joints) + 1):
            rows = [r for r in recorded.get((bus, j), []) if r[0] <= t_end]
            if not rows:
                continue
            t, pos, cur = (np.array(c, float) for c in list(zip(*rows, strict=True))[:3])
            when = np.clip(t - fb_delay[arm], result.times[0], t_end)
            q = np.interp(when, result.times, result.qpos[:, qadr[j - 1]])
            tau = np.interp(when, result.times, result.actuator_force[:, aid[j - 1]])
            if damiao:
                tracks[(arm, j)] = JointTrack(
                    t=t,
                    position_rec=pos,
                    position_pred=q - zeros[arm][j - 1],
                    current_rec=cur,
                    current_pred=tau,
                    position_centre=np.array([r[3] for r in rows], float),
                )
                continue
            cfg = configs[arm][j - 1]
            tracks[(arm, j)] = JointTrack(
                t=t,
                position_rec=pos,
                position_pred=cfg.sign * (q - cfg.zero_offset_rad),
                current_rec=cur,
                current_pred=np.clip(cfg.sign * tau * cfg.amps_per_nm, -127.0, 127.0),
            )
    pq, cq = quanta(robot)
    return Prediction(tracks, result.simulated_s, result.wall_s, list(result.notes), pq, cq)
