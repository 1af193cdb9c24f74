"""Write a LeRobot v3 dataset of a bimanual OpenArm session with LeRobot's own code.

Runs in ``.venv-lerobot`` (``make lerobot-venv``: lerobot 0.6.1, Python >= 3.12); imports
nothing from rob_twin. Input: the ``.npz`` of ``scripts/twin_openarm_trajectory.py`` (run with
rob-twin's ``.venv``): ``fps``, ``timestamp`` [s], and per side (``right``, ``left``)
``{side}_action_deg`` (rows x 8: joint_1..joint_7, gripper [deg]) and ``{side}_state_frames``
(rows x 8 drives x 8 bytes: each drive's raw Damiao state reply).

Everything LeRobot-specific is LeRobot's:

- the robot: ``BiOpenArmFollower`` (constructed, never connected) with
  ``use_velocity_and_torque=True`` on both arms;
- the dataset features: what ``lerobot-record`` builds from that robot
  (``create_initial_features`` + ``aggregate_pipeline_dataset_features`` with the default
  processors, no videos): ``observation.state`` and ``action``, float32 vectors named
  ``left_joint_1.pos``, ``left_joint_1.vel``, ``left_joint_1.torque``, ... ``right_gripper.torque``;
- the observation values: each state reply decoded by the arm's ``DamiaoMotorsBus``
  (``_decode_motor_state``: position [deg], velocity [deg/s], torque [N m]), as
  ``OpenArmFollower.get_observation`` reports them;
- the action: ``{motor}.pos`` the target [deg] the follower sent; ``.vel`` and ``.torque`` of
  the action are 0 (the follower sends dq 0 and tau 0 with every position action);
- the writer: ``LeRobotDataset.create(..., use_videos=False)``, ``add_frame`` per row (LeRobot
  stamps each row ``frame_index / fps``), ``save_episode``, ``finalize``.

Usage: ``.venv-lerobot/bin/python scripts/write_lerobot_fixture.py traj.npz OUT_DIR``
(OUT_DIR must not exist; LeRobot creates it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

SIDES = ("left", "right")  # BiOpenArmFollower's feature order: left arm first
MOTOR_NAMES = [f"joint_{k}" for k in range(1, 8)] + ["gripper"]
REPO_ID = "rob-twin/openarm_twin_fixture"
TASK = "simulated OpenArm excitation (rob-twin twin, hardware_io: false)"


def make_robot(calibration_dir: Path):
    from lerobot.robots.bi_openarm_follower import BiOpenArmFollower, BiOpenArmFollowerConfig
    from lerobot.robots.openarm_follower import OpenArmFollowerConfigBase

    def arm(side: str, port: str) -> OpenArmFollowerConfigBase:
        return OpenArmFollowerConfigBase(
            port=port, side=side, use_can_fd=False, use_velocity_and_torque=True
        )

    return BiOpenArmFollower(
        BiOpenArmFollowerConfig(
            id="twin",
            calibration_dir=calibration_dir,
            left_arm_config=arm("left", "can1"),
            right_arm_config=arm("right", "can0"),
        )
    )


def dataset_features(robot) -> dict:
    """The features ``lerobot-record`` creates for ``robot`` (no cameras, no videos)."""
    from lerobot.datasets.pipeline_features import (
        aggregate_pipeline_dataset_features,
        create_initial_features,
    )
    from lerobot.processor import make_default_processors
    from lerobot.utils.feature_utils import combine_feature_dicts

    teleop_action, _, robot_observation = make_default_processors()
    return combine_feature_dicts(
        aggregate_pipeline_dataset_features(
            pipeline=teleop_action,
            initial_features=create_initial_features(action=robot.action_features),
            use_videos=False,
        ),
        aggregate_pipeline_dataset_features(
            pipeline=robot_observation,
            initial_features=create_initial_features(observation=robot.observation_features),
            use_videos=False,
        ),
    )


def observation(robot, arrays, k: int) -> dict[str, float]:
    """Row ``k``'s observation as ``get_observation`` would report it (LeRobot's decoder)."""
    obs = {}
    for side in SIDES:
        bus = getattr(robot, f"{side}_arm").bus
        frames = arrays[f"{side}_state_frames"][k]
        for j, motor in enumerate(MOTOR_NAMES):
            pos, vel, torque, _, _ = bus._decode_motor_state(
                bytes(frames[j]), bus._motor_types[motor]
            )
            obs[f"{side}_{motor}.pos"] = float(pos)
            obs[f"{side}_{motor}.vel"] = float(vel)
            obs[f"{side}_{motor}.torque"] = float(torque)
    return obs


def action(arrays, k: int) -> dict[str, float]:
    out = {}
    for side in SIDES:
        for j, motor in enumerate(MOTOR_NAMES):
            out[f"{side}_{motor}.pos"] = float(arrays[f"{side}_action_deg"][k, j])
            out[f"{side}_{motor}.vel"] = 0.0
            out[f"{side}_{motor}.torque"] = 0.0
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("npz", type=Path, help="scripts/twin_openarm_trajectory.py's output")
    ap.add_argument("out", type=Path, help="the dataset folder to create (must not exist)")
    args = ap.parse_args(argv)
    import lerobot
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.utils.feature_utils import build_dataset_frame

    arrays = np.load(args.npz)
    fps = int(arrays["fps"])
    with tempfile.TemporaryDirectory(prefix="lerobot_fixture_") as tmp:
        robot = make_robot(Path(tmp))
        features = dataset_features(robot)
        dataset = LeRobotDataset.create(
            REPO_ID,
            fps,
            features=features,
            root=args.out,
            robot_type=robot.name,
            use_videos=False,
        )
        for k in range(len(arrays["timestamp"])):
            frame = {
                **build_dataset_frame(
                    dataset.features, observation(robot, arrays, k), "observation"
                ),
                **build_dataset_frame(dataset.features, action(arrays, k), "action"),
                "task": TASK,
            }
            dataset.add_frame(frame)
        dataset.save_episode()
        dataset.finalize()
    print(
        f"wrote {args.out}: LeRobot {lerobot.__version__} v3 dataset, robot_type {robot.name}, "
        f"{len(arrays['timestamp'])} frames at {fps} fps"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
