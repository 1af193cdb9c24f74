"""What every ``rob-twin`` command shares: the parser class, the usage error, the exit codes
of errors, the ``--json`` object and the run of one command line (``run_command``).

A command registered with ``json_result=True`` returns ``(exit code, result object)`` and
prints nothing itself under ``--json`` (``run_command`` prints the one object); other
commands return an exit code and print for themselves.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import re
import sys
import textwrap
import traceback
import warnings
from collections.abc import Callable

from rob_twin.models.errors import RobTwinError

QUALITY_CHOICES = (
    "auto",
    "fast",
    "full",
)  # rob_twin.twin.render.quality.CHOICES (mujoco-free here)

# A command registered with json_result=True returns its exit code and the one object
# run_command() prints under --json; other commands return an exit code and print for
# themselves.
CommandResult = tuple[int, dict]


class UsageError(RobTwinError):
    """A command line argparse refuses (unknown option, missing argument); ``usage``: the
    command's usage line when argparse refused it (printed before the message)."""

    def __init__(self, message: str, usage: str = ""):
        super().__init__(message)
        self.usage = usage


def default_words(default: object) -> object:
    """A default as ``--help`` shows it: words, not a Python repr (None ``none``, a flag
    ``off`` / ``on``, a list or tuple ``a, b``)."""
    if default is None:
        return "none"
    if default is False or default is True:
        return "on" if default else "off"
    if isinstance(default, (list, tuple)):
        return ", ".join(map(str, default)) if default else "none"
    return default


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions filled paragraph by paragraph (blank lines kept, so a module docstring
    reads as written and a one-line description is wrapped); each option's help ends with
    its default, unless the default is None or False (a flag that is off, an option with no
    value) or the help already says it."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = re.split(r"\n\s*\n", text.strip())
        return "\n\n".join(
            textwrap.fill(
                " ".join(p.split()), width, initial_indent=indent, subsequent_indent=indent
            )
            for p in paragraphs
        )

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = getattr(action, "original_default", action.default)  # _expand_help's copy
        if (
            "default" not in text.lower()  # a help that already states its default
            and not any(default is v for v in (None, False, argparse.SUPPRESS))
            and (action.option_strings or action.nargs in ("?", "*"))
        ):
            text += " (default: %(default)s)"
        return text

    def _expand_help(self, action: argparse.Action) -> str:
        """``%(default)s`` in a help text as words (``default_words``), never ``None``."""
        if action.default is not argparse.SUPPRESS:
            shown = default_words(action.default)
            if shown is not action.default:
                original, action = action.default, copy.copy(action)
                action.default, action.original_default = shown, original
        return super()._expand_help(action)


class Parser(argparse.ArgumentParser):
    """Raises UsageError instead of exiting, so ``--json`` can report it as JSON; every
    command's help shows each option's default (``HelpFormatter``)."""

    def __init__(self, *args, **kwargs):
        if kwargs.get("formatter_class") in (None, argparse.HelpFormatter):
            kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}", usage=self.format_usage())


def input_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean bad input (exit 2) rather than a failed run (exit 1)."""
    from rob_twin.models.names import UnknownNameError
    from rob_twin.models.robot import MissingCapabilityError
    from rob_twin.models.robot_description import RobotFileError
    from rob_twin.planners.goals_file import GoalsFileError
    from rob_twin.planners.plan_file import PlanFileError
    from rob_twin.twin.bus.recording import RecordingError
    from rob_twin.twin.bus.timing import BusTimingConfigError
    from rob_twin.twin.calibration.calibrate import NotExcitedError
    from rob_twin.twin.calibration.calibration_file import CalibrationError
    from rob_twin.twin.calibration.dataset import DatasetError
    from rob_twin.twin.calibration.fit import FitError
    from rob_twin.twin.calibration.predict import NoFeedbackError
    from rob_twin.twin.scenario.run_folder import RunFolderError
    from rob_twin.twin.scenario.schema import ScenarioError

    return (
        UsageError,
        RobotFileError,
        MissingCapabilityError,
        ScenarioError,
        RunFolderError,
        UnknownNameError,
        BusTimingConfigError,
        RecordingError,
        PlanFileError,
        GoalsFileError,
        CalibrationError,
        DatasetError,
        NotExcitedError,
        FitError,
        NoFeedbackError,
    )


ROBOT_HELP = (
    "a shipped robot (rob, openarm) or the path of a robot file (robot.toml; schema "
    "models/robot.schema.json)"
)


def robot_arg(text: str):
    """``--robot NAME|PATH`` as a ``rob_twin.models.robot.Robot``, resolved once here (an
    argparse error, exit 2, names the shipped robots or what is wrong with the file)."""
    from rob_twin.models.robot import robot_of
    from rob_twin.models.robot_description import RobotFileError

    try:
        return robot_of(text)
    except RobotFileError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


CALIBRATION_HELP = (
    "calibration file (rob-twin calibrate): the twin's model and drives take its fitted "
    "parameters (robots with Amber drives; its transport delays are used by compare only); "
    "refused, exit 2, when fitted on another model (default: none, the twin as assumed)"
)


def calibration_arg(path: str | None, robot=None):
    """The ``--calibration FILE`` option as a checked Calibration for ``robot``'s model
    (a ``Robot`` or a name; None: the default robot); None when not given. CalibrationError
    (exit 2) for an unreadable file or another model's; MissingCapabilityError (exit 2) for a
    robot whose drives take no calibration."""
    if not path:
        return None
    from rob_twin.models.robot import CAN_DRIVES, robot_of
    from rob_twin.twin.calibration.calibration_file import load_calibration

    robot = robot_of(robot)
    robot.require(CAN_DRIVES, "a calibration (fitted drive parameters)")
    return load_calibration(path, robot.model(), robot)


def say_for(args: argparse.Namespace) -> Callable[..., None]:
    """Human-readable lines: stdout normally, stderr under --json (stdout is the JSON)."""
    stream = sys.stderr if getattr(args, "json", False) else sys.stdout
    return lambda *parts: print(*parts, file=stream)


def error_payload(err: BaseException, code: int) -> dict:
    payload = {"error": str(err), "type": type(err).__name__, "exit_code": code}
    issues = getattr(err, "issues", None)
    if issues:
        payload["issues"] = [i.model_dump() for i in issues]
    return payload


def run_command(build_parser: Callable[[], argparse.ArgumentParser], argv: list[str] | None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``) with the parser ``build_parser`` makes and
    run its command: the exit code; under ``--json`` exactly one JSON object on stdout, the
    command's result or the error (exit 2 for bad input, 1 otherwise, 130 when interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    stdout = sys.stdout
    with warnings.catch_warnings():
        warnings.showwarning = _warning_line
        return _run(build_parser, argv, as_json, stdout)


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line on stderr (``rob-twin: warning: ...``): what it says, without
    the source line Python's default form prints, which tells a user of the command
    nothing."""
    print(f"rob-twin: warning: {message}", file=sys.stderr if file is None else file)


def _run(build_parser, argv: list[str], as_json: bool, stdout) -> int:
    try:
        args = build_parser().parse_args(argv)
        # a command that returns its result (json_result) prints nothing itself under
        # --json: stray prints (libraries, experiments) go to stderr, not into the object
        quiet = as_json and getattr(args, "json_result", False)
        with contextlib.redirect_stdout(sys.stderr) if quiet else contextlib.nullcontext():
            outcome = args.func(args)
        code, payload = outcome if isinstance(outcome, tuple) else (int(outcome or 0), None)
    except KeyboardInterrupt as err:
        code, payload = 130, error_payload(err, 130) | {"error": "interrupted"}
        print("rob-twin: interrupted", file=sys.stderr)
    except Exception as err:
        code = 2 if isinstance(err, input_errors()) else 1
        payload = error_payload(err, code)
        if code == 1 and not isinstance(err, RobTwinError):
            traceback.print_exc(file=sys.stderr)
        if getattr(err, "usage", ""):  # argparse refused the line: its usage, then why
            print(err.usage.rstrip(), file=sys.stderr)
        text = str(err)  # one "rob-twin" prefix: argparse's messages carry their command's
        print(text if text.startswith("rob-twin") else f"rob-twin: {text}", file=sys.stderr)
    if as_json and payload is not None:
        print(json.dumps(payload, default=str), file=stdout, flush=True)
    return code
