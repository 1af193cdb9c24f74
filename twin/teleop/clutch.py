"""Relative clutching of one hand: grip engages, the controller's motion since the grip
press moves the TCP from where the *commanded* joints put it.

On the grip's rising edge the clutch stores the controller pose and the anchor TCP pose,
``FK(commanded joints)`` (never the measured pose, never an IK round trip). Each later
sample gives the TCP target ``p = p_anchor + s * M dp`` and ``R = (M dR M^T) R_anchor``,
with ``dp``/``dR`` the controller's motion since the press in the XR frame and ``M`` the
fixed rotation XR -> robot base (XR: +x right, +y up, -z forward; robot: +x forward,
+y left, +z up, so ``p_robot = (-z, -x, y)``). A still controller gives exactly the
anchor pose.

Disengaging: grip released (below the release threshold), tracking lost, or a jump of
the controller between two samples past ``jump_m``/``jump_rad``. After a tracking loss
or a jump the hand stays disengaged until the grip is released and pressed again.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from rob_twin.twin.teleop.messages import HandSample

HELD_AT_START = "grip already held when this hand's input began: release it and press again"
XR_TO_ROBOT = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


@dataclass(frozen=True)
class ClutchConfig:
    """grip_press / grip_release: hysteresis thresholds of the grip value [0..1];
    jump_m [m], jump_rad [rad]: controller motion between two samples that counts as a
    tracking jump (peers use 5-6 cm and 25-35 deg); scale: controller-to-TCP position
    scale [-]."""

    grip_press: float = 0.6
    grip_release: float = 0.4
    jump_m: float = 0.06
    jump_rad: float = math.radians(25.0)
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 < self.grip_release < self.grip_press <= 1.0:
            raise ValueError(
                f"need 0 < grip_release < grip_press <= 1, got "
                f"{self.grip_release!r}, {self.grip_press!r}"
            )
        if not (self.jump_m > 0 and self.jump_rad > 0 and self.scale > 0):
            raise ValueError(
                f"jump_m, jump_rad and scale must be > 0, got "
                f"{self.jump_m!r}, {self.jump_rad!r}, {self.scale!r}"
            )


def default_config() -> ClutchConfig:
    return ClutchConfig()


class ClutchEvent(enum.Enum):
    IDLE = "idle"  # not engaged, nothing to do
    ENGAGED = "engaged"  # rising edge this sample: anchor stored, target = anchor
    FOLLOWING = "following"  # engaged: target from the controller delta
    RELEASED = "released"  # grip released this sample
    DISENGAGED = "disengaged"  # fault this sample (tracking loss, jump): needs a fresh press


@dataclass(frozen=True)
class ClutchStep:
    event: ClutchEvent
    target: pin.SE3 | None = None  # TCP target in the base frame (ENGAGED/FOLLOWING)
    still: bool = False  # the controller has not moved since the press: target is the anchor
    reason: str = ""


def quat_to_matrix(q_xyzw: np.ndarray) -> np.ndarray:
    x, y, z, w = q_xyzw
    return pin.Quaternion(w, x, y, z).normalized().toRotationMatrix()


class HandClutch:
    """The clutch of one hand (one thread)."""

    def __init__(self, config: ClutchConfig | None = None):
        self.config = config or default_config()
        self.engaged = False
        self.needs_fresh_press = True  # a grip already held at the first sample does not engage
        self._pressed = False
        self._last: tuple[np.ndarray, np.ndarray] | None = None
        self._anchor_ctrl: tuple[np.ndarray, np.ndarray] | None = None
        self._anchor_tcp: pin.SE3 | None = None
        self.last_reason = ""

    def disengage(self, reason: str, fresh_press: bool = True) -> None:
        """Drop the engagement (socket loss, staleness, a rejected target, a fault)."""
        self.engaged = False
        self.needs_fresh_press = self.needs_fresh_press or fresh_press
        self._anchor_ctrl = self._anchor_tcp = None
        self.last_reason = reason

    def step(self, sample: HandSample, anchor_tcp) -> ClutchStep:
        """Advance with one sample; ``anchor_tcp()`` returns FK of the commanded joints
        (called only on an engaging edge)."""
        c = self.config
        pos, rot = sample.position_m, quat_to_matrix(sample.orientation_xyzw)
        last, self._last = self._last, (pos, rot)
        was_pressed = self._pressed
        if sample.grip >= c.grip_press:
            self._pressed = True
        elif sample.grip < c.grip_release:
            self._pressed = False
        if not self._pressed:
            self.needs_fresh_press = False  # a release re-arms the grip
            if self.last_reason == HELD_AT_START:
                self.last_reason = ""
            if self.engaged:
                self.disengage("grip released", fresh_press=False)
                return ClutchStep(ClutchEvent.RELEASED, reason="grip released")
            return ClutchStep(ClutchEvent.IDLE)
        if not sample.tracked:
            if self.engaged:
                self.disengage("tracking lost: release and press grip again")
                return ClutchStep(ClutchEvent.DISENGAGED, reason=self.last_reason)
            self._last = None
            return ClutchStep(ClutchEvent.IDLE, reason="not tracked")
        if self.engaged and last is not None:
            dp = float(np.linalg.norm(pos - last[0]))
            dr = float(np.linalg.norm(pin.log3(last[1].T @ rot)))
            if dp > c.jump_m or dr > c.jump_rad:
                self.disengage(
                    f"pose jump {dp:.3f} m / {math.degrees(dr):.1f} deg in one sample "
                    f"(limits {c.jump_m} m / {math.degrees(c.jump_rad):.0f} deg): "
                    "release and press grip again"
                )
                return ClutchStep(ClutchEvent.DISENGAGED, reason=self.last_reason)
        if not self.engaged:
            if was_pressed or self.needs_fresh_press:
                self.last_reason = self.last_reason or HELD_AT_START  # the page shows why
                return ClutchStep(ClutchEvent.IDLE, reason="waiting for a fresh grip press")
            self._anchor_ctrl = (pos.copy(), rot.copy())
            self._anchor_tcp = anchor_tcp().copy()
            self.engaged = True
            self.last_reason = ""
            return ClutchStep(ClutchEvent.ENGAGED, self._anchor_tcp.copy(), still=True)
        p0, r0 = self._anchor_ctrl
        if np.array_equal(pos, p0) and np.array_equal(rot, r0):
            return ClutchStep(ClutchEvent.FOLLOWING, self._anchor_tcp.copy(), still=True)
        dp_robot = XR_TO_ROBOT @ (pos - p0) * c.scale
        dr_robot = XR_TO_ROBOT @ (rot @ r0.T) @ XR_TO_ROBOT.T
        a = self._anchor_tcp
        target = pin.SE3(dr_robot @ a.rotation, a.translation + dp_robot)
        return ClutchStep(ClutchEvent.FOLLOWING, target)
