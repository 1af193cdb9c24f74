"""A robot's Amber side, from its ``Robot``: the drives' bounds, the owners' position bounds
and the codec's, each from the robot model's joint ranges, so the closed loop, the bank
process and the host process of any Amber robot agree on them (ROB's ranges are
``rob_twin.models.dimensions``': identical to before). Units: radians."""

from __future__ import annotations

from dataclasses import replace

from rob_twin.controllers.codec import CodecConfig
from rob_twin.controllers.codec import default_config as default_codec_config
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.models.names import BUS_MAPPING, Arm
from rob_twin.models.robot import Robot
from rob_twin.twin.drives.amber_bank import default_drive_configs
from rob_twin.twin.drives.amber_drive import DriveConfig

Ranges = list[tuple[float, float]]


def amber_drive_configs(robot: Robot) -> dict[Arm, tuple[DriveConfig, ...]]:
    """Each arm's Amber drives: the family's speed and current tables
    (``default_drive_configs``) with the robot's joint ranges as their bounds [rad]."""
    table = default_drive_configs()
    return {
        arm: tuple(
            replace(d, lower_rad=lo, upper_rad=hi)
            for d, (lo, hi) in zip(table, robot.joint_ranges(arm), strict=True)
        )
        for arm in Arm
    }


def bounded_owner(base: OwnerConfig, ranges: Ranges) -> OwnerConfig:
    """``base`` with ``ranges`` [rad] as its position bounds."""
    return replace(
        base,
        position_lower=tuple(float(lo) for lo, _ in ranges),
        position_upper=tuple(float(hi) for _, hi in ranges),
    )


def bounded_codec(owner: OwnerConfig) -> CodecConfig:
    """The Amber codec refusing what ``owner``'s position bounds refuse."""
    return replace(
        default_codec_config(), lower_rad=owner.position_lower, upper_rad=owner.position_upper
    )


def robot_channels(robot: Robot) -> dict[str, str]:
    """{arm: CAN channel} as the robot file says (the twin's default mapping where it names
    none)."""
    return {a.value: robot.channel(a) or BUS_MAPPING[a].channel for a in Arm}
