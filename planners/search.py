"""Bidirectional sampling search (RRT-Connect) in a box of joint space, then shortcutting.

Nothing here knows MuJoCo: the search takes an ``is_free(q) -> bool`` state check and
works in whatever stacked joint space it is given (one arm: 7-D, two arms: 14-D). Edges
are checked at states no more than ``edge_step_rad`` apart on every joint, visited in
bisection order so a blocked edge is usually found after a few checks. The random
number generator is the caller's: the same seed gives the same path.

Units: radians.
"""

from __future__ import annotations

import bisect
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from rob_twin.planners.errors import PlannerConfigError

StateCheck = Callable[[np.ndarray], bool]
# proves rows of a (k, dim) batch of states free (True) or says nothing (False); never used
# to call a state colliding (``rob_twin.planners.free_filter``)
BatchProof = Callable[[np.ndarray], np.ndarray]
PROVE_HEAD = 2  # states of a motion checked as they are before the rest go to the proof
PROVE_MIN_STATES = 32  # the rest go to the proof in one batch from this many states on
# a tree edge (``_edge_free``): its new end is checked as it is (a blocked extension almost
# always fails there: 1.05 exact checks per trapped edge in the failing MotionBenchMaker
# bookshelf searches), then all its interior states go to the proof in one batch from this
# many on
EDGE_PROVE_HEAD = 1
EDGE_PROVE_MIN_STATES = 2


@dataclass(frozen=True)
class SearchConfig:
    """edge_step_rad: largest joint change between two checked states of an edge [rad];
    extend_step_rad: longest tree extension (Euclidean, stacked space) [rad];
    max_iterations: sampling rounds before giving up when nothing bounds the search's wall
    time (and the rounds of ArmGroup's padded search before its unpadded one takes over);
    budgeted_max_iterations: the rounds of a search with a deadline (``rrt_connect``'s
    ``deadline_s``): there the wall-time budget ends the search, this count is only a
    safety net; max_nodes: per tree;
    shortcut_rounds: random shortcut attempts after a path is found;
    shortcut_min_gain: a shortcut candidate is collision-checked only when it would
    shorten the path by more than this fraction of its current length [-] (0: every
    candidate is checked, the paths of the plain algorithm). Small cuts cost a full check
    of a free motion each and add two waypoints, i.e. two rest stops of the retimed path:
    0.02 cuts the shortcut stage's checks about four-fold on the hard sets and the
    retimed durations come out a little shorter, not longer. 0.1 (with drop_first) checks
    about a third fewer states in the shortcut stage again, same or shorter durations
    (``python -m rob_twin.experiments.bench planner-checks``);
    shortcut_drop_first: before the random rounds, a greedy pass keeps from each waypoint
    only the farthest one it sees directly (``drop_redundant``), so the rounds cut corners
    of a few long segments instead of a tree's many short ones;
    arms_in_turn_after, arms_in_turn_rounds: with two or more moving arms, when ArmGroup's
    search of all arms together (the padded one) has not found a path after
    ``arms_in_turn_after`` rounds, it searches for a path that moves the arms one at a
    time (each arm's own RRT-Connect in its joints, the others held where they are: at
    their start before their turn, at their goal after), every order of the arms in
    turn, each arm's search given at most ``arms_in_turn_rounds`` rounds; only when no
    order finds one does the search of all arms together go on (the rest of its
    ``max_iterations``, then the unpadded one). ``arms_in_turn_rounds`` 0: never. The
    path found is an ordinary path of the stacked space (every state checked with every
    arm), and shortcutting then moves the arms together where it can. In clutter this is
    what solves (MotionBenchMaker's Baxter bookshelf: each arm alone is a 7-D problem,
    together a 14-D one); a plan found within ``arms_in_turn_after`` rounds is the plan
    of the search without it."""

    edge_step_rad: float = 0.05
    extend_step_rad: float = 0.6
    max_iterations: int = 4000
    budgeted_max_iterations: int = 1_000_000
    max_nodes: int = 20000
    shortcut_rounds: int = 60
    shortcut_min_gain: float = 0.1
    shortcut_drop_first: bool = True
    arms_in_turn_after: int = 500
    arms_in_turn_rounds: int = 6000

    def __post_init__(self) -> None:
        for name in ("edge_step_rad", "extend_step_rad"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise PlannerConfigError(name, v, "finite and > 0 rad")
        for name in ("max_iterations", "budgeted_max_iterations", "max_nodes"):
            if getattr(self, name) < 1:
                raise PlannerConfigError(name, getattr(self, name), ">= 1")
        for name in ("arms_in_turn_after", "arms_in_turn_rounds"):
            if getattr(self, name) < 0:
                raise PlannerConfigError(name, getattr(self, name), ">= 0")
        if self.shortcut_rounds < 0:
            raise PlannerConfigError("shortcut_rounds", self.shortcut_rounds, ">= 0")
        g = self.shortcut_min_gain
        if not (math.isfinite(g) and 0.0 <= g < 1.0):
            raise PlannerConfigError("shortcut_min_gain", g, "finite, in [0, 1)")
        if not isinstance(self.shortcut_drop_first, bool):
            raise PlannerConfigError(
                "shortcut_drop_first", self.shortcut_drop_first, "True or False"
            )


def default_config() -> SearchConfig:
    return SearchConfig()


@lru_cache(maxsize=512)
def _bisection_order(n: int) -> tuple[int, ...]:
    """Interior indices 1..n-1 of n equal steps, coarse to fine (midpoint first)."""
    order, queue = [], deque([(0, n)])
    while queue:
        lo, hi = queue.popleft()
        if hi - lo < 2:
            continue
        mid = (lo + hi) // 2
        order.append(mid)
        queue.extend(((lo, mid), (mid, hi)))
    return tuple(order)


def _first_collision(
    order: list[int],
    a: np.ndarray,
    d: np.ndarray,
    n: int,
    is_free: StateCheck,
    prove_free: BatchProof | None,
    end: np.ndarray | None = None,
    head: int = PROVE_HEAD,
    min_states: int = PROVE_MIN_STATES,
) -> np.ndarray | None:
    """The first state of ``order`` (step indices k of ``a + d k / n``; k = n stands for
    ``end`` when given) that ``is_free`` rejects, checking in that order; None when all are
    free. With ``prove_free``: the first ``head`` states are checked as they are (a
    motion that collides is usually rejected there), then, when at least ``min_states``
    remain, those go to the proof in one batch and only the states it cannot prove free to
    ``is_free``, still in order (stopping at the first colliding one): the same answer, the
    same state."""

    def state(k: int) -> np.ndarray:
        return end if k == n and end is not None else a + d * (k / n)

    proven = None
    for i, k in enumerate(order):
        if i == head and prove_free is not None and len(order) - i >= min_states:
            rest = np.array(order[i:])
            batch = a + d * (rest / n)[:, None]
            if end is not None:
                batch[rest == n] = end
            proven = dict(zip(rest.tolist(), prove_free(batch).tolist(), strict=True))
        if proven is not None and proven[k]:
            continue
        q = state(k)
        if not is_free(q):
            return q
    return None


def motion_is_free(
    a: np.ndarray,
    b: np.ndarray,
    is_free: StateCheck,
    step_rad: float,
    memory: CollisionMemory | None = None,
    prove_free: BatchProof | None = None,
) -> bool:
    """True when the states between ``a`` and ``b`` (excluded: both ends are assumed
    checked) at most ``step_rad`` apart per joint are free. With ``memory``, the states
    nearest its remembered collisions are checked first and a colliding state found is
    remembered; the answer is the same (the same states are checked, in another order).
    With ``prove_free`` (``_first_collision``), states it proves free are not given to
    ``is_free``: the same answer, the same colliding state remembered."""
    d = b - a
    n = max(1, math.ceil(float(np.max(np.abs(d))) / step_rad))
    first = () if memory is None or n < 2 else memory.first_indices(a, b, n)
    if prove_free is not None:
        order = list(first) + [k for k in _bisection_order(n) if k not in first]
        hit = _first_collision(order, a, d, n, is_free, prove_free)
        if hit is not None and memory is not None:
            memory.add(hit)
        return hit is None
    for k in first:
        q = a + d * (k / n)
        if not is_free(q):
            memory.add(q)
            return False
    for k in _bisection_order(n):
        if k in first:
            continue
        q = a + d * (k / n)
        if not is_free(q):
            if memory is not None:
                memory.add(q)
            return False
    return True


class CollisionMemory:
    """Colliding states found so far (at most ``capacity``, oldest dropped). A motion is
    first checked at the interior states nearest the ``probes`` remembered collisions
    closest to it: a candidate that runs through a known obstacle usually fails on its
    first check. Only the order of checks changes, never which states are checked.

    Units: radians."""

    def __init__(self, dim: int, capacity: int = 64, probes: int = 2):
        self._q = np.empty((capacity, dim))
        self._n = 0
        self._next = 0
        self.probes = probes

    def __len__(self) -> int:
        return self._n

    def add(self, q: np.ndarray) -> None:
        self._q[self._next] = q
        self._next = (self._next + 1) % self._q.shape[0]
        self._n = min(self._n + 1, self._q.shape[0])

    def first_indices(self, a: np.ndarray, b: np.ndarray, n: int) -> tuple[int, ...]:
        """Interior step indices 1..n-1 of the motion ``a`` -> ``b`` in ``n`` equal steps
        nearest the remembered collisions closest to the motion (nearest first)."""
        if self._n == 0:
            return ()
        c = self._q[: self._n]
        d = b - a
        dd = float(d @ d)
        if dd <= 0.0:
            return ()
        # the nearest step to each collision's projection (ufuncs, not np.clip: this runs
        # once per checked motion and np.clip's wrapper costs more than its work)
        t = np.minimum(np.maximum((c - a) @ d / dd, 0.0), 1.0)
        k = np.minimum(np.maximum(np.rint(t * n).astype(np.int64), 1), n - 1)
        off = (a + (k / n)[:, None] * d) - c
        dist = np.einsum("ij,ij->i", off, off)
        out: list[int] = []
        for i in np.argsort(dist, kind="stable").tolist():
            ki = int(k[i])
            if ki not in out:
                out.append(ki)
                if len(out) == self.probes:
                    break
        return tuple(out)


class _Tree:
    def __init__(self, root: np.ndarray, capacity: int):
        self.q = np.empty((capacity, root.size))
        self.parent = np.empty(capacity, dtype=np.int64)
        self.q[0], self.parent[0], self.n = root, -1, 1

    def nearest(self, q: np.ndarray) -> int:
        diff = self.q[: self.n] - q
        return int(np.einsum("ij,ij->i", diff, diff).argmin())

    def add(self, q: np.ndarray, parent: int) -> int:
        self.q[self.n], self.parent[self.n] = q, parent
        self.n += 1
        return self.n - 1

    def branch(self, i: int) -> list[np.ndarray]:
        out = []
        while i >= 0:
            out.append(self.q[i].copy())
            i = int(self.parent[i])
        return out  # from node i back to the root


@dataclass
class SearchResult:
    """path: list of stacked states from start to goal (None when not found);
    iterations: sampling rounds used; nodes: states in both trees; timed_out: the search
    stopped at its wall-clock deadline."""

    path: list[np.ndarray] | None
    iterations: int
    nodes: int
    reason: str = ""
    timed_out: bool = False


def rrt_connect(
    start: np.ndarray,
    goal: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    is_free: StateCheck,
    rng: np.random.Generator,
    config: SearchConfig | None = None,
    try_direct: bool = True,
    deadline_s: float | None = None,
    prove_free: BatchProof | None = None,
    max_iterations: int | None = None,
) -> SearchResult:
    """RRT-Connect between free states ``start`` and ``goal`` in the box [lower, upper]
    (first the straight motion, unless ``try_direct`` is False). ``deadline_s``: a
    ``time.perf_counter()`` instant after which the search gives up (``timed_out``);
    checked once per sampling round, so it costs no random draws (same seed, same path).
    ``prove_free``: a batch proof of free states (``motion_is_free``): the same path, fewer
    calls of ``is_free``. ``max_iterations``: sampling rounds before giving up (default
    ``config.max_iterations``; ``config.budgeted_max_iterations`` is what a caller with a
    wall-time budget gives, the deadline then ending the search)."""
    cfg = config or default_config()
    rounds = cfg.max_iterations if max_iterations is None else int(max_iterations)
    if rounds < 1:
        raise PlannerConfigError("max_iterations", max_iterations, ">= 1")
    start, goal = np.asarray(start, float), np.asarray(goal, float)
    step = cfg.edge_step_rad
    if try_direct and motion_is_free(start, goal, is_free, step, prove_free=prove_free):
        return SearchResult([start.copy(), goal.copy()], 0, 2)
    trees = [_Tree(start, cfg.max_nodes), _Tree(goal, cfg.max_nodes)]
    start_tree = trees[0]

    def extend(tree: _Tree, target: np.ndarray) -> tuple[str, int]:
        near = tree.nearest(target)
        q_near = tree.q[near]
        delta = target - q_near
        dist = math.sqrt(float(delta @ delta))  # np.linalg.norm's value, without its wrapper
        reached = dist <= cfg.extend_step_rad
        q_new = target if reached else q_near + delta * (cfg.extend_step_rad / dist)
        if not _edge_free(q_near, q_new, is_free, step, prove_free):
            return "trapped", -1
        return ("reached" if reached else "advanced"), tree.add(q_new, near)

    for it in range(1, rounds + 1):
        if deadline_s is not None and time.perf_counter() > deadline_s:
            return SearchResult(
                None,
                it - 1,
                trees[0].n + trees[1].n,
                "wall-time budget exhausted during the search",
                timed_out=True,
            )
        a, b = trees
        status, i_new = extend(a, rng.uniform(lower, upper))
        if status != "trapped":
            target = a.q[i_new].copy()
            while True:
                status_b, i_b = extend(b, target)
                if status_b != "advanced" or b.n >= cfg.max_nodes:
                    break
            if status_b == "reached":
                path_a, path_b = a.branch(i_new), b.branch(i_b)
                path = path_a[::-1] + path_b[1:]
                if a is not start_tree:
                    path = path[::-1]
                return SearchResult(path, it, trees[0].n + trees[1].n)
        if trees[0].n >= cfg.max_nodes or trees[1].n >= cfg.max_nodes:
            return SearchResult(None, it, trees[0].n + trees[1].n, "tree size limit reached")
        trees.reverse()
    return SearchResult(None, rounds, trees[0].n + trees[1].n, f"no path after {rounds} iterations")


def _edge_free(
    a: np.ndarray, b: np.ndarray, is_free: StateCheck, step: float, prove_free: BatchProof | None
) -> bool:
    """``is_free(b)`` and then the motion from ``a`` (checked) to ``b`` in bisection order.
    With ``prove_free`` the edge is checked as a batch (``_first_collision``): ``b``
    exactly first (``EDGE_PROVE_HEAD``), then every interior state at once through the
    proof when there are at least ``EDGE_PROVE_MIN_STATES``, and only the unproven ones
    exactly, in bisection order, stopping at the first colliding one: the same answer."""
    if prove_free is None:
        return is_free(b) and motion_is_free(a, b, is_free, step)
    d = b - a
    n = max(1, math.ceil(float(np.max(np.abs(d))) / step))
    order = [n, *_bisection_order(n)]
    hit = _first_collision(
        order, a, d, n, is_free, prove_free, b, EDGE_PROVE_HEAD, EDGE_PROVE_MIN_STATES
    )
    return hit is None


def path_length(path: list[np.ndarray]) -> float:
    return float(sum(np.linalg.norm(b - a) for a, b in zip(path, path[1:], strict=False)))


def shortcut(
    path: list[np.ndarray],
    is_free: StateCheck,
    rng: np.random.Generator,
    rounds: int,
    step_rad: float,
    deadline_s: float | None = None,
    min_gain: float = 0.0,
    drop_first: bool = False,
    prove_free: BatchProof | None = None,
) -> list[np.ndarray]:
    """Shorten ``path`` by joining random points of it with straight checked motions (the
    new waypoints themselves checked), then drop every waypoint whose neighbours see each
    other. Ends stay fixed. Past ``deadline_s`` (``time.perf_counter()``) no more rounds
    run (the path stays valid, only less short). ``min_gain`` (a fraction of the path's
    length, [0, 1)): when > 0, a candidate that would not shorten the path by more than
    that is skipped unchecked (same random draws). Colliding states found are remembered
    (``CollisionMemory``) and checked first on later candidates: same answers, fewer
    checks. ``drop_first``: ``drop_redundant`` runs on the path before the rounds too (with
    the same memory). ``prove_free``: a batch proof of free states for the motions
    (``motion_is_free``): the same path."""
    path = [np.asarray(p, float) for p in path]
    memory = CollisionMemory(path[0].size) if path else None
    if drop_first and len(path) > 2:
        path = drop_redundant(path, is_free, step_rad, memory, prove_free)
    seg = None  # segment lengths of the current path (and their running sum, cum)
    # per-round bookkeeping in plain floats (bisect on a list, two draws ordered by hand):
    # the same numbers as np.sort / np.searchsorted, at a fraction of their call cost
    for _ in range(rounds):
        if deadline_s is not None and time.perf_counter() > deadline_s:
            break
        if len(path) < 3:
            break
        if seg is None:
            seg = np.array([np.linalg.norm(b - a) for a, b in zip(path, path[1:], strict=False)])
            cum = np.concatenate([[0.0], np.cumsum(seg)]).tolist()
            total, last = float(seg.sum()), len(seg) - 1
        if total <= 0:
            break
        u1, u2 = rng.uniform(0.0, total, 2).tolist()
        s1, s2 = (u1, u2) if u1 <= u2 else (u2, u1)
        i = min(bisect.bisect_right(cum, s1) - 1, last)
        j = min(bisect.bisect_right(cum, s2) - 1, last)
        if i == j:
            continue
        p1 = path[i] + (path[i + 1] - path[i]) * ((s1 - cum[i]) / seg[i] if seg[i] > 0 else 0.0)
        p2 = path[j] + (path[j + 1] - path[j]) * ((s2 - cum[j]) / seg[j] if seg[j] > 0 else 0.0)
        if min_gain > 0.0:
            # length along the path from p1 to p2, minus the straight cut
            gain = (cum[j] - cum[i + 1]) + (cum[i + 1] - s1) + (s2 - cum[j])
            if gain - float(np.linalg.norm(p2 - p1)) <= min_gain * total:
                continue
        # p1 and p2 lie between the checked states of their edges: check them too, or an
        # unchecked (possibly colliding) state becomes a waypoint.
        if _state_free(p1, is_free, memory) and _state_free(p2, is_free, memory):
            if motion_is_free(p1, p2, is_free, step_rad, memory, prove_free):
                path = path[: i + 1] + [p1, p2] + path[j + 1 :]
                seg = None
    return drop_redundant(path, is_free, step_rad, memory, prove_free)


def _state_free(q: np.ndarray, is_free: StateCheck, memory: CollisionMemory | None) -> bool:
    if is_free(q):
        return True
    if memory is not None:
        memory.add(q)
    return False


def drop_redundant(
    path: list[np.ndarray],
    is_free: StateCheck,
    step_rad: float,
    memory: CollisionMemory | None = None,
    prove_free: BatchProof | None = None,
) -> list[np.ndarray]:
    """Greedy pass: from each kept waypoint jump to the farthest one it sees directly
    (motions checked with ``memory`` first, when given, and ``prove_free``: same answers)."""
    out, i = [path[0]], 0
    while i < len(path) - 1:
        j = len(path) - 1
        while j > i + 1 and not motion_is_free(
            path[i], path[j], is_free, step_rad, memory, prove_free
        ):
            j -= 1
        out.append(path[j])
        i = j
    return out
