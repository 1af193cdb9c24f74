"""RobEnv refuses every bad action, seed and size with a typed error and stays usable:
huge integers, complex/string/masked/boolean actions, bad reset seeds (state unchanged,
the next step works), camera sizes, configs of the wrong type, and use after close()."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.models.errors import RobTwinError
from rob_twin.twin.env import EnvActionError, EnvClosedError, EnvConfig, EnvSeedError, RobEnv
from rob_twin.twin.errors import TwinInputError


@pytest.fixture(scope="module")
def env():
    env = RobEnv(EnvConfig(sensors=("commanded",)))
    yield env
    env.close()


def _good(env) -> np.ndarray:
    ts = env.reset(seed=1)
    return np.concatenate(
        [ts.observation["commanded/right"], ts.observation["commanded/left"], [0.0, 0.0]]
    )


def _huge(good):
    action = [float(v) for v in good]
    action[2] = 10**400
    return action


def _masked(good):
    return np.ma.masked_array(good, mask=[False] * 15 + [True])


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (_huge, "right/j3"),
        (lambda g: g.astype(complex) + 1e-3j, "action dtype"),
        (lambda g: [str(v) for v in g], "action dtype"),
        (_masked, "action"),
        (lambda g: np.zeros(16, bool), "action dtype"),
        (lambda g: [*g[:15], None], "base/omega"),
        (lambda g: [*g[:15], True], "base/omega"),
        (lambda g: [*g[:15], "0"], "action dtype"),
    ],
)
def test_actions_that_are_not_plain_real_numbers_are_refused_and_nothing_moves(env, make, field):
    good = _good(env)
    before = env.loop.time
    with pytest.raises(EnvActionError) as err:
        env.step(make(good))
    assert err.value.field == field
    assert env.loop.time == before
    env.step(good)  # still usable
    assert env.loop.time > before


@pytest.mark.parametrize("seed", [-1, float("nan"), "x", 2.5, True, 2**32, 10**400])
def test_a_bad_reset_seed_is_typed_and_leaves_the_episode_running(env, seed):
    good = _good(env)
    env.step(good)
    loop, time = env.loop, env.loop.time
    with pytest.raises(EnvSeedError, match="seed") as err:
        env.reset(seed=seed)
    assert "valid: an integer in [0, 4294967295]" in str(err.value)
    assert env.loop is loop and env.loop.time == time and env.seed == 1
    env.step(good)  # the bus is still open
    assert env.loop.time > time
    env.reset(seed=np.int64(5))  # numpy integers are integers
    assert env.seed == 5


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"camera_size": (-1, 5)}, "camera_size"),
        ({"camera_size": (0, 5)}, "camera_size"),
        ({"camera_size": (120,)}, "camera_size"),
        ({"camera_size": (120.5, 160)}, "camera_size"),
        ({"camera_size": (10**6, 160)}, "camera_size"),
        ({"seed": -1}, "seed"),
        ({"seed": "x"}, "seed"),
        ({"control_rate_hz": "20"}, "control_rate_hz"),
        ({"time_limit_s": None}, "time_limit_s"),
        ({"time_limit_s": 10**400}, "time_limit_s"),
        ({"sensors": "scan"}, "sensors"),
    ],
)
def test_bad_config_values_are_typed_errors(fields, field):
    with pytest.raises((TwinInputError, EnvSeedError)) as err:
        EnvConfig(**fields)
    assert err.value.field == field


def test_step_and_reset_after_close_are_typed_errors():
    env = RobEnv(EnvConfig(sensors=("commanded",)))
    good = _good(env)
    env.close()
    env.close()  # idempotent
    with pytest.raises(EnvClosedError, match="closed"):
        env.step(good)
    with pytest.raises(EnvClosedError, match="closed"):
        env.reset()
    assert issubclass(EnvClosedError, RobTwinError)
