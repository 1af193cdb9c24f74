"""MotionBenchMaker's bimanual Baxter problems as rob-twin scenes and robot files.

The public problems come with the ``vamp-planner`` source distribution on the package index
(``resources/baxter/``: ``baxter.urdf``, ``baxter.srdf``, collision meshes as STL and
``problems.tar.bz2``, MotionBenchMaker's MoveIt scene and request YAML files of the sets
``bookshelf_tall_both_arms_{easy,medium,hard}``, 600 problems each). Nothing of it is copied
into this repository: ``fetch_sdist`` downloads the pinned version with ``pip download``
(hash-checked by pip and again here) into ``CACHE_DIR`` (``~/.cache/rob-twin/vamp``, or
``$ROB_TWIN_CACHE/vamp``), and everything made from it lives there too.

Conversion (``robot_mjcf``, ``write_problem``):

- the URDF without its visual elements (Collada files MuJoCo does not read) and with its
  mesh files copied flat, loaded by MuJoCo's URDF importer with every link kept as a body
  (``fusestatic`` off, so the SRDF's link names stay bodies); every geom named after its body;
- the SRDF's ``disable_collisions`` pairs as ``<contact><exclude>`` pairs (both links must be
  bodies: the importer keeps every link, so all are);
- per problem, the scene's collision objects as primitives welded to the world (MoveIt's box
  ``[x, y, z]`` full sizes, cylinder ``[height, radius]``, sphere ``[radius]``; poses in the
  robot's base frame, quaternions ``[x, y, z, w]``), and a robot file (``ideal`` drives) that
  names the MJCF's two seven-joint arms, ``tcp_body = "<side>_hand"``.

A problem is the request's start (both arms) and its joint goal. MotionBenchMaker writes each
arm's joints with VAMP's order: left seven, then right seven; here they are kept by arm name.

Units: metres, radians.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import mujoco
import numpy as np

VAMP_VERSION = "0.6.4"
SDIST_NAME = f"vamp_planner-{VAMP_VERSION}.tar.gz"
# the sdist's sha256 as the package index publishes it (pip checks it on download)
SDIST_SHA256 = "d3150c6b67ff941af9ad56480b31d3fb73b12211ea21dc684f7737b059f6daba"
SETS = ("easy", "medium", "hard")
PROBLEMS_PER_SET = 600
ARMS = ("right", "left")
_JOINTS = ("s0", "s1", "e0", "e1", "w0", "w1", "w2")
ARM_JOINTS = {a: tuple(f"{a}_{j}" for j in _JOINTS) for a in ARMS}
KP, KV = 500.0, 20.0  # the ideal drives' servo gains (unused by planning)
_BAXTER = f"vamp_planner-{VAMP_VERSION}/resources/baxter/"


def cache_dir() -> Path:
    """Where the sdist and everything made from it live (outside the repository)."""
    root = os.environ.get("ROB_TWIN_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "rob-twin") / "vamp"


def sdist_path() -> Path:
    return cache_dir() / SDIST_NAME


HOW_TO_FETCH = (
    "the vamp-planner sdist is not cached; `python -m rob_twin.experiments.mbm_loader` (or "
    "`python -m rob_twin.experiments.bench mbm`) downloads vamp-planner=="
    f"{VAMP_VERSION} with pip into {sdist_path()}"
)


class MbmUnavailableError(RuntimeError):
    """The sdist is not cached (and was not to be downloaded), or pip could not get it."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cached_sdist() -> Path | None:
    """The cached sdist when present and its hash is the pinned one, else None."""
    path = sdist_path()
    if path.is_file() and sha256_of(path) == SDIST_SHA256:
        return path
    return None


def fetch_sdist(download: bool = True, timeout_s: float = 900.0) -> Path:
    """The pinned sdist in the cache: downloaded with ``pip download`` (``--require-hashes``
    through a hash-pinned requirement; only vamp-planner from source, its build requirements
    as wheels) when missing and ``download``; MbmUnavailableError otherwise."""
    have = cached_sdist()
    if have is not None:
        return have
    if not download:
        raise MbmUnavailableError(HOW_TO_FETCH)
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    req = folder / "requirement.txt"
    req.write_text(f"vamp-planner=={VAMP_VERSION} --hash=sha256:{SDIST_SHA256}\n")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "vamp-planner"]
    cmd += ["-r", str(req), "-d", str(folder)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise MbmUnavailableError(f"pip download took over {timeout_s:.0f} s") from None
    have = cached_sdist()
    if have is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise MbmUnavailableError(f"pip download failed (exit {done.returncode}): {tail}")
    return have


# ------------------------------------------------------------------ resources


def baxter_dir(sdist: Path | None = None) -> Path:
    """``resources/baxter`` of the sdist, extracted once into the cache (URDF, SRDF, the STL
    collision meshes, the problem YAML files). Only regular files under that folder, with
    plain relative names, are extracted."""
    out = cache_dir() / f"vamp-{VAMP_VERSION}" / "baxter"
    done = out / ".extracted"
    if done.is_file():
        return out
    sdist = sdist or fetch_sdist(download=False)
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar:
            name = member.name
            if not name.startswith(_BAXTER) or not member.isfile():
                continue
            rel = PurePosixPath(name[len(_BAXTER) :])
            if rel.is_absolute() or ".." in rel.parts:
                continue
            if not (rel.suffix.lower() in (".urdf", ".srdf", ".stl") or rel.name.endswith(".bz2")):
                continue
            target = out.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
    problems = out / "problems"
    with tarfile.open(out / "problems.tar.bz2", "r:bz2") as tar:
        for member in tar:
            rel = PurePosixPath(member.name)
            if not member.isfile() or rel.is_absolute() or ".." in rel.parts:
                continue
            if rel.suffix != ".yaml" or len(rel.parts) != 3 or rel.parts[0] != "problems":
                continue
            target = problems / rel.parts[1] / rel.parts[2]
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
    done.write_text(SDIST_SHA256 + "\n")
    return out


def disabled_pairs(srdf: Path) -> list[tuple[str, str]]:
    """The SRDF's ``disable_collisions`` link pairs, in file order."""
    root = ET.parse(srdf).getroot()
    return [(e.get("link1"), e.get("link2")) for e in root.iter("disable_collisions")]


def robot_mjcf(resources: Path | None = None) -> Path:
    """Baxter's URDF and SRDF as an MJCF (``baxter.xml`` beside ``meshes/`` in the cache):
    collision geometry only, every geom named after its body (``<body>`` or ``<body>_<k>``),
    the SRDF's disabled pairs as excludes. Made once."""
    resources = resources or baxter_dir()
    out = resources.parent / "mjcf"
    xml = out / "baxter.xml"
    if xml.is_file():
        return xml
    (out / "meshes").mkdir(parents=True, exist_ok=True)
    root = ET.parse(resources / "baxter.urdf").getroot()
    for link in root.iter("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
    for mesh in root.iter("mesh"):
        src = resources / mesh.get("filename")
        shutil.copyfile(src, out / "meshes" / src.name)
        mesh.set("filename", src.name)
    extra = ET.SubElement(root, "mujoco")
    ET.SubElement(
        extra,
        "compiler",
        meshdir="meshes",
        strippath="true",
        fusestatic="false",
        discardvisual="true",
    )
    urdf = out / "baxter_collision.urdf"
    urdf.write_text(ET.tostring(root, encoding="unicode"))
    spec = mujoco.MjSpec.from_file(str(urdf))
    bodies = {b.name for b in spec.bodies}
    for body in spec.bodies:
        geoms = list(body.geoms)
        for k, geom in enumerate(geoms):
            geom.name = body.name if len(geoms) == 1 else f"{body.name}_{k}"
    for a, b in disabled_pairs(resources / "baxter.srdf"):
        if a in bodies and b in bodies and a != b:
            spec.add_exclude(bodyname1=a, bodyname2=b)
    light = spec.worldbody.add_light(name="sun", pos=[0, 0, 3], dir=[0, 0, -1])
    light.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
    spec.compile()
    xml.write_text(spec.to_xml())
    return xml


# ------------------------------------------------------------------ problems


@dataclass(frozen=True)
class Obstacle:
    """A primitive welded to the world: kind box | cylinder | sphere; size: MuJoCo's (half
    sizes; radius, half height; radius) [m]; pos [m]; quat (w, x, y, z)."""

    name: str
    kind: str
    size: tuple[float, ...]
    pos: tuple[float, float, float]
    quat: tuple[float, float, float, float]


@dataclass(frozen=True)
class MbmProblem:
    """One MotionBenchMaker request: start and goal by arm [rad], the scene's obstacles."""

    set_name: str
    index: int  # 1..600, the files' number
    start: dict[str, np.ndarray]
    goal: dict[str, np.ndarray]
    obstacles: tuple[Obstacle, ...]

    @property
    def name(self) -> str:
        return f"{self.set_name}_{self.index:04d}"


def _set_folder(resources: Path, set_name: str) -> Path:
    if set_name not in SETS:
        raise ValueError(f"set {set_name!r}: one of {SETS}")
    return resources / "problems" / f"bookshelf_tall_both_arms_{set_name}_baxter"


def _obstacle(name: str, prim: dict, pose: dict) -> Obstacle:
    kind, dims = prim["type"], [float(x) for x in prim["dimensions"]]
    if kind == "box":
        size = tuple(0.5 * d for d in dims)
    elif kind == "cylinder":  # MoveIt: [height, radius]
        size = (dims[1], 0.5 * dims[0])
    elif kind == "sphere":
        size = (dims[0],)
    else:
        raise ValueError(f"obstacle {name!r}: primitive {kind!r} (box, cylinder, sphere)")
    x, y, z, w = (float(v) for v in pose["orientation"])
    pos = tuple(float(v) for v in pose["position"])
    return Obstacle(name, kind, size, pos, (w, x, y, z))


def load_problem(set_name: str, index: int, resources: Path | None = None) -> MbmProblem:
    """Problem ``index`` (1..600) of set ``set_name`` (``SETS``)."""
    import yaml

    folder = _set_folder(resources or baxter_dir(), set_name)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    request = yaml.load((folder / f"request{index:04d}.yaml").read_text(), Loader=loader)
    scene = yaml.load((folder / f"scene{index:04d}.yaml").read_text(), Loader=loader)
    js = request["start_state"]["joint_state"]
    at = dict(zip(js["name"], js["position"], strict=True))
    goal_at = {
        c["joint_name"]: float(c["position"])
        for g in request["goal_constraints"]
        for c in g["joint_constraints"]
    }
    start = {a: np.array([float(at[j]) for j in ARM_JOINTS[a]]) for a in ARMS}
    goal = {a: np.array([goal_at[j] for j in ARM_JOINTS[a]]) for a in ARMS}
    obstacles = []
    for obj in scene["world"]["collision_objects"]:
        prims, poses = obj.get("primitives", []), obj.get("primitive_poses", [])
        for k, (prim, pose) in enumerate(zip(prims, poses, strict=True)):
            name = obj["id"] if len(prims) == 1 else f"{obj['id']}_{k}"
            obstacles.append(_obstacle(name, prim, pose))
        if obj.get("meshes"):
            raise ValueError(f"{folder.name}/scene{index:04d}: mesh obstacles are not supported")
    return MbmProblem(set_name, index, start, goal, tuple(obstacles))


_KINDS = {
    "box": mujoco.mjtGeom.mjGEOM_BOX,
    "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
    "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
}


def scene_spec(problem: MbmProblem, robot_xml: Path | None = None) -> mujoco.MjSpec:
    """Baxter's MJCF with the problem's obstacles (geoms ``obstacle/<id>`` of the world)."""
    spec = mujoco.MjSpec.from_file(str(robot_xml or robot_mjcf()))
    spec.modelname = f"baxter_mbm_{problem.name}"
    for ob in problem.obstacles:
        size = list(ob.size) + [0.0] * (3 - len(ob.size))
        spec.worldbody.add_geom(
            name=f"obstacle/{ob.name}",
            type=_KINDS[ob.kind],
            size=size,
            pos=list(ob.pos),
            quat=list(ob.quat),
            rgba=[0.6, 0.45, 0.3, 1.0],
        )
    return spec


def robot_toml(mjcf_name: str, problem: MbmProblem) -> str:
    """A robot file for the problem's scene: ``ideal`` drives, home at the problem's start."""
    arms = []
    for a in ARMS:
        joints = ", ".join(f'"{j}"' for j in ARM_JOINTS[a])
        home = ", ".join(f"{float(x):.17g}" for x in problem.start[a])
        arms.append(
            f'[arms.{a}]\njoints = [{joints}]\ntcp_body = "{a}_hand"\nhome_rad = [{home}]\n'
        )
    return (
        f"# MotionBenchMaker bookshelf_tall_both_arms_{problem.set_name} problem "
        f"{problem.index} (vamp-planner {VAMP_VERSION} sdist), made by "
        "rob_twin.experiments.mbm_loader\n"
        f'name = "baxter-mbm-{problem.name}"\n'
        f'summary = "Baxter, both arms, MotionBenchMaker {problem.name}"\n'
        f'mjcf = "{mjcf_name}"\n'
        f'model_source = "vamp-planner {VAMP_VERSION} resources/baxter (URDF, SRDF, '
        'problems.tar.bz2)"\n\n'
        f'[drives]\nfamily = "ideal"\nkp = {KP}\nkv = {KV}\n\n' + "\n".join(arms)
    )


def write_problem(problem: MbmProblem, robot_xml: Path | None = None) -> Path:
    """The problem's scene MJCF and robot file in the cache (beside ``baxter.xml``); returns
    the robot file's path."""
    robot_xml = robot_xml or robot_mjcf()
    folder = robot_xml.parent
    mjcf = folder / f"scene_{problem.name}.xml"
    toml = folder / f"robot_{problem.name}.toml"
    mjcf.write_text(scene_spec(problem, robot_xml).to_xml())
    toml.write_text(robot_toml(mjcf.name, problem))
    return toml


def problem_model(problem: MbmProblem, robot_xml: Path | None = None) -> mujoco.MjModel:
    """The problem's canonical rob-twin model, loaded through its robot file."""
    from rob_twin.models.robot_description import load_robot_file
    from rob_twin.models.robot_model import load_robot_model

    return load_robot_model(load_robot_file(write_problem(problem, robot_xml)))


def main() -> int:
    path = fetch_sdist()
    print(f"{path} (sha256 {SDIST_SHA256})")
    print(f"resources: {baxter_dir(path)}; MJCF: {robot_mjcf()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
