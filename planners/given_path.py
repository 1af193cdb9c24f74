"""Check and certify a joint-space trajectory given from outside the planner (an
excitation, a recorded motion): the same final check and clearance certificate
``ArmGroup.plan`` puts every plan of its own through, with no repair.

``certify_given_path(group, moving, path)`` samples ``path`` (anything with ``duration``
[s] and ``evaluate(times) -> (q, qd, qdd)``, stacked over the moving arms, like
``rob_twin.planners.retime.TimedPath``) at the group's rate, checks every sample
(``rob_twin.planners.final_check``: measured or proven free at the group's margin),
certifies the time between the samples (``rob_twin.planners.pair_certificate``,
bisecting on the path itself) and returns the certified ``Plan``. Anything else raises
``GivenPathRefused``, naming the samples and pairs: the path is never changed to make it
pass (a planner's repair would no longer be the motion asked for).

Units: seconds, radians, metres.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rob_twin.planners.errors import PlannerError
from rob_twin.planners.final_check import final_check
from rob_twin.planners.pair_certificate import certify_timed
from rob_twin.planners.plan import ArmTrajectory, Plan

MAX_LISTED = 5  # colliding samples named one by one


@dataclass(frozen=True)
class SampleHit:
    """A sample within the margin: its index, time [s], distance [m] and pair."""

    index: int
    t_s: float
    distance_m: float
    pair: str

    def as_dict(self) -> dict:
        return {
            "sample": self.index,
            "t_s": round(self.t_s, 4),
            "distance_m": round(self.distance_m, 6),
            "pair": self.pair,
        }


class GivenPathRefused(PlannerError):
    """A given path the group does not certify. ``kind``: ``collision`` (samples within the
    margin: ``colliding`` of ``samples``, the first ``hits`` named) or ``uncertified`` (the
    clearance between samples could not be bounded: ``reason``)."""

    def __init__(
        self,
        kind: str,
        reason: str,
        hits: tuple[SampleHit, ...] = (),
        colliding: int = 0,
        samples: int = 0,
    ):
        self.kind, self.reason, self.hits = kind, reason, hits
        self.colliding, self.samples = colliding, samples
        super().__init__(reason)

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "reason": self.reason,
            "colliding_samples": self.colliding,
            "samples": self.samples,
            "hits": [h.as_dict() for h in self.hits],
        }


def certify_given_path(group, moving: Sequence[str], path, seed: int = -1) -> Plan:
    """The certified Plan of ``path`` (stacked over ``moving``, in group order) from the
    group's reference state; GivenPathRefused when a sample is within the margin or the
    certificate fails. ``seed``: recorded in the plan (what drew the path, -1: none)."""
    started = time.perf_counter()
    moving = tuple(a for a in group.arm_names if a in moving)
    meter = group.meter.session(moving, group.reference_qpos)
    fc = final_check(group, moving, path, meter)
    times, q, qd, qdd = fc.sampled
    if fc.hit is not None:
        raise _collision(group, moving, times, q, fc.hit)
    checked = time.perf_counter()
    cert = certify_timed(
        group,
        moving,
        path,
        group.config.certificate,
        initial=fc.initial,
        sampled=(times, q, qd),
        session=meter,
    )
    if not cert.certified:
        raise GivenPathRefused(
            "uncertified",
            f"not certified ({cert.fail_kind}): {cert.failure}",
            samples=int(times.size),
        )
    done = time.perf_counter()
    arms = {
        a: ArmTrajectory(a, group.joint_names(a), q[:, c], qd[:, c], qdd[:, c])
        for a, c in group.columns(moving).items()
    }
    return Plan(
        t=times,
        rate_hz=group.config.rate_hz,
        arms=arms,
        waypoints=q[[0, -1]].copy(),
        min_clearance=fc.record,
        stage_times_s={
            "check": checked - started,
            "certify": done - checked,
            "total": done - started,
        },
        checked_states=fc.measured,
        repairs=0,
        seed=seed,
        certificate=cert,
        proven_samples=fc.proven,
    )


def _collision(group, moving, times: np.ndarray, q: np.ndarray, hit) -> GivenPathRefused:
    """Every sample within the margin counted, the first ``MAX_LISTED`` named."""
    margin = group.config.collision.margin_m
    meter = group.meter.session(moving, group.reference_qpos)
    hits: list[SampleHit] = []
    colliding = 0
    for i, row in enumerate(q):
        c = meter.clearance(row)
        if c.distance_m < margin:
            colliding += 1
            if len(hits) < MAX_LISTED:
                hits.append(SampleHit(i, float(times[i]), float(c.distance_m), str(c.pair)))
    if not hits:  # the check's own hit (a state it measured) when no sample re-measures so
        t_hit, c = hit
        i = int(np.argmin(np.abs(times - t_hit)))
        hits.append(SampleHit(i, float(t_hit), float(c.distance_m), str(c.pair)))
        colliding = 1
    first = hits[0]
    reason = (
        f"{colliding} of {times.size} samples within the {margin * 1e3:.1f} mm margin; first "
        f"sample {first.index} at t={first.t_s:.3f} s: {first.pair} "
        f"{first.distance_m * 1e3:.2f} mm"
    )
    return GivenPathRefused("collision", reason, tuple(hits), colliding, int(times.size))
