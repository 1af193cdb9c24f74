"""Everything a study checks before its first row: the spec as a whole (the model loads, the
start keyframe exists, the goal file is finite, every margin builds a planner and is below
the start's clearance), and its
size, memory and time, estimated and capped (``force`` goes beyond the caps).

A spec that fails here raises ``StudySpecError`` (field, value, what is valid) and no row
is run or written. Units: bytes, seconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from rob_twin.experiments.study.spec import (
    GaussianGoals,
    GoalFile,
    StudySpec,
    StudySpecError,
    model_path,
    read_goal_file,
)
from rob_twin.experiments.study.tasks import StudyContext, context

# Per-row memory of the driver [bytes]: the task (~300 B), its row number in the store's
# done set and the typed row read back for the report (~830 B each time it is held),
# measured with tracemalloc on 20,000 rows, rounded up.
BYTES_PER_ROW = 2_048
# Per-process memory of one worker [bytes]: the MuJoCo model and one planner per margin
# (~170 MB max RSS measured for one process planning the built-in scene), rounded up.
BYTES_PER_WORKER = 256 * 2**20
# Time of one row on one worker [s]: margins.toml (200 rows, 2 to 15 mm) took 19.2 s on 2
# workers of a shared 2-core machine (0.19 s per row; single 5 mm plans ~13 ms unloaded),
# rounded up (an estimate, simulated planner).
SECONDS_PER_ROW = 0.2


class StudyTooLargeError(StudySpecError):
    """A study whose estimated size, memory or time is beyond ``StudyLimits`` (no --force)."""


@dataclass(frozen=True)
class StudyLimits:
    """Caps checked before the first row: ``max_rows`` [count], ``max_memory_bytes``
    [bytes, driver and workers], ``max_time_s`` [s, wall time estimated for the workers]."""

    max_rows: int = 1_000_000
    max_memory_bytes: int = 4 * 2**30
    max_time_s: float = 24 * 3600.0


def default_config() -> StudyLimits:
    """One million rows, 4 GiB, 24 h."""
    return StudyLimits()


@dataclass(frozen=True)
class StudyEstimate:
    """What a study will take: ``rows`` [count], ``memory_bytes`` [bytes], ``time_s``
    [s] on ``workers`` processes (estimates from the module's measured constants)."""

    rows: int
    workers: int
    memory_bytes: int
    time_s: float

    def as_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        return (
            f"{self.rows} rows, ~{self.memory_bytes / 2**20:.0f} MiB, "
            f"~{self.time_s / 3600:.2f} h on {self.workers} worker(s) (estimate)"
        )

    def beyond(self, limits: StudyLimits) -> list[tuple[str, object, str]]:
        """(field, value, valid) for each cap this estimate exceeds."""
        out: list[tuple[str, object, str]] = []
        if self.rows > limits.max_rows:
            out.append(("count x margins_m", self.rows, f"<= {limits.max_rows} rows"))
        if self.memory_bytes > limits.max_memory_bytes:
            out.append(
                (
                    "memory",
                    f"{self.memory_bytes / 2**20:.0f} MiB",
                    f"<= {limits.max_memory_bytes / 2**20:.0f} MiB",
                )
            )
        if self.time_s > limits.max_time_s:
            out.append(("time", f"{self.time_s:.0f} s", f"<= {limits.max_time_s:.0f} s"))
        return out


def estimate(spec: StudySpec, workers: int) -> StudyEstimate:
    """The rows, memory and wall time of ``spec`` on ``workers`` processes."""
    rows = spec.count * len(spec.margins_m)
    workers = max(1, min(int(workers), rows))
    return StudyEstimate(
        rows=rows,
        workers=workers,
        memory_bytes=rows * BYTES_PER_ROW + workers * BYTES_PER_WORKER,
        time_s=round(rows * SECONDS_PER_ROW / workers, 1),
    )


def check_size(
    spec: StudySpec, workers: int, limits: StudyLimits | None = None, force: bool = False
) -> StudyEstimate:
    """The estimate of ``spec``; StudyTooLargeError when it is beyond ``limits`` and not
    ``force``."""
    est = estimate(spec, workers)
    beyond = est.beyond(limits or default_config())
    if beyond and not force:
        field, value, valid = beyond[0]
        raise StudyTooLargeError(field, value, f"{valid}; estimate: {est.text()}; --force runs it")
    return est


def _check_model(ctx: StudyContext, field_value: str) -> None:
    import mujoco
    from rob_twin.models.loading import apply_keyframe
    from rob_twin.models.robot_model import load_model_of

    try:
        model = load_model_of(ctx.model)
    except Exception as err:  # noqa: BLE001 - any load failure is a bad model field
        why = " ".join(str(err).split())[:300]
        raise StudySpecError(
            "model",
            field_value,
            f"a shipped robot, a robot file or a loadable MJCF scene ({type(err).__name__}: {why})",
        ) from None
    names = [model.key(i).name for i in range(model.nkey)]
    if ctx.start not in names:
        raise StudySpecError("start", ctx.start, f"a keyframe of the model: {names}")
    try:
        apply_keyframe(model, mujoco.MjData(model), ctx.start)
    except Exception as err:  # noqa: BLE001
        raise StudySpecError("start", ctx.start, f"a usable keyframe ({err})") from None


def _check_margins(spec: StudySpec, ctx: StudyContext) -> None:
    from rob_twin.experiments.study.worker import group_config
    from rob_twin.planners.errors import PlannerConfigError

    margins = [(f"margins_m.{i}", m) for i, m in enumerate(spec.margins_m)]
    if isinstance(spec.goals, GaussianGoals):
        margins.append(("goals.min_clearance_m", spec.goals.min_clearance_m))
    for field, margin in margins:
        try:
            group_config(ctx, float(margin))
        except PlannerConfigError as err:
            raise StudySpecError(
                field,
                margin,
                f"a margin the planner accepts with planner.clearance_horizon_m = "
                f"{spec.planner.clearance_horizon_m} m ({err}); raise "
                "planner.clearance_horizon_m or lower the margin",
            ) from None


def _check_start_clearance(spec: StudySpec, ctx: StudyContext) -> None:
    """Every margin below the start's clearance: a start closer to collision than the
    margin fails every row of that margin (``start_in_collision``) before planning."""
    from rob_twin.experiments.study import worker
    from rob_twin.models.loading import arm_qpos_indices

    largest = max(float(m) for m in spec.margins_m)
    group = worker.group_for(ctx, largest)
    model, start = worker._model(ctx)
    at_start = group.clearance({a: start[arm_qpos_indices(model, a)] for a in ctx.arms})
    for i, margin in enumerate(spec.margins_m):
        if not at_start.is_free(float(margin)):
            raise StudySpecError(
                f"margins_m.{i}",
                margin,
                f"< {at_start.distance_m:.4g} m: the start keyframe {ctx.start!r} is "
                f"{at_start.distance_m * 1e3:.1f} mm from collision ({at_start.pair}), so "
                "every row at this margin would fail before planning",
            )


def check_runnable(spec: StudySpec, base_dir: Path) -> None:
    """Raise StudySpecError unless every row of ``spec`` can start: the model file loads,
    ``start`` is one of its keyframes, a goal file holds finite pairs, every margin (and
    the goal sampler's clearance) builds a planner config, and the start is clear of
    collision by every margin. Builds this process's model and one planner (the worker
    cache keeps them for a one-process run)."""
    model_path(spec, base_dir)
    ctx = context(spec, base_dir)
    if isinstance(spec.goals, GoalFile):
        read_goal_file(spec, base_dir)  # shape, finite numbers, enough pairs
    _check_margins(spec, ctx)
    _check_model(ctx, spec.model)
    _check_start_clearance(spec, ctx)


def preflight(
    spec: StudySpec,
    base_dir: Path,
    workers: int,
    limits: StudyLimits | None = None,
    force: bool = False,
) -> StudyEstimate:
    """Check size first (cheap), then that the spec can run; return the estimate."""
    est = check_size(spec, workers, limits, force)
    check_runnable(spec, base_dir)
    return est
