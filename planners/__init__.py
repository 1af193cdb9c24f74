# Kinematics, IK, goal checks; ArmGroup (joint/pose goals, lockstep
# Cartesian paths), collision checks, plans. Each module has its own default_config().
from rob_twin.planners.cartesian import (
    CartesianConfig,
    CartesianFailure,
    CartesianResult,
    CartesianStatus,
    plan_cartesian,
)
from rob_twin.planners.certificate_record import PlanClearanceCertificate
from rob_twin.planners.collision import CheckSession, Clearance, CollisionChecker, CollisionConfig
from rob_twin.planners.errors import GoalUnreachableError, PlanFailedError
from rob_twin.planners.goal_checks import (
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
from rob_twin.planners.goals import (
    GoalResolver,
    JointGoal,
    JointGoalSet,
    ResamplingGoal,
    StreamingGoal,
)
from rob_twin.planners.group import ArmGroup, GroupConfig
from rob_twin.planners.ik import IKConfig, IKResult, IKSolution, IKSolver, IKStatus
from rob_twin.planners.kinematics import ArmKinematics, Payload
from rob_twin.planners.lm import LMSettings
from rob_twin.planners.pair_certificate import CertificateConfig
from rob_twin.planners.plan import ArmTrajectory, ClearanceRecord, Plan, PlanResult, PlanStatus
from rob_twin.planners.plan_file import save_plan
from rob_twin.planners.pose import as_pose, pose_error
from rob_twin.planners.pose_goals import PoseGoal
from rob_twin.planners.retime import JointLimits
from rob_twin.planners.uncertainty import UncertaintySpec

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
    "CertificateConfig",
    "PlanClearanceCertificate",
    "UncertaintySpec",
    "save_plan",
]
