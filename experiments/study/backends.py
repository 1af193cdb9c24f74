"""Where study tasks run: this process, local worker processes, or Ray.

Every backend calls ``on_row(row)`` as each task finishes (completion order), so the caller
can store rows as they stream in. Each worker process (or Ray actor) builds its model and
planners once (``rob_twin.experiments.study.worker``) and reuses them for all its tasks.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlparse

from rob_twin.experiments.study.tasks import StudyContext, Task
from rob_twin.experiments.study.worker import run_task, task_row
from rob_twin.models.errors import InvalidValueError, RobTwinError

OnRow = Callable[[dict], None]


class RayUnreachableError(RobTwinError, ConnectionError):
    """A Ray address that did not answer within the timeout."""


class StudyBackendError(InvalidValueError):
    """A backend setting out of its range (``workers`` below 1, ...)."""

    subject = "study backend"


MAX_WORKERS = 1024  # local processes or Ray actors


def _check_workers(workers: int | None, optional: bool) -> None:
    if workers is None and optional:
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise StudyBackendError(
            "workers",
            workers,
            f"an integer in [1, {MAX_WORKERS}]" + (" or None" if optional else ""),
        )


def error_row(task: Task, message: str) -> dict:
    """The row of a task whose worker failed with ``message``."""
    return task_row(task, status="error", reason="", error=message)


def default_workers() -> int:
    return (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )


@dataclass(frozen=True)
class LocalBackend:
    """``workers`` local processes (1: this process, no pool). ``in_flight`` tasks per
    worker are queued ahead so no worker waits for the next one."""

    workers: int = 1
    in_flight: int = 4

    def __post_init__(self) -> None:
        _check_workers(self.workers, optional=False)

    @property
    def label(self) -> str:
        return f"local x{self.workers}"

    def run(self, ctx: StudyContext, tasks: Iterable[Task], on_row: OnRow) -> None:
        tasks = list(tasks)
        workers = min(self.workers, len(tasks))
        if workers <= 1:
            for task in tasks:
                on_row(run_task(ctx, task))
            return
        pending = list(reversed(tasks))
        spawn = multiprocessing.get_context("spawn")
        while pending:
            with cf.ProcessPoolExecutor(workers, mp_context=spawn) as pool:
                running: dict[cf.Future, Task] = {}
                try:
                    while pending or running:
                        while pending and len(running) < workers * self.in_flight:
                            task = pending.pop()
                            running[pool.submit(run_task, ctx, task)] = task
                        done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                        for fut in done:
                            task = running.pop(fut)
                            try:
                                on_row(fut.result())
                            except cf.process.BrokenProcessPool as err:
                                on_row(error_row(task, f"worker process died: {err}"))
                except cf.process.BrokenProcessPool:
                    for task in running.values():  # a dead worker: its tasks fail, the rest go on
                        on_row(error_row(task, "worker process died"))
                except BaseException:
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise


def _probe(address: str, timeout_s: float) -> None:
    """Raise RayUnreachableError unless ``host:port`` (or ``ray://host:port``) accepts a TCP
    connection within ``timeout_s``."""
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    if not parsed.hostname or not parsed.port:
        raise RayUnreachableError(f"Ray address {address!r} is not HOST:PORT or ray://HOST:PORT")
    try:
        with socket.create_connection((parsed.hostname, parsed.port), timeout=timeout_s):
            pass
    except OSError as err:
        raise RayUnreachableError(
            f"Ray at {address!r} cannot be reached within {timeout_s:g} s "
            f"({err}); valid: the address of a running Ray head "
            "(ray start --head prints it), or no address for a local Ray"
        ) from None


class _StudyActor:
    """One Ray worker: builds its model once (first task), plans every task it is given."""

    def __init__(self, ctx: StudyContext):
        self.ctx = ctx

    def run(self, task: Task) -> dict:
        return run_task(self.ctx, task)


@dataclass(frozen=True)
class RayBackend:
    """Tasks on Ray actors (one per CPU of the cluster, or ``workers``). ``address`` None: a
    Ray already initialised in this process, else a local Ray on 127.0.0.1."""

    address: str | None = None
    workers: int | None = None
    connect_timeout_s: float = 10.0
    in_flight: int = 2

    def __post_init__(self) -> None:
        _check_workers(self.workers, optional=True)

    @property
    def label(self) -> str:
        return f"ray {self.address or 'local'}"

    def _connect(self) -> bool:
        """Initialise Ray when needed; True when this call started it (and must stop it)."""
        import ray

        if ray.is_initialized():
            return False
        if self.address:
            _probe(self.address, self.connect_timeout_s)
            ray.init(address=self.address, log_to_driver=False)
        else:
            ray.init(
                num_cpus=self.workers or default_workers(),
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                log_to_driver=False,
            )
        return True

    def run(self, ctx: StudyContext, tasks: Iterable[Task], on_row: OnRow) -> None:
        import ray

        tasks = list(tasks)
        if not tasks:
            return
        started = self._connect()
        try:
            n = min(len(tasks), self.workers or max(1, int(ray.cluster_resources().get("CPU", 1))))
            actor_cls = ray.remote(num_cpus=1)(_StudyActor)
            actors = [actor_cls.remote(ctx) for _ in range(n)]
            pending = list(reversed(tasks))
            running: dict = {}
            load = {i: 0 for i in range(n)}
            while pending or running:
                for i in range(n):
                    while pending and load[i] < self.in_flight:
                        task = pending.pop()
                        running[actors[i].run.remote(task)] = (task, i)
                        load[i] += 1
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    task, i = running.pop(ref)
                    load[i] -= 1
                    try:
                        on_row(ray.get(ref))
                    except ray.exceptions.RayError as err:
                        on_row(error_row(task, f"ray: {type(err).__name__}: {err}"))
            for a in actors:
                ray.kill(a)
        finally:
            if started:
                ray.shutdown()
