"""The dm_env environment: specs, a random policy through the owners, determinism, bad input."""

from __future__ import annotations

import dm_env
import numpy as np
import pytest
from rob_twin.models.errors import RobTwinError, UnknownNameError
from rob_twin.twin.env import ACTION_NAMES, MODES, EnvActionError, EnvConfig, RobEnv
from rob_twin.twin.errors import TwinInputError


def _rollout(seed: int, steps: int):
    env = RobEnv(EnvConfig(control_rate_hz=20.0, time_limit_s=steps / 20.0, seed=seed))
    spec = env.action_spec()
    rng = np.random.default_rng(seed)
    ts = env.reset()
    assert ts.first()
    obs_spec = env.observation_spec()
    trace = []
    for _ in range(steps):
        action = rng.uniform(spec.minimum, spec.maximum)
        ts = env.step(action)
        for name, s in obs_spec.items():
            s.validate(ts.observation[name])
        trace.append(np.concatenate([np.ravel(v).astype(float) for v in ts.observation.values()]))
    env.close()
    return ts, np.array(trace)


def test_random_policy_steps_within_the_specs_and_is_deterministic():
    ts, a = _rollout(seed=3, steps=30)
    assert ts.last() and ts.step_type == dm_env.StepType.LAST and ts.discount == 1.0  # truncation
    _, b = _rollout(seed=3, steps=30)
    _, c = _rollout(seed=4, steps=30)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_actions_go_through_the_owners_and_the_base_drive():
    env = RobEnv(EnvConfig(time_limit_s=5.0))
    ts = env.reset()
    target = ts.observation["commanded/right"].copy()
    target[0] += 0.3
    action = np.concatenate([target, ts.observation["commanded/left"], [-0.2, 0.0]])
    ctrl_id = env.physics.model.name2id("right/j1_servo", "actuator")
    first_ctrl = []
    for _ in range(20):
        ts = env.step(action)
        first_ctrl.append(env.physics.data.ctrl[ctrl_id])
    # the servo target moved gradually (the owner's Ruckig profile), not jumped to the action
    assert 0 < first_ctrl[0] - (target[0] - 0.3) < 0.3
    assert ts.observation["feedback/right"][0] == pytest.approx(target[0], abs=0.02)
    assert ts.observation["base/tread_speeds"].tolist() == [-0.2, -0.2]
    assert ts.observation["base/odometry"][0] < -0.1  # backed away
    assert MODES[int(ts.observation["mode/right"])] in ("tracking", "hold")
    assert np.count_nonzero(ts.observation["scan"]) > 100
    env.loop.stop("left")  # an owner stop: the base stops too
    ts = env.step(action)
    assert int(ts.observation["base/stopped"]) == 1
    assert MODES[int(ts.observation["mode/left"])] in ("braking", "stopped")
    env.close()


def test_bad_actions_and_configs_are_typed_errors():
    env = RobEnv(EnvConfig(sensors=("commanded",)))
    ts = env.reset()
    good = np.concatenate(
        [ts.observation["commanded/right"], ts.observation["commanded/left"], [0, 0]]
    )
    before = env.loop.time
    with pytest.raises(EnvActionError, match=r"action shape=\(15,\) .*valid: \(16,\)"):
        env.step(good[:-1])
    bad = good.copy()
    bad[3] = np.nan
    with pytest.raises(EnvActionError, match="right/j4=nan"):
        env.step(bad)
    bad = good.copy()
    bad[14] = 0.5
    with pytest.raises(EnvActionError, match=r"base/v=0\.5 is invalid; valid: \[-0\.3, 0\.3\]"):
        env.step(bad)
    with pytest.raises(EnvActionError, match="action"):
        env.step("forward")
    assert env.loop.time == before  # nothing moved
    env.close()
    with pytest.raises(UnknownNameError, match="sensor 'lidar'; valid: feedback"):
        EnvConfig(sensors=("lidar",))
    with pytest.raises(TwinInputError, match=r"control_rate_hz=30\.0 .*divide the physics rate"):
        EnvConfig(control_rate_hz=30.0)
    assert issubclass(EnvActionError, RobTwinError)
    assert len(ACTION_NAMES) == 16


def test_camera_observation_matches_its_spec():
    from rob_twin.twin.render.video import RenderUnavailable

    try:
        env = RobEnv(EnvConfig(sensors=("commanded", "camera"), camera_size=(48, 64)))
    except RenderUnavailable as err:
        pytest.skip(f"no GL here: {err}")
    ts = env.reset()
    env.observation_spec()["camera/rgb"].validate(ts.observation["camera/rgb"])
    action = np.concatenate(
        [ts.observation["commanded/right"], ts.observation["commanded/left"], [0, 0]]
    )
    ts = env.step(action)
    assert (
        ts.observation["camera/rgb"].shape == (48, 64, 3) and ts.observation["camera/rgb"].std() > 5
    )
    env.close()


@pytest.mark.filterwarnings("ignore:.*DISPLAY")  # glfw, imported by the viewer package
def test_dm_control_viewer_runtime_runs_it_with_a_policy():
    """What ``dm_control.viewer.launch(env, policy)`` drives, minus the window: its runtime."""
    from dm_control.viewer import runtime

    env = RobEnv(EnvConfig(time_limit_s=2.0, sensors=("commanded", "modes")))
    spec = env.action_spec()
    rng = np.random.default_rng(0)
    calls = []

    def policy(time_step):
        calls.append(time_step.step_type)
        return np.clip(
            np.concatenate(
                [
                    time_step.observation["commanded/right"],
                    time_step.observation["commanded/left"],
                    [0.0, 0.0],
                ]
            )
            + rng.uniform(-0.05, 0.05, 16),
            spec.minimum,
            spec.maximum,
        )

    rt = runtime.Runtime(env, policy)
    errors = []
    rt.on_error += errors.append
    for _ in range(10):
        rt.tick(0.05, paused=False)
    assert errors == [] and len(calls) >= 9 and rt.state == runtime.State.RUNNING
    assert env.physics.data.time == pytest.approx(len(calls) * 0.05, abs=1e-9)
    env.close()
