"""Kinematics, IK, goal checks; ArmGroup (joint/pose goals, lockstep Cartesian paths),
collision checks, plans. Each module has its own default_config().

Names are imported on first use (``rob_twin.models.lazy_exports``), so importing the package
loads none of its modules and no submodule import runs back into this file.
"""

from rob_twin.models.lazy_exports import lazy_exports

_MODULES = {
    "rob_twin.planners.cartesian": (
        "CartesianConfig",
        "CartesianFailure",
        "CartesianResult",
        "CartesianStatus",
        "plan_cartesian",
    ),
    "rob_twin.planners.collision": (
        "CheckSession",
        "Clearance",
        "CollisionChecker",
        "CollisionConfig",
    ),
    "rob_twin.planners.errors": (
        "GoalUnreachableError",
        "PlanFailedError",
    ),
    "rob_twin.planners.excitation": (
        "ExcitationConfig",
        "ExcitationError",
        "MultiSinePath",
        "excitation_path",
    ),
    "rob_twin.planners.excitation_summary": ("excitation_summary",),
    "rob_twin.planners.given_path": (
        "GivenPathRefused",
        "certify_given_path",
    ),
    "rob_twin.planners.goal_checks": (
        "CheckKind",
        "CheckResult",
        "GoalCheckConfig",
        "GoalReport",
        "Violation",
        "check_goal",
        "check_joint_limits",
        "check_static_torque",
        "check_tcp_speed",
        "check_workspace",
    ),
    "rob_twin.planners.goals": (
        "GoalResolver",
        "JointGoal",
        "JointGoalSet",
        "ResamplingGoal",
        "StreamingGoal",
    ),
    "rob_twin.planners.group": ("ArmGroup",),
    "rob_twin.planners.group_config": ("GroupConfig",),
    "rob_twin.planners.ik": (
        "IKConfig",
        "IKResult",
        "IKSolution",
        "IKSolver",
        "IKStatus",
    ),
    "rob_twin.planners.kinematics": (
        "ArmKinematics",
        "Payload",
    ),
    "rob_twin.planners.lm": ("LMSettings",),
    "rob_twin.planners.mj_kinematics": ("MjArmKinematics",),
    "rob_twin.planners.robot_kinematics": ("arm_kinematics",),
    "rob_twin.planners.certificate_record": ("PlanClearanceCertificate",),
    "rob_twin.planners.pair_certificate": ("CertificateConfig",),
    "rob_twin.planners.plan": (
        "ArmTrajectory",
        "ClearanceRecord",
        "Plan",
        "PlanResult",
        "PlanStatus",
    ),
    "rob_twin.planners.plan_file": ("save_plan",),
    "rob_twin.planners.pose": (
        "as_pose",
        "pose_error",
    ),
    "rob_twin.planners.pose_goals": ("PoseGoal",),
    "rob_twin.planners.retime": ("JointLimits",),
    "rob_twin.planners.uncertainty": ("UncertaintySpec",),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)
