"""The hardware-facing layer: the arm owner, the Amber CAN codec and transport, the
Damiao MIT transport (OpenArm's motors), the synchronized executor. Never imports mujoco or
pinocchio (an import test checks).

Start here::

    from rob_twin.controllers import ArmOwner, OwnerConfig, ArmTarget, CanTransport, SyncExecutor

Names are imported on first use, so ``import controllers`` stays light.
"""

from rob_twin.models.lazy_exports import lazy_exports

_MODULES = {
    "rob_twin.controllers.owner": ("ArmOwner",),
    "rob_twin.controllers.owner_config": ("OwnerConfig",),
    "rob_twin.controllers.owner_types": ("TickReport", "FaultKind", "Mode"),
    "rob_twin.controllers.target": ("ArmTarget",),
    "rob_twin.controllers.arm_driver": ("ArmDriver",),
    "rob_twin.controllers.clock": ("SimClock", "MonotonicClock"),
    "rob_twin.controllers.codec": (
        "CodecConfig",
        "Frame",
        "encode_sample",
        "encode_joint",
        "decode_command",
        "decode_feedback",
        "encode_feedback",
    ),
    "rob_twin.controllers.transport": ("CanTransport", "TransportConfig"),
    "rob_twin.controllers.damiao_transport": ("DamiaoTransport", "DamiaoTransportConfig"),
    "rob_twin.controllers.damiao_driver": ("DamiaoArmDriver",),
    "rob_twin.controllers.executor": ("SyncExecutor", "ExecutorConfig"),
    "rob_twin.models.names": ("Arm",),
    "rob_twin.models.errors": ("RobTwinError", "UnknownNameError"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)
