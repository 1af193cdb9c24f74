"""Datasets in LeRobot's own v3 layout (lerobot 0.6.1's writer) of a robot on Damiao drives,
read as a bus recording the twin can replay and a fit can use.

``read_lerobot_v3(folder, episode_index=0, robot=None) -> Recording``. ``folder`` holds what
``LeRobotDataset.create(...)`` / ``add_frame`` / ``save_episode`` / ``finalize`` write:

- ``meta/info.json``: ``codebase_version`` (must start with ``v3``), ``fps`` (> 0),
  ``data_path`` (a template over ``chunk_index`` and ``file_index``) and ``features``, with
  ``observation.state`` and ``action`` float32 vectors whose ``names`` are LeRobot's
  ``BiOpenArmFollower`` motor features: ``{side}_joint_{k}.pos`` [deg] (k = 1..7),
  ``{side}_gripper.pos`` [deg], and with ``use_velocity_and_torque`` also ``.vel`` [deg/s]
  and ``.torque`` [N m] (side ``left`` / ``right``: lerobot/robots/bi_openarm_follower/,
  lerobot/robots/openarm_follower/; the Damiao bus converts radians to degrees,
  lerobot/motors/damiao/damiao.py);
- ``meta/episodes/chunk-*/file-*.parquet``: per episode its ``data/chunk_index``,
  ``data/file_index`` and rows ``[dataset_from_index, dataset_to_index)``;
- the data parquet: ``timestamp`` [s] (LeRobot writes ``frame_index / fps``), ``index``,
  ``episode_index``, ``observation.state``, ``action``.

Each row of the episode becomes, at its timestamp (the first row at 0), on each arm's bus
(the robot file's channel: OpenArm's ``right`` on can0, ``left`` on can1, buses 0 and 1):

- the observation: one state reply per drive (MST id = ESC id + 0x10, status enabled,
  temperatures ``TEMPERATURE_C``), the bytes the drive sent. LeRobot decoded them with its own
  PMAX/VMAX/TMAX table (``LEROBOT_SCALING``, lerobot/motors/damiao/tables.py), which differs
  from the drive's for the DM4340's velocity (LeRobot 8 rad/s, the drive 10): the reader
  re-encodes each value under LeRobot's table to the nearest wire count, which is the count
  the drive sent, so the twin decodes the drive's own value. A value beyond LeRobot's range
  is not something LeRobot's decoder can report: a DatasetError.
- the action, after the observation (LeRobot's loop reads, then sends): one MIT command per
  drive (ESC id) as ``OpenArmFollower.send_action`` sends it: q = the ``.pos`` action [deg ->
  rad], dq 0, tau 0, the follower's default gains (``FOLLOWER_KP`` / ``FOLLOWER_KD``, or
  ``kp`` / ``kd`` per drive given), under the drive's scaling (``controllers.damiao_codec``).

The gripper (drive 8, ESC 0x08 / MST 0x18, ``models.damiao_motors.GRIPPER_ESC_ID``) gets its
frames when the dataset has ``{side}_gripper.pos``. The sidecar: the robot file's wiring
(bus number -> arm), ``hardware_io: false``, and the twin's initial state, each arm's
joints where the first observation puts them, moving as its ``.vel`` says (at rest without;
the rest of the model at its ``home`` keyframe; the gripper is not set). A missing
``.vel`` or ``.torque`` feature reads as zeros.

Bounds: at most ``MAX_ROWS`` rows and ``MAX_DURATION_S`` seconds; every value finite;
timestamps non-decreasing; joint positions within the model's joint range +-
``RANGE_MARGIN_RAD``, the gripper's within the wire range (+-PMAX). Anything else is a
``DatasetError`` (an InvalidValueError: exit 2 via the CLI) naming the file, the column
(feature name) and the row, and the valid range. Read with pyarrow; the CLI does not call this
yet (``calibrate --robot openarm`` will).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from rob_twin.controllers.damiao_codec import (
    MitCommand,
    Scaling,
    Status,
    encode_mit,
    encode_state,
    from_code,
)
from rob_twin.models.damiao_motors import (
    GRIPPER_DRIVE_NUMBER,
    MIT_REPLY_OFFSET,
    MOTORS,
    OPENARM_GRIPPER_MOTOR,
)
from rob_twin.models.robot import Robot, robot_of
from rob_twin.twin.bus.replay import RecordedFrame, Recording, bus_no
from rob_twin.twin.calibration.dataset import MAX_ROWS, DatasetError, start_state

MAX_DURATION_S = 3600.0
RANGE_MARGIN_RAD = math.radians(10.0)
# the replies' MOS and rotor temperatures [degC]: LeRobot records none (the twin drive's ambient)
TEMPERATURE_C = 25
SIDES = ("right", "left")
# LeRobot 0.6.1 OpenArmFollowerConfigBase.position_kp / position_kd: joint_1..7, gripper
FOLLOWER_KP = (240.0, 240.0, 240.0, 240.0, 24.0, 31.0, 25.0, 25.0)  # [Nm/rad]
FOLLOWER_KD = (5.0, 5.0, 3.0, 5.0, 0.3, 0.3, 0.3, 0.3)  # [Nm s/rad]
# LeRobot 0.6.1's MOTOR_LIMIT_PARAMS (PMAX rad, VMAX rad/s, TMAX Nm) for OpenArm's motors:
# the table its Damiao bus decodes state replies with
LEROBOT_SCALING = {
    "DM8009": Scaling(12.5, 45.0, 54.0),
    "DM4340": Scaling(12.5, 8.0, 28.0),
    "DM4310": Scaling(12.5, 30.0, 10.0),
}


def is_lerobot_v3(path: Path | str) -> bool:
    """True when ``path`` is a folder with ``meta/info.json`` and ``meta/episodes``."""
    path = Path(path)
    return (path / "meta" / "info.json").is_file() and (path / "meta" / "episodes").is_dir()


def _info(folder: Path) -> dict:
    path = folder / "meta" / "info.json"
    if not path.is_file():
        raise DatasetError(str(path), "missing", "LeRobot's meta/info.json")
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise DatasetError(str(path), "unreadable", f"a JSON object ({err})") from None
    if not isinstance(info, dict):
        raise DatasetError(str(path), type(info).__name__, "a JSON object")
    version = info.get("codebase_version")
    if not isinstance(version, str) or not version.startswith("v3"):
        raise DatasetError(f"{path}: codebase_version", version, "LeRobot's v3 layout ('v3.x')")
    fps = info.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not 0 < fps < math.inf:
        raise DatasetError(f"{path}: fps", fps, "a number > 0 [frames/s]")
    template = info.get("data_path")
    if not isinstance(template, str) or "{" not in template:
        raise DatasetError(f"{path}: data_path", template, "a path template over chunk/file")
    features = info.get("features")
    if not isinstance(features, dict):
        raise DatasetError(f"{path}: features", type(features).__name__, "a JSON object")
    for key in ("observation.state", "action"):
        ft = features.get(key)
        names = ft.get("names") if isinstance(ft, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise DatasetError(f"{path}: features.{key}.names", names, "a list of motor features")
        if ft.get("shape") != [len(names)]:
            raise DatasetError(f"{path}: features.{key}.shape", ft.get("shape"), [len(names)])
    return info


def _episode_span(folder: Path, episode_index: int) -> tuple[int, int, int, int]:
    """(data chunk, data file, first row, end row) of ``episode_index``."""
    import pyarrow.parquet as pq

    files = sorted((folder / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
    if not files:
        raise DatasetError(f"{folder}/meta/episodes", "no chunk-*/file-*.parquet", "episodes")
    cols = ["episode_index", "data/chunk_index", "data/file_index"]
    cols += ["dataset_from_index", "dataset_to_index"]
    seen: list[int] = []
    for path in files:
        try:
            table = pq.read_table(path, columns=cols)
        except Exception as err:  # noqa: BLE001 - pyarrow's many error types, named in one line
            raise DatasetError(str(path), "unreadable", f"episodes with {cols} ({err})") from None
        rows = table.to_pylist()
        for row in rows:
            if row["episode_index"] == episode_index:
                return tuple(int(row[c]) for c in cols[1:])  # type: ignore[return-value]
        seen += [r["episode_index"] for r in rows]
    raise DatasetError("episode_index", episode_index, f"one of {sorted(seen)[:20]}")


def _rows(folder: Path, info: dict, episode_index: int) -> tuple[Path, dict[str, np.ndarray]]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    chunk, file, start, end = _episode_span(folder, episode_index)
    path = folder / info["data_path"].format(chunk_index=chunk, file_index=file)
    if not path.is_file():
        raise DatasetError(str(path), "missing", "the episode's data file (meta/episodes)")
    cols = ["timestamp", "index", "observation.state", "action"]
    try:
        table = pq.read_table(path, columns=cols)
    except Exception as err:  # noqa: BLE001 - pyarrow's many error types, named in one line
        raise DatasetError(str(path), "unreadable", f"a parquet file with {cols} ({err})") from None
    idx = table.column("index")
    table = table.filter(pc.and_(pc.greater_equal(idx, start), pc.less(idx, end)))
    if table.num_rows == 0:
        raise DatasetError(f"{path}: index", f"no rows in [{start}, {end})", "the episode's rows")
    if table.num_rows > MAX_ROWS:
        raise DatasetError(str(path), f"{table.num_rows} rows", f"at most {MAX_ROWS}")
    out = {"timestamp": table.column("timestamp").to_numpy().astype(float)}
    for key in ("observation.state", "action"):
        width = len(info["features"][key]["names"])
        values = table.column(key).to_pylist()
        arr = np.full((len(values), width), np.nan)
        for i, row in enumerate(values):
            if not isinstance(row, list) or len(row) != width:
                raise DatasetError(f"{path.name}: {key}[{i}]", row, f"{width} values")
            arr[i] = [math.nan if v is None else v for v in row]
        out[key] = arr
    return path, out


def _column(
    path: Path, key: str, names: list[str], values: np.ndarray, name: str
) -> np.ndarray | None:
    """Feature ``name`` of ``key`` (rows), checked finite; None when absent."""
    if name not in names:
        return None
    col = values[:, names.index(name)]
    bad = np.flatnonzero(~np.isfinite(col))
    if bad.size:
        raise DatasetError(f"{path.name}: {key} {name}[{bad[0]}]", col[bad[0]], "a finite number")
    return col


def _check_range(
    path: Path, key: str, name: str, col: np.ndarray, lo: float, hi: float, unit: str
) -> None:
    bad = np.flatnonzero((col < lo) | (col > hi))
    if bad.size:
        raise DatasetError(
            f"{path.name}: {key} {name}[{bad[0]}]", float(col[bad[0]]), f"{lo:.4g}..{hi:.4g} {unit}"
        )


def _nearest(x: float, lo: float, hi: float, bits: int) -> int:
    return int(round((x - lo) / (hi - lo) * ((1 << bits) - 1)))


def _state_values(q: float, dq: float, tau: float, lerobot: Scaling, drive: Scaling):
    """(q, dq, tau) under the drive's scaling at the wire counts LeRobot decoded."""
    out = []
    for x, field in ((q, "q"), (dq, "dq"), (tau, "tau")):
        lo, hi, bits = lerobot.range(field)
        code = _nearest(x, lo, hi, bits)
        dlo, dhi, _ = drive.range(field)
        out.append(from_code(code, dlo, dhi, bits))
    return out


def read_lerobot_v3(
    folder: Path | str,
    episode_index: int = 0,
    robot: Robot | str | None = None,
    kp: tuple[float, ...] = FOLLOWER_KP,
    kd: tuple[float, ...] = FOLLOWER_KD,
) -> Recording:
    """Episode ``episode_index`` of the LeRobot v3 dataset at ``folder``, recorded on
    ``robot`` (a robot with Damiao drives; None: OpenArm), as a recording (module docstring).
    ``kp`` [Nm/rad] / ``kd`` [Nm s/rad]: the gains the follower sent, per drive (joints, then
    the gripper)."""
    robot = robot_of("openarm" if robot is None else robot)
    if robot.family != "damiao":
        raise DatasetError("robot", robot.name, "a robot with Damiao drives (e.g. 'openarm')")
    folder = Path(folder)
    info = _info(folder)
    path, rows = _rows(folder, info, episode_index)
    t = rows["timestamp"]
    if not np.all(np.isfinite(t)):
        raise DatasetError(f"{path.name}: timestamp", "not finite", "finite times [s]")
    if len(t) > 1 and np.any(np.diff(t) < 0):
        raise DatasetError(f"{path.name}: timestamp", "going backwards", "non-decreasing times")
    t = t - t[0]
    if t[-1] > MAX_DURATION_S:
        raise DatasetError(f"{path.name}: timestamp", f"{t[-1]:g} s", f"<= {MAX_DURATION_S:g} s")
    obs_names = info["features"]["observation.state"]["names"]
    act_names = info["features"]["action"]["names"]
    motors = [MOTORS[m] for m in robot.motors] + [OPENARM_GRIPPER_MOTOR]
    drive_scaling = [Scaling.of(m) for m in motors]
    lerobot_scaling = [LEROBOT_SCALING.get(m.model, Scaling.of(m)) for m in motors]
    frames: list[tuple[float, int, int, RecordedFrame]] = []
    first_q: dict[str, np.ndarray] = {}
    first_v: dict[str, np.ndarray] = {}
    wiring: dict[str, str] = {}
    for side in SIDES:
        n = robot.joint_count(side)
        names = [f"{side}_joint_{k}" for k in range(1, n + 1)]
        if not all(f"{m}.pos" in obs_names for m in names):
            continue
        if f"{side}_gripper.pos" in obs_names:
            names.append(f"{side}_gripper")
        if len(kp) < len(names) or len(kd) < len(names):
            raise DatasetError("kp/kd", (len(kp), len(kd)), f"{len(names)} gains each")
        channel = robot.channel(side)
        if channel is None:
            raise DatasetError(f"robot {robot.name}: arms.{side}.can", None, "a CAN channel")
        bus = bus_no(channel)
        wiring[str(bus)] = side
        ranges = robot.joint_ranges(side)
        zeros = np.zeros(len(t))
        q0, v0 = [], []
        for j, motor in enumerate(names):
            drive = j + 1 if j < n else GRIPPER_DRIVE_NUMBER
            obs = "observation.state"
            pos = _column(path, obs, obs_names, rows[obs], f"{motor}.pos")
            vel = _column(path, obs, obs_names, rows[obs], f"{motor}.vel")
            tau = _column(path, obs, obs_names, rows[obs], f"{motor}.torque")
            act = _column(path, "action", act_names, rows["action"], f"{motor}.pos")
            if act is None:
                raise DatasetError(f"{path.name}: action", f"no {motor}.pos", "its .pos feature")
            lo, hi = ranges[j] if j < n else (-drive_scaling[j].pmax_rad, drive_scaling[j].pmax_rad)
            margin = RANGE_MARGIN_RAD if j < n else 0.0
            lo_d, hi_d = math.degrees(lo - margin), math.degrees(hi + margin)
            _check_range(path, obs, f"{motor}.pos", pos, lo_d, hi_d, "deg")
            _check_range(path, "action", f"{motor}.pos", act, lo_d, hi_d, "deg")
            ls = lerobot_scaling[j]
            for col, name, lim, unit in (
                (vel, "vel", math.degrees(ls.vmax_rad_s), "deg/s"),
                (tau, "torque", ls.tmax_nm, "N m"),
            ):
                if col is not None:
                    _check_range(path, obs, f"{motor}.{name}", col, -lim, lim, unit)
            vel = np.radians(vel) if vel is not None else zeros
            tau = tau if tau is not None else zeros
            pos, act = np.radians(pos), np.radians(act)
            esc = drive
            for i, ti in enumerate(t):
                q, dq, tq = _state_values(pos[i], vel[i], tau[i], ls, drive_scaling[j])
                if i == 0 and j < n:
                    q0.append(q)
                    v0.append(dq)
                data = encode_state(
                    esc,
                    int(Status.ENABLED),
                    q,
                    dq,
                    tq,
                    TEMPERATURE_C,
                    TEMPERATURE_C,
                    drive_scaling[j],
                )
                mst = esc + MIT_REPLY_OFFSET
                frames.append((float(ti), 0, i, RecordedFrame(float(ti), bus, mst, data)))
                cmd = MitCommand(float(act[i]), 0.0, kp[j], kd[j], 0.0)
                data = encode_mit(cmd, drive_scaling[j], esc)
                frames.append((float(ti), 1, i, RecordedFrame(float(ti), bus, esc, data)))
        first_q[side] = np.array(q0)
        first_v[side] = np.array(v0)
    if not wiring:
        raise DatasetError(
            f"{folder}/meta/info.json: features.observation.state.names",
            obs_names[:8],
            "'right_joint_1.pos' .. or 'left_joint_1.pos' .. (BiOpenArmFollower's features)",
        )
    # each row: the observation's replies, then the action's commands (LeRobot's order)
    frames.sort(key=lambda f: (f[0], f[2], f[1]))
    recorded = [f[3] for f in frames]
    meta = _sidecar(robot, first_q, first_v, recorded, wiring, float(info["fps"]))
    return Recording(folder, recorded, meta=meta)


def _sidecar(
    robot: Robot,
    first_q: dict[str, np.ndarray],
    first_v: dict[str, np.ndarray],
    frames: list[RecordedFrame],
    wiring: dict[str, str],
    fps: float,
) -> dict:
    """The sidecar a recording of this episode would carry: the twin starts where the first
    observation puts each arm (``dataset.start_state``), each arm on its bus."""
    return {
        "hardware_io": False,
        "evidence_class": "a LeRobot v3 dataset read as a recording",
        "initial_state": start_state(robot, first_q, first_v),
        "frames": len(frames),
        "first_frame_sim_s": 0.0,
        "feedback_rate_hz": fps,
        "wiring": wiring,
        "robot": robot.identity(),
    }
