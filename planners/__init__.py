# Issue 6: per-arm kinematics, IK and goal checks (each module has its own default_config()).
from planners.goal_checks import (
    CheckKind,
    CheckResult,
    GoalCheckConfig,
    GoalReport,
    Violation,
    check_goal,
    check_joint_limits,
    check_static_torque,
    check_tcp_speed,
    check_workspace,
)
from planners.ik import IKConfig, IKResult, IKSolution, IKSolver, IKStatus
from planners.kinematics import ArmKinematics, Payload
from planners.lm import LMSettings
from planners.pose import as_pose, pose_error

__all__ = [
    "ArmKinematics",
    "CheckKind",
    "CheckResult",
    "GoalCheckConfig",
    "GoalReport",
    "IKConfig",
    "IKResult",
    "IKSolution",
    "IKSolver",
    "IKStatus",
    "LMSettings",
    "Payload",
    "Violation",
    "as_pose",
    "check_goal",
    "check_joint_limits",
    "check_static_torque",
    "check_tcp_speed",
    "check_workspace",
    "pose_error",
]
