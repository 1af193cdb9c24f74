"""The certificate benchmark's plan list is fixed and seeded, and a plan's row does not depend
on which plans its worker ran before (simulated)."""

from __future__ import annotations

import pytest
from rob_twin.experiments.bench_certificate import (
    N_STUDY,
    bound_validity,
    merge_validity,
    plan_list,
    run_plan,
)
from rob_twin.planners.errors import PlannerConfigError


def test_plan_list_holds_every_set_in_order_with_its_seeds():
    specs = plan_list(120)
    sets = [s.set for s in specs]
    assert sets[0] == "crossing"
    counts = {name: sets.count(name) for name in dict.fromkeys(sets)}
    assert counts == {
        "crossing": 1,
        "study": N_STUDY,
        "hard_rob": 32,
        "hard_stand": 32,
        "random": 5,
    }
    assert [s.seed for s in specs if s.set == "study"] == list(range(N_STUDY))
    assert len({s.seed for s in specs if s.set == "random"}) == 5
    again = plan_list(120)
    assert [(s.goals, s.start, s.seed) for s in again] == [
        (s.goals, s.start, s.seed) for s in specs
    ]


def test_a_plans_row_does_not_depend_on_what_ran_before():
    specs = plan_list(120)
    stand, study = specs[83], specs[1]
    assert (stand.set, study.set) == ("hard_stand", "study")
    first = run_plan(stand)
    run_plan(study)
    second = run_plan(stand)
    keys = ("status", "certified_min_m", "true_min_m", "horizon_m", "first_try", "duration_s")
    assert {k: first[k] for k in keys} == {k: second[k] for k in keys}
    assert first["counterexamples"] == [] and first["true_min_m"] >= first["certified_min_m"]


def test_bound_validity_split_in_parts_checks_the_same_walk():
    whole = bound_validity(4000, batch=1000)
    parts = merge_validity([bound_validity(4000, batch=1000, part=p, parts=2) for p in (0, 1)])
    assert parts["configuration_pairs"] == whole["configuration_pairs"] == 4000
    assert parts["violations"] == whole["violations"] == 0
    assert parts["largest_excess_m"] == whole["largest_excess_m"]
    with pytest.raises(PlannerConfigError, match="part"):
        bound_validity(10, part=2, parts=2)
