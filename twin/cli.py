"""``rob-twin`` command line: demo, run, experiment, view, rehearse, certify.

Exit codes: 0 done; 1 the run or check failed (unexpected refused targets, failed plan
steps or owner faults; a failed gate; an error while running); 2 bad input (command line,
scenario file, output folder, unknown name); 3 no display for the viewer; 130 / 143 the
run was interrupted by SIGINT / SIGTERM (its summary is marked ``interrupted``).

With ``--json`` stdout carries exactly one JSON object, on success and on failure
(``{"error": ..., "type": ..., "exit_code": ...}``); progress and anything else a command
prints go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from controllers.errors import RobTwinError

# A command registered with json_result=True returns its exit code and the one object
# main() prints under --json; other commands return an exit code and print for themselves.
CommandResult = tuple[int, dict]


class UsageError(RobTwinError):
    """A command line argparse refuses (unknown option, missing argument)."""


class _Parser(argparse.ArgumentParser):
    """Raises UsageError instead of exiting, so ``--json`` can report it as JSON."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _input_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean bad input (exit 2) rather than a failed run (exit 1)."""
    from controllers.names import UnknownNameError
    from planners.plan_file import PlanFileError

    from .run_folder import RunFolderError
    from .scenario_schema import ScenarioError

    return (UsageError, ScenarioError, RunFolderError, UnknownNameError, PlanFileError)


def _say(args: argparse.Namespace) -> Callable[..., None]:
    """Human-readable lines: stdout normally, stderr under --json (stdout is the JSON)."""
    stream = sys.stderr if getattr(args, "json", False) else sys.stdout
    return lambda *parts: print(*parts, file=stream)


# --------------------------------------------------------------------------- experiment


def _cmd_experiment(args: argparse.Namespace) -> CommandResult:
    from experiments.registry import experiment_names, get_experiment

    if args.list or not args.name:
        names = experiment_names()
        if not args.json:
            print("\n".join(names))
        return 0, {"experiments": names}
    fn = get_experiment(args.name)
    result = fn(seed=args.seed)
    if not args.json:
        for key, value in result.items():
            if not isinstance(value, (list, dict)):
                print(f"{key}: {value}")
        print(f"(full result under out/experiments/{args.name}/)")
    return 0, result


# --------------------------------------------------------------------------- run / demo


def _run_and_report(sc, args: argparse.Namespace) -> CommandResult:
    """Prepare the run folder (checked and marked ``running`` before anything runs), run
    ``sc`` with Ctrl-C / SIGTERM caught, write the summary; exit 1 on anything the
    scenario did not expect, 130/143 when interrupted."""
    from .interrupts import EXIT_CODES, stop_requests
    from .report import summarize
    from .run_folder import RunFolder
    from .scenario import run_scenario
    from .verdict import unexpected

    say = _say(args)
    with stop_requests() as stop:  # from before the folder is marked running
        folder = RunFolder.prepare(args.out, sc.name,
                                   stale=(f"{sc.name}.mp4", "summary.md", "joints.png", "can"))
        try:
            result = run_scenario(
                sc, out_dir=folder.path, record=not args.no_video,
                can_log_dir=folder.file("can") if args.can_log else None, should_stop=stop,
                on_progress=lambda figures: folder.write_status("running", **figures))
            problems = unexpected(result, sc.expect) if result.status == "completed" else []
            summary = summarize(result, folder.path, problems, expect=sc.expect.model_dump())
        except KeyboardInterrupt:  # a second Ctrl-C: out at once, the figures are lost
            folder.write_status("interrupted", stopped_by="SIGINT (twice)",
                                note="stopped at once; no figures were kept")
            raise
        except Exception as err:
            folder.write_status("failed", error=str(err), type=type(err).__name__)
            raise
    if result.status == "interrupted":
        code = EXIT_CODES.get(result.stopped_by or "", 1)
        say(f"interrupted by {result.stopped_by} after {summary['simulated_s']} s simulated; "
            f"summary marked interrupted")
    else:
        code = 1 if problems else 0
    if summary["video"]:
        say(f"video: {summary['video']} ({summary['frames']} frames, "
            f"{summary['render_fps']} frames/s rendering)")
    else:
        say(f"no video written: {summary['video_skipped_reason']}")
    say(f"summary: {folder.file('summary.md')} and summary.json; plot: {summary['plot']}")
    if args.can_log:
        say(f"bus traffic: {folder.file('can')}/*.log (python-can canutils format)")
    say(f"simulated {summary['simulated_s']} s in {summary['wall_s']} s wall (hardware_io: false)")
    for line in problems:
        say(f"UNEXPECTED: {line}")
    return code, {**summary, "run_folder": str(folder.path), "exit_code": code}


def _cmd_demo(args: argparse.Namespace) -> CommandResult:
    from .scenario import demo_scenario

    return _run_and_report(demo_scenario(), args)


def _cmd_run(args: argparse.Namespace) -> CommandResult:
    from .scenario import Scenario

    sc = Scenario.load(args.scenario)
    if args.check:
        _say(args)(f"{args.scenario}: valid scenario {sc.name!r} ({sc.duration} s, "
                   f"{len(sc.keyframes)} keyframes, {len(sc.plans)} plan steps, {len(sc.faults)} faults)")
        return 0, {"valid": True, "scenario": sc.name, "path": str(args.scenario)}
    return _run_and_report(sc, args)


# --------------------------------------------------------------------------- view


def _cmd_view(args: argparse.Namespace) -> int:
    from .viewer import NoDisplayError, view

    try:
        return view(args.scenario)
    except NoDisplayError as err:
        print(f"rob-twin view: {err}", file=sys.stderr)
        return 3


# --------------------------------------------------------------------------- rehearse


def _cmd_rehearse(args: argparse.Namespace) -> CommandResult:
    import dataclasses

    from controllers.names import UnknownNameError

    from .closed_loop import ClosedLoopConfig
    from .faults import FaultSpec
    from .rehearsal import GATES, RehearsalConfig, rehearse, write_report
    from .run_folder import RunFolder
    from .scenario_schema import ScenarioError, validate_faults

    try:
        raw = json.loads(args.faults) if args.faults else []
    except (json.JSONDecodeError, RecursionError) as err:
        raise ScenarioError(f"--faults is not valid JSON: {err}") from None
    faults = tuple(FaultSpec.from_model(f) for f in validate_faults(raw, "--faults"))
    for gate in args.gate or ():
        if gate not in GATES:
            raise UnknownNameError("gate", gate, list(GATES))
    out = Path(args.out)
    RunFolder.check_writable(out)  # before the gates run, not after
    base = dataclasses.replace(ClosedLoopConfig(), seed=args.seed, swap_wiring=args.swap_wiring,
                               faults=faults)
    report = rehearse(RehearsalConfig(base=base), args.gate or None, progress=not args.json)
    jp, mp = write_report(report, out)
    if not args.json:
        for g in report["gates"]:
            print(f"{'PASS' if g['passed'] else 'FAIL'}  {g['name']}")
        print(f"report: {mp} and {jp} (simulated; hardware_io: false)")
    return (0 if report["passed"] else 1), report


# --------------------------------------------------------------------------- certify


def _cmd_certify(args: argparse.Namespace) -> CommandResult:
    from models.loading import SCENE_PATH, load_scene
    from planners.certificate_check import verify_document
    from planners.plan_file import load_plan_file

    doc = load_plan_file(args.plan)
    model = load_scene(args.model or SCENE_PATH)
    report = verify_document(doc, model).as_dict()
    report["plan"] = str(args.plan)
    if not args.json:
        verdict = "AGREES" if report["ok"] else "DISAGREES"
        print(f"{verdict}: certified minimum {report['certified_min_m'] * 1e3:.3f} mm "
              f"({report['pair']}), {report['pairs_checked']} pairs, {report['coal_queries']} coal queries")
        for line in report["disagreements"]:
            print(f"  {line}")
    return (0 if report["ok"] else 1), report


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rob-twin", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("experiment", help="run a registered experiment")
    exp.add_argument("name", nargs="?", help="experiment name (omit to list)")
    exp.add_argument("--json", action="store_true", help="print exactly one JSON object")
    exp.add_argument("--seed", type=int, default=0)
    exp.add_argument("--list", action="store_true")
    exp.set_defaults(func=_cmd_experiment, json_result=True)
    demo = sub.add_parser("demo", help="headless demo: ROB at the table moves both arms; video + summary")
    demo.add_argument("--out", default="out", help="output folder (default out/)")
    demo.add_argument("--no-video", action="store_true")
    demo.add_argument("--can-log", action="store_true", help="log all CAN traffic under OUT/demo/can/")
    demo.add_argument("--json", action="store_true", help="print exactly one JSON object (the summary)")
    demo.set_defaults(func=_cmd_demo, json_result=True)
    run = sub.add_parser("run", help="run a scenario file headless",
                         description="Run a scenario file headless; outputs go to OUT/NAME/. "
                         "Schema: experiments/scenarios/scenario.schema.json")
    run.add_argument("scenario")
    run.add_argument("--out", default="out")
    run.add_argument("--no-video", action="store_true")
    run.add_argument("--can-log", action="store_true", help="log all CAN traffic under OUT/NAME/can/")
    run.add_argument("--check", action="store_true", help="only validate the scenario file")
    run.add_argument("--json", action="store_true", help="print exactly one JSON object (the summary)")
    run.set_defaults(func=_cmd_run, json_result=True)
    reh = sub.add_parser("rehearse", help="pre-commissioning gates, simulated (exit 1 if any fails)")
    reh.add_argument("--json", action="store_true", help="print exactly one JSON object")
    reh.add_argument("--out", default="out/rehearsal", help="report folder (default out/rehearsal/)")
    reh.add_argument("--gate", action="append", help="run only this gate (repeatable)")
    reh.add_argument("--seed", type=int, default=0)
    reh.add_argument("--swap-wiring", action="store_true",
                     help="rehearse a robot whose arm buses are swapped (the mapping gate must fail)")
    reh.add_argument("--faults", help="JSON list of faults applied to every gate, e.g. "
                     '\'[{"kind": "wrong_sign", "arm": "right", "joints": [5]}]\'')
    reh.set_defaults(func=_cmd_rehearse, json_result=True)
    cert = sub.add_parser("certify", help="re-verify a saved plan's clearance certificate with coal "
                          "(exit 1 on any disagreement)")
    cert.add_argument("plan", help="plan file (JSON, planners.plan_file)")
    cert.add_argument("--model", help="scene XML (default: the generated ROB scene)")
    cert.add_argument("--json", action="store_true", help="print exactly one JSON object")
    cert.set_defaults(func=_cmd_certify, json_result=True)
    view = sub.add_parser("view", help="interactive viewer paced in real time (needs a display)")
    view.add_argument("scenario", nargs="?")
    view.set_defaults(func=_cmd_view)
    return parser


# --------------------------------------------------------------------------- main


def _error_payload(err: BaseException, code: int) -> dict:
    payload = {"error": str(err), "type": type(err).__name__, "exit_code": code}
    issues = getattr(err, "issues", None)
    if issues:
        payload["issues"] = [i.model_dump() for i in issues]
    return payload


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    stdout = sys.stdout
    try:
        args = build_parser().parse_args(argv)
        # a command that returns its result (json_result) prints nothing itself under
        # --json: stray prints (libraries, experiments) go to stderr, not into the object
        quiet = as_json and getattr(args, "json_result", False)
        with contextlib.redirect_stdout(sys.stderr) if quiet else contextlib.nullcontext():
            outcome = args.func(args)
        code, payload = outcome if isinstance(outcome, tuple) else (int(outcome or 0), None)
    except KeyboardInterrupt as err:
        code, payload = 130, _error_payload(err, 130) | {"error": "interrupted"}
        print("rob-twin: interrupted", file=sys.stderr)
    except Exception as err:
        code = 2 if isinstance(err, _input_errors()) else 1
        payload = _error_payload(err, code)
        if code == 1 and not isinstance(err, RobTwinError):
            traceback.print_exc(file=sys.stderr)
        print(f"rob-twin: {err}", file=sys.stderr)
    if as_json and payload is not None:
        print(json.dumps(payload, default=str), file=stdout, flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
