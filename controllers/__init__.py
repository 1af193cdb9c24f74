"""The hardware-facing layer: the arm owner, the Amber CAN codec and transport, the
synchronized executor. Never imports mujoco or pinocchio (an import test checks).

Start here::

    from controllers import ArmOwner, OwnerConfig, ArmTarget, CanTransport, SyncExecutor

Names are imported on first use, so ``import controllers`` stays light.
"""

from controllers.lazy_exports import lazy_exports

_EXPORTS = {
    # the owner: one persistent writer per arm
    "ArmOwner": "controllers.owner",
    "OwnerConfig": "controllers.owner",
    "TickReport": "controllers.owner",
    "FaultKind": "controllers.owner",
    "Mode": "controllers.owner",
    "ArmTarget": "controllers.target",
    "ArmDriver": "controllers.arm_driver",
    "SimClock": "controllers.clock",
    "MonotonicClock": "controllers.clock",
    # the codec and the bus
    "CodecConfig": "controllers.codec",
    "Frame": "controllers.codec",
    "encode_sample": "controllers.codec",
    "encode_joint": "controllers.codec",
    "decode_command": "controllers.codec",
    "decode_feedback": "controllers.codec",
    "encode_feedback": "controllers.codec",
    "CanTransport": "controllers.transport",
    "TransportConfig": "controllers.transport",
    # synchronized execution of planned trajectories
    "SyncExecutor": "controllers.executor",
    "ExecutorConfig": "controllers.executor",
    # names and errors
    "Arm": "controllers.names",
    "RobTwinError": "controllers.errors",
    "UnknownNameError": "controllers.errors",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
