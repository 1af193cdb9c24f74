"""Telemetry fan-out: every client has its own latest-value slot, so a slow one never
stalls control or the other clients.

The publisher (the server's telemetry task, 30 Hz) overwrites each client's slot and
wakes that client's sender task; a sender that is stuck in a blocked socket write just
finds the newest value when it wakes (older ones are counted as ``overwritten``).
Nothing here ever awaits a client on the publishing side.

A slot keeps the latest text per message kind (``telemetry``, ``camera``, ``status``),
so a camera frame never pushes out joint telemetry and vice versa.
"""

from __future__ import annotations

import asyncio
import base64
import math
import time

import numpy as np
from rob_twin.models.names import Arm
from rob_twin.twin.teleop.messages import encode


class LatestSlot:
    """Latest text per kind for one client (the event loop's thread only)."""

    def __init__(self) -> None:
        self._pending: dict[str, str] = {}
        self.event = asyncio.Event()
        self.put_count = 0
        self.overwritten = 0
        self.sent = 0

    def put(self, kind: str, text: str) -> None:
        if kind in self._pending:
            self.overwritten += 1
        self._pending[kind] = text
        self.put_count += 1
        self.event.set()

    async def take(self) -> list[str]:
        """Wait for news; return the pending texts (oldest kind first) and empty the slot."""
        await self.event.wait()
        self.event.clear()
        out, self._pending = list(self._pending.values()), {}
        return out


class TelemetryHub:
    """The set of client slots (the event loop's thread only)."""

    def __init__(self) -> None:
        self.slots: dict[str, LatestSlot] = {}
        self.closed: list[dict] = []  # per closed client: puts, sent, overwritten

    def add(self, client: str) -> LatestSlot:
        slot = self.slots[client] = LatestSlot()
        return slot

    def remove(self, client: str) -> None:
        slot = self.slots.pop(client, None)
        if slot is not None:
            self.closed.append(
                {
                    "client": client,
                    "puts": slot.put_count,
                    "sent": slot.sent,
                    "overwritten": slot.overwritten,
                }
            )

    def fanout(self, kind: str, text: str) -> None:
        for slot in list(self.slots.values()):
            slot.put(kind, text)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


class TelemetrySource:
    """Builds one telemetry frame from thread-safe reads of the closed loop and the
    controller's own state (runs on the server's thread; never touches the MjData).

    clearance: a collision session (both arms, horizon > margin) owned by this thread."""

    def __init__(self, loop, controller, clearance=None, camera=None) -> None:
        self.loop = loop
        self.controller = controller
        self.clearance = clearance
        self.camera = camera  # object with .latest() -> (seq, jpeg bytes) | None, .reason
        self.seq = 0
        self._camera_seq = -1

    def telemetry(self) -> str:
        self.seq += 1
        arms, stacked = {}, []
        for arm in Arm:
            drv = self.loop.drivers[arm]
            owner = drv.owner
            q, v, _ = owner.commanded_state()
            fb = drv.measured_positions()
            stacked.append(q)
            arms[arm.value] = {
                "commanded_rad": [round(float(x), 6) for x in q],
                "velocity_rad_s": [round(float(x), 6) for x in v],
                "feedback_rad": None if fb is None else [round(float(x), 6) for x in fb],
                "mode": owner.mode.value,
                "fault": owner.fault.value if owner.fault else None,
                "fault_reason": owner.fault_reason,
                "generation": owner.generation,
            }
        clearance = pair = None
        if self.clearance is not None:
            cl = self.clearance.clearance(np.concatenate(stacked))
            clearance = _finite(cl.distance_m)
            pair = str(cl.pair) if cl.pair else None
        return encode(
            "telemetry",
            seq=self.seq,
            stamp_s=time.monotonic(),
            sim_time_s=self.loop.time,
            arms=arms,
            teleop=self.controller.status(),
            clearance_m=clearance,
            clearance_pair=pair,
            clearance_horizon_m=self.clearance.checker.config.horizon_m if self.clearance else None,
            camera=None if self.camera is None else self.camera.reason,
            hardware_io=False,
        )

    def camera_frame(self) -> str | None:
        """A new head-camera JPEG as a ``camera`` message, or None when there is none."""
        if self.camera is None:
            return None
        latest = self.camera.latest()
        if latest is None or latest[0] == self._camera_seq:
            return None
        self._camera_seq = latest[0]
        return encode("camera", seq=latest[0], jpeg_base64=base64.b64encode(latest[1]).decode())
