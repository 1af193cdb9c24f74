"""socketcand's ASCII protocol: the byte stream split into ``< ... >`` messages, and each
message read into a typed command or a typed error (never a traceback).

A message is ``<``, printable ASCII, ``>``; fields are separated by spaces::

    < open CAN10 >    < rawmode >    < echo >    < send 011 3 40 0 80 >

``CommandStream`` resynchronises after garbage: bytes outside a message are discarded,
a ``<`` inside an unfinished message starts a new one (the unfinished part is dropped),
and a message longer than ``max_message_bytes`` is dropped; every discarded byte is
counted, so one stray ``>`` or a burst of noise costs only itself.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import can
from rob_twin.models.errors import InvalidValueError, RobTwinError, describe

MAX_MESSAGE_BYTES = 256  # the longest valid message (an extended send of 8 bytes) is ~50
VERBS = ("open", "rawmode", "send", "echo")
_CHANNEL = re.compile(r"[A-Za-z0-9_.\-]{1,32}")
_HEX = re.compile(r"[0-9A-Fa-f]+")


class SocketcandError(RobTwinError):
    """A malformed socketcand message or a server that cannot start."""


class SocketcandCommandError(SocketcandError, InvalidValueError):
    """A malformed socketcand command: ``field`` names the part that is wrong, ``value``
    what was found and ``valid`` what is accepted; ``text`` is the whole message."""

    def __init__(self, field: str, value: object, valid: str, text: str):
        self.text = text
        self.subject = f"socketcand message {describe(text)}:"
        super().__init__(field, value, valid)


@dataclass(frozen=True)
class Command:
    """One socketcand command: its verb and its fields (strings, as sent)."""

    verb: str
    args: tuple[str, ...]
    text: str


def parse_command(text: str) -> Command:
    """``< verb args... >`` as a ``Command``; SocketcandCommandError when the framing, the
    characters or the verb are wrong."""
    if len(text) < 2 or text[0] != "<" or text[-1] != ">":
        raise SocketcandCommandError("framing", text[:1] + "..." + text[-1:], "< ... >", text)
    parts = text[1:-1].split()
    if not parts:
        raise SocketcandCommandError("command", "", ", ".join(VERBS), text)
    if parts[0] not in VERBS:
        raise SocketcandCommandError("command", parts[0], ", ".join(VERBS), text)
    return Command(parts[0], tuple(parts[1:]), text)


def parse_open(cmd: Command) -> str:
    """The channel of ``< open CHANNEL >``; SocketcandCommandError otherwise."""
    if cmd.verb != "open":
        raise SocketcandCommandError("command", cmd.verb, "open (the first command)", cmd.text)
    if len(cmd.args) != 1 or not _CHANNEL.fullmatch(cmd.args[0]):
        raise SocketcandCommandError(
            "open channel", " ".join(cmd.args), "one name of 1..32 of A-Z a-z 0-9 _ . -", cmd.text
        )
    return cmd.args[0]


def _hex_field(field: str, value: str, max_digits: int, text: str) -> int:
    if len(value) > max_digits or not _HEX.fullmatch(value):
        raise SocketcandCommandError(field, value, f"1..{max_digits} hex digits", text)
    return int(value, 16)


def parse_send(text: str) -> can.Message:
    """``< send ID LEN B0 B1 ... >`` (hex fields; 3 id digits: standard, more: extended) as
    a message stamped now [s, epoch]; SocketcandCommandError naming the bad field."""
    cmd = parse_command(text)
    if cmd.verb != "send":
        raise SocketcandCommandError(
            "command", cmd.verb, "send (not a socketcand send command)", text
        )
    if len(cmd.args) < 2:
        raise SocketcandCommandError("send fields", " ".join(cmd.args), "ID LEN [B0 .. B7]", text)
    extended = len(cmd.args[0]) > 3
    ident = _hex_field("id", cmd.args[0], 8, text)
    top = 0x1FFFFFFF if extended else 0x7FF
    if ident > top:
        raise SocketcandCommandError("id", f"0x{ident:X}", f"0x0..0x{top:X}", text)
    length = _hex_field("length", cmd.args[1], 2, text)
    data = bytes(_hex_field("data", b, 2, text) for b in cmd.args[2:])
    if length > 8 or length != len(data):
        raise SocketcandCommandError(
            "length", length, f"0..8 and equal to the {len(data)} data bytes sent", text
        )
    return can.Message(
        arbitration_id=ident, data=data, is_extended_id=extended, timestamp=time.time()
    )


def format_frame(msg: can.Message) -> str:
    """A bus frame as socketcand's ``< frame ID SECONDS DATA >``."""
    ident = f"{msg.arbitration_id:08X}" if msg.is_extended_id else f"{msg.arbitration_id:03X}"
    return f"< frame {ident} {msg.timestamp:.6f} {bytes(msg.data).hex().upper()} >"


def error_reply(reason: str) -> bytes:
    """``< error REASON >`` with any ``<``/``>`` in the reason replaced, so the reply is one
    message; ASCII."""
    clean = reason.replace("<", "[").replace(">", "]").encode("ascii", errors="replace")
    return b"< error " + clean + b" >"


class CommandStream:
    """Splits a connection's bytes into messages (``feed``), resynchronising after garbage.

    ``discarded_bytes`` counts every byte that was not part of a returned message.
    Messages are returned as text (undecodable bytes as U+FFFD, which no parser accepts).
    """

    def __init__(self, max_message_bytes: int = MAX_MESSAGE_BYTES):
        self.max_message_bytes = max_message_bytes
        self.discarded_bytes = 0
        self._buf = bytearray()  # empty, or an unfinished message starting with '<'

    def feed(self, data: bytes) -> list[str]:
        buf = self._buf
        buf += data
        out: list[str] = []
        pos = 0
        while True:
            start = buf.find(b"<", pos)
            if start == -1:
                self.discarded_bytes += len(buf) - pos
                pos = len(buf)
                break
            self.discarded_bytes += start - pos
            end = buf.find(b">", start + 1)
            again = buf.find(b"<", start + 1, end if end != -1 else len(buf))
            if again != -1:  # a new message begins before this one ended: drop this one
                self.discarded_bytes += again - start
                pos = again
                continue
            if end == -1:
                if len(buf) - start > self.max_message_bytes:
                    self.discarded_bytes += len(buf) - start
                    pos = len(buf)
                else:
                    pos = start
                break
            if end + 1 - start > self.max_message_bytes:
                self.discarded_bytes += end + 1 - start
            else:
                out.append(buf[start : end + 1].decode("ascii", errors="replace"))
            pos = end + 1
        del buf[:pos]
        return out
