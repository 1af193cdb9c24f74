"""The clearance certificate's records: one pair's bound (``PairBound``) and a plan's
certificate (``PlanClearanceCertificate``), which serializes to JSON with the plan and is
re-verified by ``rob_twin.planners.certificate_check`` from the model alone with coal.
Units: metres, seconds, radians.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rob_twin.planners.uncertainty import UncertaintySpec

# the certificate's pair when the far-pair bound is its minimum (a claim plan files carry)
FAR_PAIR_TEXT = "(a pair never within the horizon)"

FAIL_QUERY_BELOW = "query_below_threshold"  # a measured state within margin + allowance
FAIL_INCONCLUSIVE = "envelope_inconclusive"  # the envelope dips below after every bisection


@dataclass(frozen=True)
class PairBound:
    """One pair's certified minimum [m] (envelope minus allowance), where [s], its
    allowance E [m] and the times of the two active queries [s]."""

    pair: str
    pair_class: str
    certified_min_m: float
    envelope_min_m: float
    at_s: float
    allowance_m: float
    active_query_times_s: tuple[float, float]

    def as_dict(self) -> dict:
        return {
            "pair": self.pair,
            "class": self.pair_class,
            "certified_min_m": round(self.certified_min_m, 7),
            "envelope_min_m": round(self.envelope_min_m, 7),
            "at_s": round(self.at_s, 6),
            "allowance_m": round(self.allowance_m, 7),
            "active_query_times_s": [round(x, 6) for x in self.active_query_times_s],
        }


@dataclass(frozen=True)
class PlanClearanceCertificate:
    """The clearance certificate of a plan: every checked pair's clearance, over the whole
    continuous plan, is at least ``margin_m`` (certified) or not (``failure``).

    certified_min_m: smallest certified minimum over all pairs [m]; pair/at_s: where;
    pairs: the pairs below ``report_m`` one by one; pairs_total / pairs_far: pairs
    certified, and those never within the horizon (bounded by it, no query of their
    own); extra_t_s / extra_q_rad: the queries between samples (the check's sub-steps and
    bisection), times [s] (M,) and stacked states [rad] (M, n); failure: why it
    is not certified (empty when it is); fail_time_s: where to repair."""

    certified: bool
    margin_m: float
    horizon_m: float
    certified_min_m: float
    pair: str
    at_s: float
    pairs: tuple[PairBound, ...]
    pairs_total: int
    pairs_far: int
    far_pairs_min_m: float
    sample_queries: int  # 125 Hz samples measured (the rest proven free by the final check)
    extra_t_s: np.ndarray
    extra_q_rad: np.ndarray
    spec: UncertaintySpec
    payload_reach_m: float
    model_hash: str
    failure: str = ""
    fail_time_s: float | None = None
    fail_kind: str = ""  # FAIL_QUERY_BELOW or FAIL_INCONCLUSIVE when not certified
    samples: int = 0  # 125 Hz samples the certificate covers (measured or not)
    measured_index: np.ndarray | None = None  # which samples were measured (None: all)
    elapsed_s: float = 0.0
    uncertified_attempts: int = 0  # earlier retimed paths of this plan that failed (then repaired)
    far_pair: str = ""  # the far pair whose closed-form bound is far_pairs_min_m ("" when none)

    def where(self) -> str:
        """What the certified minimum is, for a person: the lowest pair's name, or, when
        the far-pair bound is lower, that it is a bound and on which pair."""
        if self.pair != FAR_PAIR_TEXT:
            return self.pair
        if not self.far_pair:
            return FAR_PAIR_TEXT.strip("()")
        horizon_mm = self.horizon_m * 1e3
        return f"bound of {self.far_pair}, never within the {horizon_mm:.0f} mm horizon"

    @property
    def n_extra_queries(self) -> int:
        """Queries between samples (bisection; sub-steps of an older check)."""
        return int(self.extra_t_s.size)

    @property
    def measured_samples(self) -> int:
        """125 Hz samples whose distances were measured (<= ``samples``)."""
        return self.sample_queries

    def as_dict(self) -> dict:
        return {
            "certified": self.certified,
            "margin_m": self.margin_m,
            "horizon_m": self.horizon_m,
            "certified_min_m": round(self.certified_min_m, 7),
            "pair": self.pair,
            "at_s": round(self.at_s, 6),
            "pairs_total": self.pairs_total,
            "pairs_far": self.pairs_far,
            "far_pairs_min_m": round(self.far_pairs_min_m, 7)
            if math.isfinite(self.far_pairs_min_m)
            else None,
            "sample_queries": self.sample_queries,
            "measured_samples": self.sample_queries,
            "samples": self.samples,
            "measured_sample_index": None
            if self.measured_index is None
            else [int(k) for k in self.measured_index],
            "extra_queries": [
                {"t_s": float(t), "q_rad": q.tolist()}
                for t, q in zip(self.extra_t_s, self.extra_q_rad, strict=True)
            ],
            "pairs": [p.as_dict() for p in self.pairs],
            "uncertainty": self.spec.as_dict(),
            "payload_reach_m": self.payload_reach_m,
            "model_hash": self.model_hash,
            "failure": self.failure,
            "fail_time_s": self.fail_time_s,
            "fail_kind": self.fail_kind,
            "uncertified_attempts": self.uncertified_attempts,
            "method": "seed 003 multi-sample Lipschitz envelope, per pair, exact minimum",
        }
