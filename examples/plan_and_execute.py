"""Plan both arms together and execute the plan through the owners, from a running twin.

    python examples/plan_and_execute.py

Starts the lockstep closed loop (owners, Amber codec, simulated CAN buses, drives, physics),
takes the planner's start from the owners' commanded state (``ArmGroup.for_loop``), plans
both arms to new joint goals (each sample checked arm against arm and against the world,
the plan certified between samples) and runs it through the synchronized executor. Prints
the plan's duration and clearance and the execution's outcome. Simulated (hardware_io: false).
"""

from __future__ import annotations

import numpy as np
from rob_twin.models.names import Arm
from rob_twin.planners import ArmGroup
from rob_twin.twin import ClosedLoop, run_plan


def main() -> int:
    loop = ClosedLoop()  # ROB at home, Amber drives, lockstep
    try:
        group = ArmGroup.for_loop(loop)  # the start is where the owners are
        goals = {}
        for arm, bend in ((Arm.RIGHT, -0.3), (Arm.LEFT, 0.3)):
            q = loop.commanded(arm)
            q[0] += bend  # swing each arm's first joint
            q[3] -= 0.2  # and open its elbow
            goals[arm] = q
        plan = group.plan(goals, seed=0).unwrap()
        clearance_mm = plan.min_clearance.distance_m * 1e3
        print(f"plan: {plan.t[-1]:.2f} s, {plan.t.size} samples, clearance {clearance_mm:.1f} mm")
        executed = run_plan(loop, group, plan)
        print(f"executed: {executed.report.outcome.name}, {executed.colliding} colliding states")
        error = max(np.max(np.abs(loop.commanded(a) - goals[a])) for a in goals)
        print(f"commanded state at the goals within {error:.1e} rad")
        return 0 if executed.report.outcome.name == "COMPLETED" else 1
    finally:
        loop.close()


if __name__ == "__main__":
    raise SystemExit(main())
