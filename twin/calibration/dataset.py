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

Bounds, checked before anything is replayed (each a ``DatasetError``, exit 2, naming the
field, the value and the valid range):

- rows: all the episode's observation and action rows together at most
  ``max_rows()`` (714,285: each row becomes seven frames, and a replay reads at most
  ``ReplayConfig.max_frames``, 5,000,000), counted from the parquet footers before any
  column is read (a 1.5 million row episode is refused in well under a second instead
  of converting for minutes);
- ``qpos`` and the actions' positions: within +-``MAX_POSITION_RAD`` (4.468 rad: the
  feedback and command frames carry counts -32766..32768 of 1/128 deg, under either
  installation sign);
- ``qvel``: within +-``MAX_VELOCITY_RAD_S`` (100 rad/s, about five times the fastest
  drive's no-load speed); ``qtorque``: finite (the current it implies is clamped to the
  drive's +-127 units, as a drive would).

The time an episode spans is bounded where every recording's is, by the replay
(``ReplayConfig.max_span_s``, 600 s, after ``--seconds``).
"""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.controllers.codec import (
    COUNTS_PER_DEGREE,
    MAX_COUNT,
    MIN_COUNT,
    CodecConfig,
    encode_feedback,
    encode_joint,
)
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.loading import apply_home
from rob_twin.models.names import JOINTS_PER_ARM, Arm
from rob_twin.models.robot import Robot, robot_of
from rob_twin.twin.bus.recording import STATE_SPEC
from rob_twin.twin.bus.replay import RecordedFrame, Recording, bus_no
from rob_twin.twin.bus.replay import default_config as replay_limits
from rob_twin.twin.drives.amber_drive import DRIVE_FRAME
from rob_twin.twin.drives.amber_robot import amber_drive_configs, robot_channels

MAX_ROWS = 2_000_000
# a position both frames carry under either sign: counts -32766..32768 of 1/128 deg [rad]
MAX_POSITION_RAD = math.radians(min(-MIN_COUNT, MAX_COUNT) / COUNTS_PER_DEGREE)  # 4.468 rad
MAX_VELOCITY_RAD_S = 100.0  # |qvel|: about five times the fastest drive's no-load speed
# the valid range of each column [its unit]; None: any finite number
COLUMN_LIMITS = {
    "qpos": (MAX_POSITION_RAD, "rad, the positions the bus frames carry"),
    "value": (MAX_POSITION_RAD, "rad, the positions the bus frames carry"),
    "qvel": (MAX_VELOCITY_RAD_S, "rad/s"),
    "qtorque": None,
}
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
    _check_range(path, column, out)
    if len(t) and not np.all(np.isfinite(t)):
        raise DatasetError(f"{path.name}: timestamp", "not finite", "finite times")
    if len(t) > 1 and np.any(np.diff(t) < 0):
        raise DatasetError(f"{path.name}: timestamp", "going backwards", "non-decreasing times")
    return t, out


def _check_range(path: Path, column: str, values: np.ndarray) -> None:
    """DatasetError naming the first value of ``column`` outside its ``COLUMN_LIMITS``."""
    limit = COLUMN_LIMITS.get(column)
    if limit is None or not values.size:
        return
    bound, unit = limit
    beyond = np.argwhere(np.abs(values) > bound)
    if len(beyond):
        i, j = (int(k) for k in beyond[0])
        raise DatasetError(
            f"{'/'.join(path.parts[-4:])}: {column}[{i}][{j}]",
            float(values[i, j]),
            f"within +-{bound:.4g} {unit}",
        )


def _action_path(folder: Path, arm: str) -> tuple[Path, str]:
    """(file, column) of ``arm``'s actions: ``state.parquet``'s ``qpos`` when there is one,
    else ``qpos.parquet``'s ``value``."""
    state = folder / "action" / "arms" / arm / "state.parquet"
    if state.is_file():
        return state, "qpos"
    return folder / "action" / "arms" / arm / "qpos.parquet", "value"


def _action(folder: Path, arm: str) -> tuple[np.ndarray, np.ndarray]:
    return _table(*_action_path(folder, arm))


def max_rows() -> int:
    """Observation and action rows one episode may hold in all: the replay's frame limit
    (``ReplayConfig.max_frames``) over the seven frames each row becomes."""
    return replay_limits().max_frames // JOINTS_PER_ARM


def _footer_rows(path: Path) -> int:
    """Rows of the parquet file ``path`` from its footer (no column read); 0 when it is
    missing or unreadable (``_table`` then names the file)."""
    import pyarrow.parquet as pq

    try:
        return int(pq.read_metadata(path).num_rows)
    except Exception:  # noqa: BLE001 - pyarrow's many error types; _table names the file
        return 0


def _check_rows(folder: Path, arms: list[str]) -> None:
    """DatasetError when the episode's rows together exceed ``max_rows()`` (footers only)."""
    files = [folder / "obs" / "arms" / arm / "state.parquet" for arm in arms]
    files += [_action_path(folder, arm)[0] for arm in arms]
    rows = sum(_footer_rows(p) for p in files)
    if rows > max_rows():
        raise DatasetError(
            f"{folder}: rows",
            f"{rows} ({rows * JOINTS_PER_ARM} frames)",
            f"at most {max_rows()} observation and action rows in all "
            f"(ReplayConfig.max_frames: {replay_limits().max_frames} frames, "
            f"{JOINTS_PER_ARM} per row)",
        )


def read_joint_dataset(folder: Path | str, robot: Robot | None = None) -> Recording:
    """The episode at ``folder`` of ``robot`` (None: the default robot) as a recording (see
    the module docstring)."""
    robot = robot_of(robot)
    folder = Path(folder)
    arms = sorted(p.name for p in (folder / "obs" / "arms").glob("*") if p.is_dir())
    known = [a for a in arms if a in (Arm.RIGHT.value, Arm.LEFT.value)]
    if not known:
        raise DatasetError(f"{folder}: obs/arms", arms, "'right' and/or 'left'")
    _check_rows(folder, known)
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


def start_state(
    robot: Robot,
    first_q: dict[str, np.ndarray],
    first_v: dict[str, np.ndarray] | None = None,
) -> list[float]:
    """The twin's integration state (``STATE_SPEC``) where a dataset's first observation puts
    each arm of ``robot``: joint positions ``first_q[arm]`` [rad], moving as ``first_v[arm]``
    says [rad/s] (at rest without), the rest of the model at its ``home`` keyframe."""
    model = robot.model()
    data = mujoco.MjData(model)
    apply_home(model, data)
    data.qvel[:] = 0.0
    for arm, q in first_q.items():
        v = (first_v or {}).get(arm, np.zeros_like(q))
        for name, value, speed in zip(robot.joints(arm), q, v, strict=True):
            data.qpos[model.joint(name).qposadr[0]] = value
            data.qvel[model.joint(name).dofadr[0]] = speed
    mujoco.mj_forward(model, data)
    state = np.zeros(mujoco.mj_stateSize(model, STATE_SPEC))
    mujoco.mj_getState(model, data, state, STATE_SPEC)
    return state.tolist()


def _sidecar(
    first_q: dict[str, np.ndarray],
    frames: list[RecordedFrame],
    robot: Robot,
    first_v: dict[str, np.ndarray] | None = None,
) -> dict:
    """The sidecar a recording of this episode would carry: ``robot``'s twin starts where the
    first observation puts each arm (``start_state``); each arm on the robot's channel."""
    return {
        "hardware_io": False,
        "evidence_class": "a joint-state dataset read as a recording",
        "initial_state": start_state(robot, first_q, first_v),
        "frames": len(frames),
        "first_frame_sim_s": 0.0,
        "feedback_rate_hz": 100.0,
        "wiring": {str(bus_no(ch)): arm for arm, ch in robot_channels(robot).items()},
    }


def read_input(path: Path | str, robot: Robot | None = None) -> Recording:
    """A bus recording (``.log``/``.asc``/``.blf``/``.mf4``) or a joint-state dataset episode
    folder of ``robot`` (None: the default robot; a Damiao robot's dataset folder is a
    LeRobot v3 dataset, ``lerobot_v3.read_lerobot_v3``, its first episode), as a recording:
    what ``calibrate`` and ``compare`` take."""
    from rob_twin.twin.bus.replay import read_recording

    if robot_of(robot).family == "damiao" and Path(path).is_dir():
        # a Damiao robot's dataset: an episode in LeRobot's own v3 layout
        from rob_twin.twin.calibration.lerobot_v3 import read_lerobot_v3

        return read_lerobot_v3(path, robot=robot_of(robot))
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
