"""The hardware-facing layer: the arm owner, the Amber CAN codec and transport, the
Damiao MIT transport (OpenArm's motors), the synchronized executor. Never imports mujoco or
pinocchio (an import test checks).

Start here::

    from controllers import ArmOwner, OwnerConfig, ArmTarget, CanTransport, SyncExecutor

Names are imported on first use, so ``import controllers`` stays light.
"""

from controllers.lazy_exports import lazy_exports

_MODULES = {
    "controllers.owner": ("ArmOwner", "OwnerConfig", "TickReport", "FaultKind", "Mode"),
    "controllers.target": ("ArmTarget",),
    "controllers.arm_driver": ("ArmDriver",),
    "controllers.clock": ("SimClock", "MonotonicClock"),
    "controllers.codec": (
        "CodecConfig",
        "Frame",
        "encode_sample",
        "encode_joint",
        "decode_command",
        "decode_feedback",
        "encode_feedback",
    ),
    "controllers.transport": ("CanTransport", "TransportConfig"),
    "controllers.damiao_transport": ("DamiaoTransport", "DamiaoTransportConfig"),
    "controllers.damiao_driver": ("DamiaoArmDriver",),
    "controllers.executor": ("SyncExecutor", "ExecutorConfig"),
    "controllers.names": ("Arm",),
    "controllers.errors": ("RobTwinError", "UnknownNameError"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)
