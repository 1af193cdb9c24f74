"""Plain words for the operator: which limit clamped or refused targets, how often, and why.

``status_lines`` turns the teleop controller's counters into sentences; the page shows them
above the raw counters (which sit behind a details toggle). Counts are since the server
started; ``targets_checked`` is every target that reached the safety filter.
"""

from __future__ import annotations

from collections.abc import Mapping

from rob_twin.twin.teleop.safety import SafetyConfig


def status_lines(
    counts: Mapping[str, int], safety: SafetyConfig, input_timeout_s: float, margin_m: float
) -> list[str]:
    """One sentence per limit that acted: the limit's value [SI units], how many of the
    checked targets it clamped or refused, and what that means for the arm."""
    n = int(counts.get("targets_checked", 0))

    def of(key: str) -> str:
        return f"{int(counts.get(key, 0))} of {n} targets"

    lines = []
    if counts.get("tcp_clamped"):
        lines.append(
            f"TCP speed limit {safety.max_tcp_speed_m_s:g} m/s "
            f"({safety.max_tcp_angular_speed_rad_s:g} rad/s turning): {of('tcp_clamped')} "
            "clamped. The hand asked for more than the arm may follow per step, so the arm "
            "lags behind the hand and catches up when it slows down."
        )
    if counts.get("joint_clamped"):
        lines.append(
            f"joint step limit {safety.max_joint_step_rad:g} rad per target: "
            f"{of('joint_clamped')} cut short (a large joint change for a small hand motion: "
            "near a singularity or a joint limit)."
        )
    if counts.get("rejected_ik"):
        lines.append(
            f"refused, no IK solution within {safety.ik_step_bound_rad:g} rad of the arm: "
            f"{of('rejected_ik')} (out of reach or through a singularity); the arm holds its "
            "last accepted target."
        )
    if counts.get("rejected_goal"):
        lines.append(
            f"refused by the goal checks (joint limits, holding torque, workspace): "
            f"{of('rejected_goal')}; the arm holds its last accepted target."
        )
    if counts.get("rejected_collision"):
        lines.append(
            f"refused, collision within the {margin_m * 1000:g} mm margin (at the target, on "
            f"the way there or on the stopping path): {of('rejected_collision')}; the arm "
            "holds its last accepted target."
        )
    if counts.get("staleness_brakes"):
        lines.append(
            f"braked {counts['staleness_brakes']} times: no input for more than "
            f"{input_timeout_s:g} s while engaged (a slow network or a stalled page); "
            "press grip again to go on."
        )
    if counts.get("owner_refused") or counts.get("owner_authority_lost"):
        lines.append(
            f"the arm owner refused {int(counts.get('owner_refused', 0))} targets and "
            f"withdrew authority {int(counts.get('owner_authority_lost', 0))} times "
            "(a fault, a reset or a lapsed lease): reset the owner if needed, then press grip."
        )
    dropped = {
        k: int(counts.get(k, 0))
        for k in ("stale_dropped", "rate_dropped", "malformed", "oversize_dropped", "not_operator")
        if counts.get(k)
    }
    if dropped:
        lines.append(
            "input frames dropped: "
            + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in dropped.items())
            + "."
        )
    return lines
