"""A host-side middleware latency model: what a robot middleware adds between an application and
the arm owner (command path) and between the owner's feedback and the application (feedback
path), per arm.

Each path is ``fixed_s + U(0, cycle_s) + N(0, jitter_s)`` (clipped at 0): a fixed transport
delay, the wait for the next cycle of a periodic loop the message must pass through (uniform:
the message's phase against that loop is random), and a jitter. Named settings:

* ``none``: nothing (the twin's own stack alone).
* ``ros2_stock``: the stock ROS 2 stack of seed 002 (ros2_control), derived from these
  ASSUMPTIONS, not fitted to any figure: the controller manager's update loop runs at 100 Hz
  (the ros2_control demos' ``update_rate``; the seed does not state its own), so a command
  waits U(0, 10 ms) for the next ``update()`` + ``write()``, and a feedback change waits U(0,
  10 ms) for the next ``read()`` and the joint-state broadcaster's publication in that cycle;
  each direction crosses DDS once between two processes on one host: 1.0 ms fixed with 0.3 ms
  jitter (ASSUMED: a small message, default QoS, rclpy at either end). Mean 12 ms per round,
  standard deviation sqrt(2 * 10^2 / 12 + 2 * 0.3^2) = 4.1 ms.

Units: seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rob_twin.models.errors import UnknownNameError
from rob_twin.twin.errors import TwinInputError


@dataclass(frozen=True)
class MiddlewarePath:
    """One direction: fixed_s + U(0, cycle_s) + N(0, jitter_s), clipped at 0 [s]."""

    fixed_s: float = 0.0
    cycle_s: float = 0.0
    jitter_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("fixed_s", "cycle_s", "jitter_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and 0.0 <= v <= 1.0):
                raise TwinInputError(f"middleware {name}", v, "in [0, 1] s")

    def draw(self, rng: np.random.Generator) -> float:
        """One delay [s]."""
        d = self.fixed_s + rng.uniform(0.0, self.cycle_s) + rng.normal(0.0, self.jitter_s)
        return max(0.0, float(d))

    @property
    def mean_s(self) -> float:
        return self.fixed_s + 0.5 * self.cycle_s

    @property
    def sigma_s(self) -> float:
        return math.sqrt(self.cycle_s**2 / 12.0 + self.jitter_s**2)


@dataclass(frozen=True)
class Middleware:
    """A middleware setting: its name, command path and feedback path (one arm's)."""

    name: str
    command: MiddlewarePath
    feedback: MiddlewarePath

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "command": vars(self.command),
            "feedback": vars(self.feedback),
            "round_trip_mean_s": self.command.mean_s + self.feedback.mean_s,
            "round_trip_sigma_s": math.hypot(self.command.sigma_s, self.feedback.sigma_s),
        }


_DDS = dict(fixed_s=0.001, jitter_s=0.0003)  # one DDS hop on one host (ASSUMED)
_CONTROLLER_CYCLE_S = 0.01  # controller manager update_rate 100 Hz (ASSUMED)

MIDDLEWARE: dict[str, Middleware] = {
    "none": Middleware("none", MiddlewarePath(), MiddlewarePath()),
    "ros2_stock": Middleware(
        "ros2_stock",
        MiddlewarePath(cycle_s=_CONTROLLER_CYCLE_S, **_DDS),
        MiddlewarePath(cycle_s=_CONTROLLER_CYCLE_S, **_DDS),
    ),
}


def middleware(name: str) -> Middleware:
    """The named setting (``MIDDLEWARE``); UnknownNameError lists them."""
    if name not in MIDDLEWARE:
        raise UnknownNameError("middleware", name, list(MIDDLEWARE))
    return MIDDLEWARE[name]
