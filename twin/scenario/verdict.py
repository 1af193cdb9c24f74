"""Did a run do only what its scenario expected? Refused targets, failed plan steps and
latched owner faults make a run fail unless the scenario's ``expect`` declares them; a held
object's failed verdict (a limit exceeded, a grasp slipped, a carry not planned) always does."""

from __future__ import annotations

from rob_twin.twin.scenario.plan_steps import failed_steps
from rob_twin.twin.scenario.run import RunResult
from rob_twin.twin.scenario.schema import Expect


def unexpected(result: RunResult, expect: Expect) -> list[str]:
    """One line per thing the run did that ``expect`` does not allow (empty: it passed)."""
    problems: list[str] = []
    for arm, reasons in result.refused_targets.items():
        allowed = set(expect.refused_targets.get(arm, ()))
        for reason, n in reasons.items():
            if reason not in allowed:
                problems.append(
                    f"{arm} arm: the owner refused {n} target(s) ({reason}); if intended, "
                    f'declare expect.refused_targets.{arm}: ["{reason}"]'
                )
    failed = failed_steps(result.plans)
    if len(failed) > expect.failed_plans:
        which = ", ".join(f"t={r['t']} s: {r.get('outcome') or r.get('status')}" for r in failed)
        problems.append(
            f"{len(failed)} plan step(s) failed ({which}); expect.failed_plans allows "
            f"{expect.failed_plans}"
        )
    for arm, fig in result.pipeline.items():
        allowed = set(expect.owner_faults.get(arm, ()))
        for fault in dict.fromkeys(fig.get("faults_latched", ())):
            if fault not in allowed:
                problems.append(
                    f"{arm} arm: the owner latched fault {fault} ({fig.get('fault_reason')}); "
                    f'if intended, declare expect.owner_faults.{arm}: ["{fault}"]'
                )
    for failure in getattr(result, "held", {}).get("failures", ()):
        problems.append(f"held_object: {failure}")
    return problems
