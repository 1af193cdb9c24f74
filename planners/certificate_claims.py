"""What ``rob-twin certify`` re-derives before it trusts a figure of a plan file.

A plan file is a set of claims. ``certificate_check.verify_document`` recomputes every
certified minimum with coal; this module re-derives the rest, from the model and the
samples themselves, and names the field of each claim that differs by more than its
tolerance (each a disagreement: ``rob-twin certify`` exits 1):

- **Samples against the model.** Every sample and bisection state of every moving joint
  lies in the joint's range in the model (``jnt_range``; ``RANGE_TOLERANCE_RAD``).
- **Samples against themselves.** Consecutive positions agree with the velocities between
  them: any motion from (q_k, qd_k) to (q_k+1, qd_k+1) under the acceleration limit a moves
  the trapezoid (qd_k + qd_k+1) dt / 2 give or take a dt^2 / 4 (plus
  ``SAMPLE_TOLERANCE_RAD``); consecutive velocities differ by at most a dt.
- **Limits against the samples.** A velocity or acceleration limit below the plan's own
  peak |qd| or |qdd| is refused: the speed bound between samples would rest on a limit the
  plan breaks. The bound certify builds uses, per joint, the larger of the stored limit
  and the samples' peak (``sound_limits``), never a stored limit alone.
- **Certificate against the recomputation.** Each listed pair's allowance (from the stored
  uncertainty spec, the model and the samples), class, envelope (its certified minimum
  plus its allowance), active query times (times the certificate measured); the
  certificate's minimum, lowest pair and time (the lowest listed pair, or the far-pair
  bound); the far-pair bound (at least ``pairs_far`` of the unlisted pairs must be that far
  by coal's envelope, within ``agree_tolerance_m``); the sample counts; the failure fields
  of a certified plan (empty).

The figures of a certificate are written to 7 decimals [m] and 6 decimals [s], so
internal sums agree to ``ROUNDING_TOLERANCE`` (1e-6). Units: metres, seconds, radians.
"""

from __future__ import annotations

import mujoco
import numpy as np
from rob_twin.planners.certificate_record import FAR_PAIR_TEXT

RANGE_TOLERANCE_RAD = 1e-6  # a sample this far outside its joint's range is outside
SAMPLE_TOLERANCE_RAD = 1e-6  # slack of the trapezoid check beyond a dt^2 / 4 [rad]
LIMIT_TOLERANCE = 1e-6  # relative: a peak this much above its limit breaks it
ROUNDING_TOLERANCE = 1e-6  # figures written to 7 (m) or 6 (s) decimals
MAX_PER_KIND = 3  # disagreements of one kind listed (the count is given)

Problem = tuple[str, str]  # (field, what is wrong)


def _columns(doc: dict) -> list[tuple[str, int, str]]:
    """(arm, joint index, joint name) of each stacked column, moving arms in order."""
    return [(a, j, name) for a in doc["moving"] for j, name in enumerate(doc["joint_names"][a])]


def _stack(doc: dict, key: str) -> np.ndarray:
    return np.hstack([np.asarray(doc[key][a], float) for a in doc["moving"]])


def _limits(doc: dict, key: str) -> np.ndarray:
    return np.concatenate([np.asarray(doc[key][a], float) for a in doc["moving"]])


def sound_limits(doc: dict) -> tuple[np.ndarray, np.ndarray]:
    """(acceleration (n,) [rad/s^2], velocity (n,) [rad/s]) per stacked joint: the larger
    of each stored limit and what the samples show (peak |qdd|, peak |qd_k+1 - qd_k| / dt;
    peak |qd|), so the speed bound between samples never rests on a limit the plan breaks."""
    t = np.asarray(doc["t_s"], float)
    qd = _stack(doc, "qd_rad_s")
    accel = _limits(doc, "acceleration_rad_s2").copy()
    vmax = _limits(doc, "velocity_rad_s").copy()
    vmax = np.maximum(vmax, np.abs(qd).max(axis=0))
    if "qdd_rad_s2" in doc:
        accel = np.maximum(accel, np.abs(_stack(doc, "qdd_rad_s2")).max(axis=0))
    if t.size > 1:
        accel = np.maximum(accel, (np.abs(np.diff(qd, axis=0)) / np.diff(t)[:, None]).max(axis=0))
    return accel, vmax


def sample_problems(doc: dict, model: mujoco.MjModel) -> list[Problem]:
    """The samples against the model's joint ranges, against their own velocities and
    accelerations, and the stored limits against the samples (module docstring)."""
    cols = _columns(doc)
    t = np.asarray(doc["t_s"], float)
    q, qd = _stack(doc, "q_rad"), _stack(doc, "qd_rad_s")
    qdd = _stack(doc, "qdd_rad_s2") if "qdd_rad_s2" in doc else None
    accel, vmax = _limits(doc, "acceleration_rad_s2"), _limits(doc, "velocity_rad_s")
    out: list[Problem] = []
    out += _range_problems(doc, model, cols, q)
    out += _limit_problems(cols, "velocity_rad_s", vmax, "qd_rad_s", np.abs(qd), "speed", "rad/s")
    if qdd is not None:
        out += _limit_problems(
            cols, "acceleration_rad_s2", accel, "qdd_rad_s2", np.abs(qdd), "acceleration", "rad/s^2"
        )
    if t.size > 1:
        out += _difference_problems(cols, t, q, qd, sound_limits(doc)[0])
    return out


def _range_problems(doc, model, cols, q) -> list[Problem]:
    out: list[Problem] = []
    extra = doc["certificate"]["extra_queries"]
    xq = np.array([e["q_rad"] for e in extra], float).reshape(len(extra), q.shape[1])
    for c, (a, j, name) in enumerate(cols):
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0 or not model.jnt_limited[jid]:
            continue
        lo, hi = (float(x) for x in model.jnt_range[jid])
        where = f"[{lo:.6g}, {hi:.6g}] rad, {name}'s range in the model"
        for field, values in ((f"q_rad.{a}", q[:, c]), ("certificate.extra_queries", xq[:, c])):
            bad = np.flatnonzero(
                (values < lo - RANGE_TOLERANCE_RAD) | (values > hi + RANGE_TOLERANCE_RAD)
            )
            if bad.size:
                k = int(bad[0])
                at = f"{field}[{k}][{j}]" if field.startswith("q_rad") else f"{field}[{k}].q_rad"
                out.append(
                    (at, f"{float(values[k])!r} rad is outside {where} ({bad.size} states outside)")
                )
    return out[:MAX_PER_KIND] + _more(out)


def _limit_problems(cols, field, limit, sample_field, peaks, what, unit) -> list[Problem]:
    out: list[Problem] = []
    for c, (a, j, _name) in enumerate(cols):
        k = int(np.argmax(peaks[:, c]))
        peak = float(peaks[k, c])
        if peak > limit[c] * (1.0 + LIMIT_TOLERANCE) + 1e-12:
            out.append(
                (
                    f"{field}.{a}[{j}]",
                    f"{float(limit[c])!r} {unit} is below the plan's own peak {what} "
                    f"{peak:.6g} {unit} ({sample_field}.{a}[{k}][{j}]): valid: at least the "
                    "peak; the speed "
                    "bound between samples would rest on a limit the plan breaks",
                )
            )
    return out[:MAX_PER_KIND] + _more(out)


def _difference_problems(cols, t, q, qd, accel) -> list[Problem]:
    """Positions against the trapezoid of their velocities, velocities against the
    acceleration limit, sample to sample."""
    dt = np.diff(t)[:, None]
    moved = np.diff(q, axis=0)
    trapezoid = (qd[:-1] + qd[1:]) / 2.0 * dt
    tol = accel[None, :] * dt**2 / 4.0 + SAMPLE_TOLERANCE_RAD
    err = np.abs(moved - trapezoid) - tol
    out: list[Problem] = []
    for c, (a, j, _name) in enumerate(cols):
        bad = np.flatnonzero(err[:, c] > 0)
        if bad.size:
            k = int(bad[0])
            out.append(
                (
                    f"q_rad.{a}[{k + 1}][{j}]",
                    f"moves {moved[k, c]:.6g} rad from the sample before, where its velocities "
                    f"(qd_rad_s.{a}[{k}..{k + 1}][{j}]) move it {trapezoid[k, c]:.6g} rad: valid: "
                    f"within {tol[k, c]:.3g} rad (a dt^2/4 under the acceleration limit "
                    f"{accel[c]:.6g} rad/s^2, + {SAMPLE_TOLERANCE_RAD:g}); {bad.size} such steps",
                )
            )
    dv = np.abs(np.diff(qd, axis=0)) - (accel[None, :] * dt + SAMPLE_TOLERANCE_RAD)
    for c, (a, j, _name) in enumerate(cols):
        bad = np.flatnonzero(dv[:, c] > 0)
        if bad.size:
            k = int(bad[0])
            out.append(
                (
                    f"qd_rad_s.{a}[{k + 1}][{j}]",
                    f"changes by {qd[k + 1, c] - qd[k, c]:.6g} rad/s in {dt[k, 0]:.6g} s: valid: "
                    f"at most the acceleration limit {accel[c]:.6g} rad/s^2 x dt",
                )
            )
    return out[:MAX_PER_KIND] + _more(out)


def _more(out: list[Problem]) -> list[Problem]:
    if len(out) <= MAX_PER_KIND:
        return []
    return [(out[MAX_PER_KIND][0], f"and {len(out) - MAX_PER_KIND} more of this kind")]


def certificate_problems(
    cert: dict,
    doc: dict,
    names: dict[str, int],
    classes: list[str],
    pair_min: np.ndarray,
    allowance: np.ndarray,
    query_t: np.ndarray,
    agree_tolerance_m: float,
) -> list[Problem]:
    """The certificate's figures other than each listed pair's minimum (which
    ``certificate_check._compare_pairs`` compares) against the recomputation: ``names``
    maps each checked pair's name to its row, ``classes`` its class; ``pair_min`` (P,) coal's
    certified minimum and ``allowance`` (P,) the allowance of each pair [m]; ``query_t`` the
    times the certificate measured (samples and bisection states) [s]."""
    out: list[Problem] = []
    tol = ROUNDING_TOLERANCE
    t = np.asarray(doc["t_s"], float)
    listed = cert["pairs"]
    for i, p in enumerate(listed):
        row = names.get(p["pair"])
        field = f"certificate.pairs[{i}]"
        if row is None:
            continue  # _compare_pairs names it
        if "allowance_m" in p and abs(p["allowance_m"] - allowance[row]) > tol:
            out.append(
                (
                    f"{field}.allowance_m",
                    f"{p['allowance_m']!r} m differs from {allowance[row]:.7f} m, the allowance "
                    "the stored uncertainty spec gives this pair over these samples",
                )
            )
        if "class" in p and p["class"] != classes[row]:
            out.append((f"{field}.class", f"{p['class']!r}: the model's class is {classes[row]!r}"))
        allow = p.get("allowance_m", allowance[row])
        if "envelope_min_m" in p and abs(p["envelope_min_m"] - p["certified_min_m"] - allow) > tol:
            out.append(
                (
                    f"{field}.envelope_min_m",
                    f"{p['envelope_min_m']!r} m is not certified_min_m + allowance_m "
                    f"({p['certified_min_m'] + allow:.7f} m)",
                )
            )
        out += _active_queries(p, field, query_t)
    out += _minimum_claims(cert, listed, t)
    out += _far_claims(cert, names, pair_min, agree_tolerance_m)
    out += _count_claims(cert, t)
    if cert["certified"]:
        for key, empty in (("failure", ""), ("fail_kind", ""), ("fail_time_s", None)):
            if key in cert and cert[key] != empty:
                out.append(
                    (f"certificate.{key}", f"{cert[key]!r} on a certified plan: valid: {empty!r}")
                )
    return out


def _active_queries(p: dict, field: str, query_t: np.ndarray) -> list[Problem]:
    aq = p.get("active_query_times_s")
    if aq is None:
        return []
    out: list[Problem] = []
    for k, x in enumerate(aq):
        near = float(np.min(np.abs(query_t - x))) if query_t.size else np.inf
        if near > ROUNDING_TOLERANCE:
            out.append(
                (
                    f"{field}.active_query_times_s[{k}]",
                    f"{x!r} s is no time the certificate measured (nearest {near:.3g} s away)",
                )
            )
    if "at_s" in p and not aq[0] - ROUNDING_TOLERANCE <= p["at_s"] <= aq[1] + ROUNDING_TOLERANCE:
        out.append((f"{field}.at_s", f"{p['at_s']!r} s: valid: between its active queries {aq} s"))
    return out


def _minimum_claims(cert: dict, listed: list, t: np.ndarray) -> list[Problem]:
    """certified_min_m is the lower of the lowest listed pair and the far-pair bound (the
    horizon when there is neither); ``pair`` and ``at_s`` name the lowest listed pair."""
    out: list[Problem] = []
    far = cert.get("far_pairs_min_m")
    near = min((p["certified_min_m"] for p in listed), default=np.inf)
    want = min(near, np.inf if far is None else far)
    if not np.isfinite(want):
        want = cert["horizon_m"]
    if abs(cert["certified_min_m"] - want) > ROUNDING_TOLERANCE:
        out.append(
            (
                "certificate.certified_min_m",
                f"{cert['certified_min_m']!r} m is not the lower of its lowest listed pair and "
                f"its far-pair bound ({want!r} m)",
            )
        )
    if "pair" in cert and listed:
        best = min(range(len(listed)), key=lambda i: listed[i]["certified_min_m"])
        lowest = listed[best]
        by_near = far is None or lowest["certified_min_m"] <= far
        ties = {p["pair"] for p in listed if p["certified_min_m"] == lowest["certified_min_m"]}
        if (cert["pair"] not in ties) if by_near else (cert["pair"] != FAR_PAIR_TEXT):
            name = lowest["pair"] if by_near else FAR_PAIR_TEXT
            out.append(("certificate.pair", f"{cert['pair']!r}: the lowest pair is {name!r}"))
        at = lowest.get("at_s")
        if "at_s" in cert and at is not None and abs(cert["at_s"] - at) > ROUNDING_TOLERANCE:
            out.append(
                ("certificate.at_s", f"{cert['at_s']!r} s: the lowest listed pair's is {at!r} s")
            )
    elif "at_s" in cert and not listed and abs(cert["at_s"] - t[0]) > ROUNDING_TOLERANCE:
        out.append(("certificate.at_s", f"{cert['at_s']!r} s: valid: {t[0]!r} s (no pair listed)"))
    return out


def _far_claims(cert: dict, names: dict, pair_min: np.ndarray, tol: float) -> list[Problem]:
    """``pairs_far`` unlisted pairs each at least ``far_pairs_min_m``: coal's envelope of at
    least that many unlisted pairs must reach it (within ``tol``)."""
    far, count = cert.get("far_pairs_min_m"), cert.get("pairs_far") or 0
    if far is None or count <= 0:
        return []
    listed = {p["pair"] for p in cert["pairs"]}
    rows = [r for n, r in names.items() if n not in listed]
    values = np.sort(pair_min[rows])[::-1]
    reach = int(np.count_nonzero(values >= far - tol))
    if reach >= count:
        return []
    top = f"{values[0] * 1e3:.3f} mm" if values.size else "none"
    kth = f"{values[count - 1] * 1e3:.4f} mm" if values.size >= count else "fewer pairs"
    return [
        (
            "certificate.far_pairs_min_m",
            f"{far!r} m claimed for {count} unlisted pairs (pairs_far), but coal's envelope "
            f"bounds only {reach} of the {values.size} unlisted pairs that high (the "
            f"{count}th highest: {kth}; the highest: {top}); valid: at most the recomputed "
            f"bound + {tol:g} m",
        )
    ]


def _count_claims(cert: dict, t: np.ndarray) -> list[Problem]:
    index = cert.get("measured_sample_index")
    measured = t.size if index is None else len(index)
    out: list[Problem] = []
    for key, want in (
        ("samples", t.size),
        ("sample_queries", measured),
        ("measured_samples", measured),
    ):
        if key in cert and cert[key] != want:
            out.append((f"certificate.{key}", f"{cert[key]!r}: the file holds {want}"))
    return out
