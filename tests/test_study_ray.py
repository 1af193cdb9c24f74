"""``rob-twin study --ray``: the same tasks on a local Ray (started and stopped by this test,
2 CPUs, node on 127.0.0.1) give the same rows as one process; an address that cannot be
reached is a clear error within the timeout."""

from __future__ import annotations

import time

import pytest
from rob_twin.experiments.study import LocalBackend, RayBackend, run_study
from rob_twin.experiments.study.backends import RayUnreachableError
from rob_twin.experiments.study.runner import comparable
from rob_twin.experiments.study.spec import parse_spec
from rob_twin.experiments.study.store import read_rows

ray = pytest.importorskip("ray")

TINY = {
    "name": "tiny_ray",
    "margins_m": [0.005],
    "count": 3,
    "seed": 11,
    "goals": {"kind": "gaussian", "sigma_rad": 0.5},
}


def test_an_unreachable_ray_address_is_a_clear_error_within_the_timeout(tmp_path):
    spec = parse_spec(TINY)
    t0 = time.perf_counter()
    with pytest.raises(RayUnreachableError, match="127.0.0.1:1.*cannot be reached within 2 s"):
        run_study(
            spec,
            tmp_path,
            tmp_path / "out",
            backend=RayBackend(address="127.0.0.1:1", connect_timeout_s=2.0),
            progress=False,
        )
    assert time.perf_counter() - t0 < 10 and not ray.is_initialized()


def test_a_local_ray_gives_the_same_rows_as_one_process(tmp_path):
    spec = parse_spec(TINY)
    serial = run_study(spec, tmp_path, tmp_path / "one", backend=LocalBackend(1), progress=False)
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        on_ray = run_study(spec, tmp_path, tmp_path / "ray", backend=RayBackend(), progress=False)
    finally:
        ray.shutdown()
    assert on_ray["backend"] == "ray local" and on_ray["finished"] == serial["finished"] == 3
    one, other = read_rows(tmp_path / "one" / "rows.csv"), read_rows(tmp_path / "ray" / "rows.csv")
    assert [comparable(r) for r in one] == [comparable(r) for r in other]
    assert len({r["worker"] for r in other}) <= 2  # two actors, each reusing its model
