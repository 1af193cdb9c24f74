"""Joint-state datasets in the LeRobot-style layout ``openarm_dataset`` writes, read as a
recording the twin can replay and a fit can use.

One episode folder holds, per arm (``right``, ``left``):

- ``obs/arms/ARM/state.parquet``: a ``timestamp`` column (datetime, or seconds) and list
  columns ``qpos`` [rad], optionally ``qvel`` [rad/s] and ``qtorque`` [N m], 8 values each
  (joints 1-7, then the gripper);
- ``action/arms/ARM/state.parquet`` (a ``qpos`` list column) or ``action/arms/ARM/qpos.parquet``
  (a ``value`` list column): the commanded joint positions [rad] with their timestamps.

``read_joint_dataset(folder, robot)`` turns an episode of ``robot`` (a
``rob_twin.models.robot.Robot`` with Amber drives; None: the default robot, ROB) into a
``Recording``: each action row becomes the host's command frames (the Amber codec, default
signs, no joint bounds on the host's side: the drive clamps) at its time on the arm's bus
(the robot file's channel: ROB's ``right`` on CAN10, ``left`` on CAN11), each observation
row the drives' feedback frames (position in the drive frame, current = torque x the
robot's drive's assumed torque constant), and the first observation the twin's initial
joint state (on the robot's model, the rest at its ``home`` keyframe; its velocity from the
``qvel`` column when there is one, else at rest). Timestamps start at 0 at the first row.
A missing ``qtorque`` or ``qvel`` column reads as zeros; one that is there must be valid
like any other (a NaN torque is an error, not a silent zero current).

The same data read from a dataset and from a bus recording fit alike: the reader adds no
frames and moves none (each row's frames at its own time, every joint of a row at one
instant, as a recording has them), so the fit's residual is the recording's. What made a
fit of the same motion take a different number of rollouts from parquet and from ``.log``
was the solver, not the reader: at the optimum it raised its regulariser in a hundred
small steps before it gave up, and whether and when it got there hung on the residual's
last bits (the first observation's sub-count position, which a bus recording's sidecar
holds exactly and a dataset does not). ``fit`` now stops where the step left is a tenth
of a standard error (``fit.CONVERGED_SIGMA``): 6 s of both arms with
eight hidden parameters, as ``.log`` and as the dataset converted from it, took 161 and
67 rollouts before and 59 and 59 after, to values within their intervals of each
other. Read with pyarrow; a missing file or column, a non-finite value or a row
of the wrong length is a ``DatasetError`` naming the file, the column and the row.
"""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.controllers.codec import CodecConfig, encode_feedback, encode_joint
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.loading import apply_home
from rob_twin.models.names import JOINTS_PER_ARM, Arm, arm_joints
from rob_twin.models.robot import Robot, robot_of
from rob_twin.twin.bus.recording import STATE_SPEC
from rob_twin.twin.bus.replay import RecordedFrame, Recording, bus_no
from rob_twin.twin.drives.amber_drive import DRIVE_FRAME
from rob_twin.twin.drives.amber_robot import amber_drive_configs, robot_channels

MAX_ROWS = 2_000_000
# the host's codec without its joint bounds: a dataset's action beyond a bound is sent as
# recorded and the drive clamps it (its LIMIT status), as a real drive would
HOST_CODEC = CodecConfig().unbounded()


class DatasetError(InvalidValueError):
    """A joint-state dataset that cannot be read as a recording."""

    subject = "dataset"


def is_joint_dataset(path: Path | str) -> bool:
    """True when ``path`` is a folder laid out as an episode (``obs/arms/*/state.parquet``)."""
    path = Path(path)
    return path.is_dir() and any(path.glob("obs/arms/*/state.parquet"))


def _seconds(values: list) -> np.ndarray:
    """Timestamps as seconds: datetimes (ns since the epoch) or numbers."""
    arr = np.asarray(values)
    if np.issubdtype(arr.dtype, np.datetime64):
        return arr.astype("datetime64[ns]").astype(np.int64) / 1e9
    if arr.dtype == object and arr.size and hasattr(arr[0], "timestamp"):
        return np.array([v.timestamp() for v in arr], float)
    return arr.astype(float)


def _table(path: Path, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(timestamps [s], values (rows x 7) [column's unit]) of ``column`` in ``path``."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise DatasetError(str(path), "missing", "a parquet file of the episode layout")
    try:
        table = pq.read_table(path)
    except Exception as err:  # noqa: BLE001 - pyarrow's many error types, named in one line
        raise DatasetError(str(path), "unreadable", f"a parquet file ({err})") from None
    if table.num_rows > MAX_ROWS:
        raise DatasetError(str(path), f"{table.num_rows} rows", f"at most {MAX_ROWS}")
    for name in ("timestamp", column):
        if name not in table.column_names:
            raise DatasetError(f"{path.name}: column", name, f"one of {table.column_names}")
    t = _seconds(table.column("timestamp").to_numpy(zero_copy_only=False))
    rows = table.column(column).to_pylist()
    out = np.zeros((len(rows), JOINTS_PER_ARM))
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) < JOINTS_PER_ARM:
            raise DatasetError(f"{path.name}: {column}[{i}]", row, f">= {JOINTS_PER_ARM} values")
        values = [float(v) if v is not None else math.nan for v in row[:JOINTS_PER_ARM]]
        if not all(math.isfinite(v) for v in values):
            raise DatasetError(f"{path.name}: {column}[{i}]", row, "finite numbers")
        out[i] = values
    if len(t) and not np.all(np.isfinite(t)):
        raise DatasetError(f"{path.name}: timestamp", "not finite", "finite times")
    if len(t) > 1 and np.any(np.diff(t) < 0):
        raise DatasetError(f"{path.name}: timestamp", "going backwards", "non-decreasing times")
    return t, out


def _action(folder: Path, arm: str) -> tuple[np.ndarray, np.ndarray]:
    state = folder / "action" / "arms" / arm / "state.parquet"
    if state.is_file():
        return _table(state, "qpos")
    return _table(folder / "action" / "arms" / arm / "qpos.parquet", "value")


def read_joint_dataset(folder: Path | str, robot: Robot | None = None) -> Recording:
    """The episode at ``folder`` of ``robot`` (None: the default robot) as a recording (see
    the module docstring)."""
    robot = robot_of(robot)
    folder = Path(folder)
    arms = sorted(p.name for p in (folder / "obs" / "arms").glob("*") if p.is_dir())
    known = [a for a in arms if a in (Arm.RIGHT.value, Arm.LEFT.value)]
    if not known:
        raise DatasetError(f"{folder}: obs/arms", arms, "'right' and/or 'left'")
    drives = amber_drive_configs(robot)
    channels = robot_channels(robot)
    frames: list[RecordedFrame] = []
    starts = []
    first_q: dict[str, np.ndarray] = {}
    data = {}
    first_v: dict[str, np.ndarray] = {}
    for arm in known:
        obs_path = folder / "obs" / "arms" / arm / "state.parquet"
        t_obs, q = _table(obs_path, "qpos")
        tau = _optional(obs_path, "qtorque", q)
        qvel = _optional(obs_path, "qvel", q)
        t_act, action = _action(folder, arm)
        data[arm] = (t_obs, q, tau, t_act, action)
        starts += [t_obs[0]] if len(t_obs) else []
        starts += [t_act[0]] if len(t_act) else []
        if len(q):
            first_q[arm] = q[0]
            first_v[arm] = qvel[0]
    if not starts:
        raise DatasetError(str(folder), "no rows", "observations and actions")
    t0 = min(starts)
    for arm, (t_obs, q, tau, t_act, action) in data.items():
        bus = bus_no(channels[arm])
        amps = [c.amps_per_nm for c in drives[Arm(arm)]]
        for t, row in zip(t_act, action, strict=True):
            for j in range(1, JOINTS_PER_ARM + 1):
                fr = encode_joint(j, float(row[j - 1]), HOST_CODEC)
                frames.append(RecordedFrame(float(t - t0), bus, fr.arbitration_id, fr.data))
        for t, row, trow in zip(t_obs, q, tau, strict=True):
            for j in range(1, JOINTS_PER_ARM + 1):
                current = max(-127.0, min(127.0, float(trow[j - 1]) * amps[j - 1]))
                fr = encode_feedback(j, float(row[j - 1]), current=current, config=DRIVE_FRAME)
                frames.append(RecordedFrame(float(t - t0), bus, fr.arbitration_id, fr.data))
    frames.sort(key=lambda f: f.timestamp_s)
    return Recording(folder, frames, meta=_sidecar(first_q, frames, robot, first_v))


def _optional(path: Path, column: str, like: np.ndarray) -> np.ndarray:
    """``column`` of ``path`` (rows x 7), zeros like ``like`` when the file has no such
    column; a column that is there is checked like any other (DatasetError)."""
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception:  # noqa: BLE001 - unreadable: _table already said so for qpos
        names = []
    if column not in names:
        return np.zeros_like(like)
    return _table(path, column)[1]


def _sidecar(
    first_q: dict[str, np.ndarray],
    frames: list[RecordedFrame],
    robot: Robot,
    first_v: dict[str, np.ndarray] | None = None,
) -> dict:
    """The sidecar a recording of this episode would carry: ``robot``'s twin starts where the
    first observation puts each arm, moving as its ``qvel`` says (``first_v``; at rest
    without); each arm on the robot's channel."""
    model = robot.model()
    data = mujoco.MjData(model)
    apply_home(model, data)
    data.qvel[:] = 0.0
    for arm, q in first_q.items():
        v = (first_v or {}).get(arm, np.zeros_like(q))
        for name, value, speed in zip(arm_joints(arm), q, v, strict=True):
            data.qpos[model.joint(name).qposadr[0]] = value
            data.qvel[model.joint(name).dofadr[0]] = speed
    mujoco.mj_forward(model, data)
    state = np.zeros(mujoco.mj_stateSize(model, STATE_SPEC))
    mujoco.mj_getState(model, data, state, STATE_SPEC)
    return {
        "hardware_io": False,
        "evidence_class": "a joint-state dataset read as a recording",
        "initial_state": state.tolist(),
        "frames": len(frames),
        "first_frame_sim_s": 0.0,
        "feedback_rate_hz": 100.0,
        "wiring": {str(bus_no(ch)): arm for arm, ch in robot_channels(robot).items()},
    }


def read_input(path: Path | str, robot: Robot | None = None) -> Recording:
    """A bus recording (``.log``/``.asc``/``.blf``/``.mf4``) or a joint-state dataset episode
    folder of ``robot`` (None: the default robot), as a recording: what ``calibrate`` and
    ``compare`` take."""
    from rob_twin.twin.bus.replay import read_recording

    return read_joint_dataset(path, robot) if is_joint_dataset(path) else read_recording(path)


def input_sha256(path: Path | str) -> str:
    """sha256 of a recording file, or of a dataset folder's parquet files (names and bytes,
    in sorted order)."""
    import hashlib

    from rob_twin.twin.calibration.calibration_file import file_sha256

    path = Path(path)
    if not path.is_dir():
        return file_sha256(path)
    h = hashlib.sha256()
    for part in sorted(path.rglob("*.parquet")):
        h.update(str(part.relative_to(path)).encode())
        h.update(bytes.fromhex(file_sha256(part)))
    return h.hexdigest()
