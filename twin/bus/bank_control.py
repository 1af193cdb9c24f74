"""The bank's control protocol: JSON lines over TCP on 127.0.0.1 (``docs/BANK_PROTOCOL.md``).

``parse_control(line)`` turns one received line (bytes, without its ``\\n``) into a
``ControlCommand`` or raises ``ControlError`` (an ``InvalidValueError``: ``field``,
``value``, ``valid``) *before* anything acts on it: the line is read by the shared bounded
JSON reader (size, UTF-8, nesting, integer digits, finite numbers, no repeated key), the
command name and keys are checked, and a fault is validated completely (kind, arm, times,
ranges; the scenario fault schema, ``rob_twin.twin.scenario.schema.parse_fault``). The bank
answers a ``ControlError`` on the same connection as ``{"ok": false, "error", "field",
"valid"}`` and keeps serving.

No client can hold the port: at most ``MAX_CLIENTS`` connections at once, and at most
``MAX_CLIENTS_PER_ADDRESS`` of them from one source address; a new connection beyond either
closes the open one (of all, or of its address) that sent no command for the longest,
which is answered one JSON line saying why (``evicted_error``: ``{"ok": false, "field":
"connection", ...}``), so no set of connections, idle or talking, keeps a new client out.
A connection that sends no complete line for ``IDLE_TIMEOUT_S`` (``idle_error``), or whose
line does not end within ``LINE_TIMEOUT_S`` of its first byte (``partial_line_error``),
is answered why and closed. The bank's ``BankConfig`` can set all four
(``check_connection_limits`` says what is valid).

``control(port, command)`` is the client side: one command, one reply.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass

from rob_twin.models.bounded_json import JsonInputError, JsonLimits, read_bounded_json
from rob_twin.models.errors import InvalidValueError
from rob_twin.twin.bus.socketcand import LOCALHOST
from rob_twin.twin.scenario.schema import parse_fault
from rob_twin.twin.sim.faults import FaultSpec, FaultSpecError

COMMANDS = ("status", "fault", "clear_faults", "shutdown")
MAX_LINE_BYTES = 16_384  # one command line, without its newline [bytes]
MAX_DEPTH = 8  # nested arrays/objects in one command
MAX_PENDING_FAULTS = 64  # faults queued or in force at once; more are refused
MAX_CLIENTS = 8  # control connections served at once; more are refused
# of them from one source address; every local client's is 127.0.0.1, so by default one
# address may hold them all (a bank whose clients come from several addresses sets it lower)
MAX_CLIENTS_PER_ADDRESS = MAX_CLIENTS
MAX_CLIENTS_LIMIT = 1024  # the largest connection cap a bank may be given
MAX_REPLY_BYTES = 4_000_000  # a status reply for the client side [bytes]
IDLE_TIMEOUT_S = 10.0  # a connection without a complete line this long is closed [s]
LINE_TIMEOUT_S = 2.0  # from the first byte of a line to its newline, at most [s]

CONTROL_LIMITS = JsonLimits(
    max_bytes=MAX_LINE_BYTES, max_depth=MAX_DEPTH, max_int_digits=20, reject_duplicate_keys=True
)
REPLY_LIMITS = JsonLimits(max_bytes=MAX_REPLY_BYTES, max_depth=MAX_DEPTH, max_int_digits=20)


class ControlError(InvalidValueError):
    """A control message the bank refuses; ``field`` names what was wrong, ``valid`` the
    rule or limit. Nothing was changed."""

    subject = "bank control message"

    def reply(self) -> dict:
        """The answer sent back on the connection."""
        return {"ok": False, "error": str(self), "field": self.field, "valid": self.valid}


@dataclass(frozen=True)
class ControlCommand:
    """One checked command; ``fault`` (with ``at`` relative to the bank's now [s]) only
    for ``cmd == "fault"``."""

    cmd: str
    fault: FaultSpec | None = None


def parse_control(line: bytes | str) -> ControlCommand:
    """One control line as a checked command; ``ControlError`` names the field and the limit."""
    try:
        obj = read_bounded_json(line, what="bank control message", limits=CONTROL_LIMITS)
    except JsonInputError as err:
        raise ControlError(err.field, err.value, err.valid) from None
    if not isinstance(obj, dict):
        raise ControlError("message", type(obj).__name__, 'a JSON object {"cmd": ...}')
    name = obj.get("cmd")
    if not isinstance(name, str) or name not in COMMANDS:
        raise ControlError("cmd", name, ", ".join(COMMANDS))
    allowed = {"cmd", "fault"} if name == "fault" else {"cmd"}
    extra = sorted(set(obj) - allowed)
    if extra:
        raise ControlError("keys", extra, f"only {', '.join(sorted(allowed))} for {name!r}")
    if name != "fault":
        return ControlCommand(name)
    raw = obj.get("fault")
    if not isinstance(raw, dict):
        raise ControlError("fault", raw, "an object: kind, arm, at [s from now], duration [s], ...")
    try:
        spec = parse_fault(raw)
    except FaultSpecError as err:
        raise ControlError("fault", raw, _fault_problems(err)) from None
    return ControlCommand(name, spec)


def _fault_problems(err: FaultSpecError) -> str:
    """The schema's problem lines as one line ("fault.at: Input should be ...; ...")."""
    lines = [ln.strip().removeprefix("- ") for ln in str(err).splitlines()[1:] if ln.strip()]
    text = "; ".join(lines) if lines else str(err)
    return text.replace("faults[0]", "fault")


def pending_faults_error(pending: int) -> ControlError:
    """The refusal of one fault more when ``pending`` are already queued or in force."""
    return ControlError(
        "fault",
        f"{pending} faults pending",
        f"at most {MAX_PENDING_FAULTS} queued or in force; wait for some to end or clear_faults",
    )


class ControlLimitsError(InvalidValueError):
    """A control-port limit of the bank's configuration out of its range."""

    subject = "bank control limits"


def check_connection_limits(
    max_clients: object, per_address: object, idle_s: object, line_s: object
) -> None:
    """ControlLimitsError unless ``max_clients`` is an integer in 1..MAX_CLIENTS_LIMIT,
    ``per_address`` one in 1..max_clients, and both timeouts seconds in 0.01..3600."""
    for name, v, hi in (
        ("control_max_clients", max_clients, MAX_CLIENTS_LIMIT),
        ("control_max_clients_per_address", per_address, max_clients),
    ):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:  # type: ignore[operator]
            raise ControlLimitsError(name, v, f"an integer in 1..{hi}")
    for name, v in (("control_idle_timeout_s", idle_s), ("control_line_timeout_s", line_s)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0.01 <= v <= 3600.0:
            raise ControlLimitsError(name, v, "seconds in 0.01..3600")


def connections_full_error(open_now: int, limit: int) -> ControlError:
    """The reply that refuses a connection when ``limit`` connections are open."""
    return ControlError("connection", f"{open_now} open", f"at most {limit} at once")


def evicted_error(open_now: int, limit: str, quiet_s: float) -> ControlError:
    """The reply to the connection closed to make room for a new one: ``open_now`` open,
    ``limit`` the limit reached (in words), this one without a command for ``quiet_s`` [s]."""
    return ControlError(
        "connection",
        f"closed for a new client: {open_now} open, this one {quiet_s:.1f} s without a "
        "command, the longest",
        f"{limit}; a new connection closes the one quiet the longest",
    )


@dataclass(eq=False)
class ControlPlace:
    """One open control connection: its socket, source address, when it last sent a
    complete command line (or connected) [s, monotonic], and, once it is to make room for a
    new one, the reply saying so (``evicted``)."""

    conn: socket.socket
    address: str
    last_command_s: float
    evicted: ControlError | None = None

    def wake(self) -> None:
        """End its wait for input now (its thread then answers ``evicted`` and closes)."""
        try:
            self.conn.shutdown(socket.SHUT_RD)
        except OSError:
            pass


def idle_error(idle_s: float, limit_s: float) -> ControlError:
    """The reply that closes a connection that sent no complete line for ``limit_s``."""
    return ControlError(
        "connection",
        f"idle {idle_s:.1f} s without a complete line",
        f"a complete command line at least every {limit_s:g} s (the connection is closed)",
    )


def partial_line_error(size: int, waited_s: float, limit_s: float) -> ControlError:
    """The reply that closes a connection whose line did not end within ``limit_s``."""
    return ControlError(
        "line",
        f"{size} bytes without a newline for {waited_s:.1f} s",
        f"a line ending in \\n within {limit_s:g} s of its first byte (the connection is closed)",
    )


def encode_reply(reply: dict) -> bytes:
    """One reply line (JSON, no NaN/Infinity, ``\\n``-terminated); a reply that holds a
    non-finite number becomes an error reply naming it (the connection goes on)."""
    try:
        return (json.dumps(reply, default=str, allow_nan=False) + "\n").encode()
    except ValueError as err:
        refusal = {"ok": False, "error": f"the bank's reply is not valid JSON: {err}"}
        return (json.dumps(refusal | {"field": "reply", "valid": "finite numbers"}) + "\n").encode()


def control(port: int, command: dict, host: str = LOCALHOST, timeout_s: float = 5.0) -> dict:
    """Send one command to a running bank's control channel and return its reply."""
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.sendall((json.dumps(command) + "\n").encode())
        buf = b""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in buf:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"bank control on {host}:{port} did not answer within {timeout_s} s"
                )
            if len(buf) > MAX_REPLY_BYTES:
                raise ControlError("reply", f"{len(buf)} bytes", f"<= {MAX_REPLY_BYTES} bytes")
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"bank control on {host}:{port} closed without an answer")
            buf += chunk
    reply = read_bounded_json(buf.split(b"\n", 1)[0], what="bank reply", limits=REPLY_LIMITS)
    if not isinstance(reply, dict):
        raise ControlError("reply", type(reply).__name__, "a JSON object")
    return reply
