"""Telemetry fan-out: every client has its own latest-value slot, so a slow one never
stalls control or the other clients.

The publisher (the server's telemetry task, 30 Hz) overwrites each client's slot and
wakes that client's sender task; a sender that is stuck in a blocked socket write just
finds the newest value when it wakes (older ones are counted as ``overwritten``).
Nothing here ever awaits a client on the publishing side.

A slot keeps the latest text per message kind (``telemetry``, ``camera``, ``status``),
so a camera frame never pushes out joint telemetry and vice versa. Each slot also names
the camera its client watches (``camera``): video frames go only to the slots of their
camera.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter

import numpy as np
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import Arm
from rob_twin.planners.geom_pairs import PairClass
from rob_twin.twin.teleop.messages import encode
from rob_twin.twin.teleop.plain_words import status_lines
from rob_twin.twin.teleop.refusal_words import pair_words


class LatestSlot:
    """Latest text per kind for one client (the event loop's thread only)."""

    def __init__(self) -> None:
        self._pending: dict[str, str] = {}
        self.event = asyncio.Event()
        self.put_count = 0
        self.overwritten = 0
        self.sent = 0
        self.camera: str | None = None  # the camera this client watches (None: no video)
        self.role: str | None = None  # the role this client was last told (welcome, role)
        self.overwritten_by_kind: Counter[str] = Counter()

    def put(self, kind: str, text: str) -> None:
        if kind in self._pending:
            self.overwritten += 1
            self.overwritten_by_kind[kind] += 1
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

    def fanout_camera(self, camera: str, text: str) -> int:
        """Put a ``camera`` frame into the slots watching ``camera``; returns how many."""
        n = 0
        for slot in list(self.slots.values()):
            if slot.camera == camera:
                slot.put("camera", text)
                n += 1
        return n

    def wanted_cameras(self) -> frozenset[str]:
        return frozenset(s.camera for s in self.slots.values() if s.camera)


# a pair is highlighted (amber in the video, named as limiting) only this close [m]: six
# times the checker's 5 mm margin, 0.12 s of hand motion at the 0.25 m/s TCP speed limit
CLEARANCE_WARNING_M = 0.03


class ClearanceWarningError(InvalidValueError):
    """A clearance warning distance that is not a positive finite length [m]."""

    subject = "teleop telemetry"


def clearance_words(distance_m: float | None, pair: str | None, warning_m: float) -> str:
    """The clearance line in words: the nearest pair and how near it is, called limiting
    only within ``warning_m`` [m]; ``distance_m`` None: nothing within the horizon."""
    if distance_m is None or pair is None:
        return "nothing an arm could hit is near"
    mm = distance_m * 1000.0
    if distance_m < warning_m:
        return f"only {mm:.0f} mm between {pair}: this pair limits clearance (amber in the video)"
    return (
        f"clear: the nearest pair, {pair}, is {mm:.0f} mm apart "
        f"(highlighted below {warning_m * 1000:.0f} mm)"
    )


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


PAIR_CLASS_WORDS = {
    PairClass.ARM_ARM: "arm-arm",
    PairClass.ARM_BODY: "arm-body",
    PairClass.ARM_WORLD: "arm-world",
}  # the pairs an operator can do something about; SELF pairs inside one arm are left out


def operator_pairs(session) -> np.ndarray:
    """The pairs whose clearance an operator is shown (boolean ``ngeom x ngeom``): arm-arm,
    arm-body and arm-world pairs, less an arm against its own mount (geoms named under the
    same ``<arm>/`` prefix: a fixed distance the arm's own joints set, like a self pair)."""
    mask = session.pairs_of_classes(tuple(PAIR_CLASS_WORDS))
    names = session.checker.pairs.geom_names
    for arm in Arm:
        mine = np.array([n.startswith(f"{arm.value}/") for n in names])
        mask &= ~(mine[:, None] & mine[None, :])
    return mask


class TelemetrySource:
    """Builds one telemetry frame from thread-safe reads of the closed loop and the
    controller's own state (runs on the server's thread, the controller's: it uses the
    controller's kinematics for the TCP positions; never touches the MjData).

    clearance: a collision session (both arms, horizon > margin) owned by this thread;
    video: an object with ``.status`` and ``.stats`` (``rob_twin.twin.teleop.video``)."""

    def __init__(
        self, loop, controller, clearance=None, video=None, warning_m: float = CLEARANCE_WARNING_M
    ) -> None:
        """warning_m: a pair nearer than this [m] is the limiting pair (highlighted, named
        as limiting); a farther nearest pair is reported as clear."""
        if not (math.isfinite(warning_m) and warning_m > 0):
            raise ClearanceWarningError("warning_m", warning_m, "a distance > 0 m")
        self.warning_m = float(warning_m)
        self.loop = loop
        self.controller = controller
        self.clearance = clearance
        self.video = video
        self.seq = 0
        # the clearance-limiting geom pair (ids) of the last frame, for the video overlay;
        # replaced, never mutated, so another thread may read it
        self.limiting_geoms: tuple[int, ...] = ()
        self._matters = None if clearance is None else operator_pairs(clearance)

    def telemetry(self) -> str:
        self.seq += 1
        arms, stacked = {}, []
        for arm in Arm:
            drv = self.loop.drivers[arm]
            owner = drv.owner
            q, v, _ = owner.commanded_state()
            fb = drv.measured_positions()
            stacked.append(q)
            tcp = self.controller.filters[arm].tcp_pose(q).translation
            arms[arm.value] = {
                "commanded_rad": [round(float(x), 6) for x in q],
                "velocity_rad_s": [round(float(x), 6) for x in v],
                "feedback_rad": None if fb is None else [round(float(x), 6) for x in fb],
                "tcp_m": [round(float(x), 4) for x in tcp],  # FK of commanded, base frame
                "mode": owner.mode.value,
                "fault": owner.fault.value if owner.fault else None,
                "fault_reason": owner.fault_reason,
                "generation": owner.generation,
            }
        clearance = pair = kind = words = None
        geoms: list[int] | None = None
        if self.clearance is not None:
            cl = self.clearance.clearance(np.concatenate(stacked), self._matters)
            clearance = _finite(cl.distance_m)
            if cl.pair is not None and clearance is not None:
                pair = f"{cl.pair.name1} vs {cl.pair.name2}"
                kind = PAIR_CLASS_WORDS.get(cl.pair.pair_class)
                geoms = [cl.pair.geom1, cl.pair.geom2]
                words = pair_words(cl.pair.name1, cl.pair.name2)
        limiting = clearance is not None and clearance < self.warning_m
        self.limiting_geoms = tuple(geoms or ()) if limiting else ()
        status = self.controller.status()
        return encode(
            "telemetry",
            seq=self.seq,
            stamp_s=time.monotonic(),
            sim_time_s=self.loop.time,
            arms=arms,
            teleop=status,
            notes=self._notes(status["counts"]),
            clearance_m=clearance,
            clearance_pair=pair,
            clearance_class=kind,
            clearance_geoms=geoms,
            clearance_limiting=limiting,  # within the warning distance: highlighted
            clearance_warning_m=self.warning_m,
            clearance_text=clearance_words(clearance, words, self.warning_m),
            clearance_horizon_m=self.clearance.checker.config.horizon_m if self.clearance else None,
            video=self._video(),
            hardware_io=False,
        )

    def _notes(self, counts: dict) -> list[str]:
        filt = self.controller.filters[Arm.RIGHT]
        margin = filt.collision.margin if filt.collision is not None else 0.0
        return status_lines(counts, filt.config, self.controller.config.input_timeout_s, margin)

    def _video(self) -> dict | None:
        if self.video is None:
            return None
        ms = list(self.video.stats.render_ms)
        return {
            "status": self.video.status,
            "frames": self.video.stats.frames,
            "render_ms_p50": round(float(np.median(ms)), 2) if ms else None,
            "cameras": list(self.video.cameras),
        }
