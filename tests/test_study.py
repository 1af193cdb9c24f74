"""``rob-twin study``: spec validation, seeded tasks, failed rows, streaming, resume, replay,
local worker processes with the same rows as one process (tiny studies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rob_twin.cli.main import main
from rob_twin.experiments.study import LocalBackend, StudySpecError, replay_row, run_study
from rob_twin.experiments.study import worker as study_worker
from rob_twin.experiments.study.runner import comparable
from rob_twin.experiments.study.spec import load_spec, parse_spec
from rob_twin.experiments.study.store import StudyOutputError, read_rows
from rob_twin.experiments.study.tasks import context, expand, task_for_row

DATA = Path(__file__).parent / "data" / "study"
TINY = {
    "name": "tiny",
    "margins_m": [0.005, 0.01],
    "count": 2,
    "seed": 7,
    "planner": {"max_iterations": 2000},
}


@pytest.mark.parametrize(
    ("raw", "field", "valid"),
    [
        ({"arms": ["middle"]}, "arms.0", "'right' or 'left'"),
        ({"margins_m": [-0.001]}, "margins_m.0", "greater than or equal to 0"),
        (
            {"cnt": 3},
            "cnt",
            "fields: name, model, start, arms, goals, planner, margins_m, seed, count",
        ),
        ({"goals": {"kind": "grid"}}, "goals", "'gaussian' or 'file'"),
        (
            {"planner": {"max_iteration": 5}},
            "planner.max_iteration",
            "fields: max_iterations, edge_step_rad",
        ),
        ({"count": None}, "count", "integer"),
    ],
)
def test_a_malformed_spec_names_the_field_and_what_is_valid(raw, field, valid):
    with pytest.raises(StudySpecError) as err:
        parse_spec({**TINY, **raw})
    assert err.value.field == field and valid in str(err.value)


def test_a_missing_field_and_unreadable_files_are_spec_errors(tmp_path):
    with pytest.raises(StudySpecError, match="count=None is invalid; valid: required"):
        parse_spec({"name": "x"})
    (tmp_path / "s.toml").write_text("name = [")
    with pytest.raises(StudySpecError, match="well-formed TOML"):
        load_spec(tmp_path / "s.toml")
    with pytest.raises(StudySpecError, match=".json or .toml"):
        load_spec(tmp_path / "nope.yaml")


def test_tasks_carry_per_pair_seeds_that_do_not_depend_on_the_rest_of_the_study():
    spec = parse_spec(TINY)
    tasks = expand(spec, DATA)
    assert [t.row for t in tasks] == [0, 1, 2, 3] and [t.margin_m for t in tasks] == [
        0.005,
        0.005,
        0.01,
        0.01,
    ]
    assert tasks[0].goal_seed == tasks[2].goal_seed != tasks[1].goal_seed  # same pair, every margin
    bigger = expand(parse_spec({**TINY, "count": 50}), DATA)
    assert bigger[1].goal_seed == tasks[1].goal_seed and task_for_row(spec, DATA, 3) == tasks[3]
    with pytest.raises(StudySpecError, match="a row in 0..3"):
        task_for_row(spec, DATA, 4)


def test_each_worker_builds_its_model_once_and_a_raising_task_is_a_failed_row():
    spec = parse_spec({"name": "file", "goals": {"kind": "file", "path": "pairs.json"}, "count": 2})
    ctx = context(spec, DATA)
    first, second = (study_worker.run_task(ctx, t) for t in expand(spec, DATA))
    builds = dict(study_worker.BUILDS)
    again = study_worker.run_task(ctx, expand(spec, DATA)[0])
    assert study_worker.BUILDS == builds  # model and planner reused
    assert first["status"] == again["status"] == "success"
    assert (
        second["status"] == "error"
        and "GoalInputError" in second["error"]
        and "9.0" in second["error"]
    )
    assert second["goal_seed"] == expand(spec, DATA)[1].goal_seed


def test_a_study_streams_rows_resumes_after_a_kill_and_replays_any_row(tmp_path):
    spec = parse_spec(TINY)
    out = tmp_path / "tiny"

    class KilledAfterTwo:
        label = "killed"

        def run(self, ctx, tasks, on_row):
            LocalBackend(1).run(ctx, list(tasks)[:2], on_row)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_study(spec, DATA, out, backend=KilledAfterTwo(), progress=False)
    assert sorted(r["row"] for r in read_rows(out / "rows.csv")) == [0, 1]
    with pytest.raises(StudyOutputError, match="--resume"):
        run_study(spec, DATA, out, progress=False)
    summary = run_study(spec, DATA, out, backend=LocalBackend(1), resume=True, progress=False)
    assert summary["ran_now"] == 2 and summary["complete"] and summary["hardware_io"] is False
    rows = read_rows(out / "rows.csv")
    assert [r["row"] for r in rows] == [0, 1, 2, 3]
    assert [r["goals"] for r in rows[:2]] == [
        r["goals"] for r in rows[2:]
    ]  # same pairs, both margins
    for plot in summary["plots"].values():
        assert Path(plot).stat().st_size > 1000
    assert "hardware_io: false" in (out / "report.md").read_text()
    replay = replay_row(spec, DATA, 3, out)
    assert replay["same"] is True and replay["row"]["row"] == 3
    with pytest.raises(StudyOutputError, match="different spec"):
        run_study(parse_spec({**TINY, "seed": 8}), DATA, out, resume=True, progress=False)


def test_local_worker_processes_give_the_same_rows_as_one_process(tmp_path, capsys):
    spec_path = tmp_path / "tiny.json"
    spec_path.write_text(json.dumps(TINY))
    assert (
        main(["study", str(spec_path), "--out", str(tmp_path / "one"), "--workers", "1", "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["finished"] == 4
    assert (
        main(
            [
                "study",
                str(spec_path),
                "--out",
                str(tmp_path / "two"),
                "--workers",
                "2",
                "--no-progress",
            ]
        )
        == 0
    )
    one, two = read_rows(tmp_path / "one" / "rows.csv"), read_rows(tmp_path / "two" / "rows.csv")
    assert [comparable(r) for r in one] == [comparable(r) for r in two]
    assert len({r["worker"] for r in two}) <= 2
    assert main(["study", str(spec_path), "--out", str(tmp_path / "one"), "--replay", "2"]) == 0
    assert "same as the stored row" in capsys.readouterr().out
    spec_path.write_text(json.dumps({**TINY, "arms": ["middle"]}))
    assert main(["study", str(spec_path)]) == 2
    assert (
        "arms.0='middle' is invalid; valid: Input should be 'right' or 'left'"
        in capsys.readouterr().err
    )
