# Kinematics, IK, goal checks; ArmGroup (joint/pose goals, lockstep
# Cartesian paths), collision checks, plans. Each module has its own default_config().
from planners.cartesian import (
    CartesianConfig,
    CartesianFailure,
    CartesianResult,
    CartesianStatus,
    plan_cartesian,
)
from planners.certificate import Certificate, PlanCertificate, certify, certify_plan
from planners.collision import CheckSession, Clearance, CollisionChecker, CollisionConfig
from planners.errors import GoalUnreachableError, PlanFailedError
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
from planners.goals import GoalResolver, JointGoal, JointGoalSet, ResamplingGoal, StreamingGoal
from planners.group import ArmGroup, GroupConfig
from planners.ik import IKConfig, IKResult, IKSolution, IKSolver, IKStatus
from planners.kinematics import ArmKinematics, Payload
from planners.lm import LMSettings
from planners.pair_certificate import CertificateConfig, PlanClearanceCertificate
from planners.plan import ArmTrajectory, ClearanceRecord, Plan, PlanResult, PlanStatus
from planners.plan_file import save_plan
from planners.pose import as_pose, pose_error
from planners.pose_goals import PoseGoal
from planners.retime import JointLimits
from planners.uncertainty import UncertaintySpec

__all__ = [
    "ArmGroup",
    "ArmKinematics",
    "ArmTrajectory",
    "CartesianConfig",
    "CartesianFailure",
    "CartesianResult",
    "CartesianStatus",
    "CheckSession",
    "Clearance",
    "ClearanceRecord",
    "CollisionChecker",
    "CollisionConfig",
    "GoalResolver",
    "GoalUnreachableError",
    "GroupConfig",
    "JointGoal",
    "JointGoalSet",
    "JointLimits",
    "Plan",
    "PlanFailedError",
    "PlanResult",
    "PlanStatus",
    "PoseGoal",
    "ResamplingGoal",
    "StreamingGoal",
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
    "plan_cartesian",
    "pose_error",
    "Certificate",
    "PlanCertificate",
    "certify",
    "certify_plan",
    "CertificateConfig",
    "PlanClearanceCertificate",
    "UncertaintySpec",
    "save_plan",
]
