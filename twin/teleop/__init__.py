"""Teleoperation of both arms from a browser or a WebXR headset, through the arm owners.

Public entry points: ``TeleopApp`` (closed loop + server), ``TeleopController`` (input
frames -> clutch -> safety filter -> owners), ``parse_message`` (the wire protocol).
"""

from rob_twin.twin.teleop.app import AppConfig, TeleopApp
from rob_twin.twin.teleop.controller import TeleopConfig, TeleopController
from rob_twin.twin.teleop.messages import PROTOCOL_VERSION, TeleopMessageError, parse_message

__all__ = [
    "AppConfig",
    "PROTOCOL_VERSION",
    "TeleopApp",
    "TeleopConfig",
    "TeleopController",
    "TeleopMessageError",
    "parse_message",
]
