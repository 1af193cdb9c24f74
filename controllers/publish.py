"""The contract between an arm owner and whatever puts its samples on a wire.

The owner hands one sample, a value per arm joint (native radians; seven on ROB and
OpenArm), to a ``SamplePublisher`` and gets back a ``PublishReport``. The publisher
never retries on its own: partial or uncertain output is reported upward so the owner
can latch a fault (seed 001, section 3: seven frames assembled atomically in memory are
*not* an atomic bus transaction).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


class PublishOutcome(enum.Enum):
    ACCEPTED = "accepted"  # every frame of the sample was accepted by the bus
    PARTIAL = "partial"  # a known prefix/subset was accepted, the rest refused
    UNCERTAIN = "uncertain"  # an exception or timeout mid-batch: a frame may or may not be out
    REFUSED = "refused"  # nothing was sent (encode error, bus down before the first frame)


@dataclass(frozen=True)
class PublishReport:
    outcome: PublishOutcome
    accepted_joints: tuple[int, ...] = ()  # 1-based joint numbers known to be on the bus
    reason: str = ""
    frames_sent: int = 0
    duration_s: float = 0.0
    extra: dict = field(default_factory=dict)
    # A REFUSED sample whose cause must latch rather than brake (a feed-forward torque
    # over the motor's limit, say) names the owner's FaultKind value here; "" otherwise.
    fault_kind: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome is PublishOutcome.ACCEPTED


class SamplePublisher(Protocol):
    def publish_sample(self, positions_rad: np.ndarray) -> PublishReport:
        """Encode and send one sample (a value per arm joint); never retries."""
        ...


class StatePublisher(Protocol):
    """A publisher that sends the whole coherent commanded state (torque-capable drives).

    When a publisher has ``publish_state``, the owner calls it instead of
    ``publish_sample`` with the same Ruckig sample's position [rad], velocity [rad/s]
    and acceleration [rad/s^2]."""

    def publish_state(
        self,
        positions_rad: np.ndarray,
        velocities_rad_s: np.ndarray,
        accelerations_rad_s2: np.ndarray,
    ) -> PublishReport: ...
