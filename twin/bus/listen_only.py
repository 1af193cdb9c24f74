"""A python-can bus that can only listen: every way to transmit raises.

``ListenOnlyBus(inner)`` passes received frames through and refuses ``send`` and
``send_periodic`` with ``TransmitRefusedError`` (counted in ``send_attempts``), so code that
must never put a frame on a live bus (``rob-twin mirror``) cannot, whatever it calls.

``open_listen_only(...)`` opens the inner bus the quietest way the interface offers:
socketcand in raw mode (the protocol has no listen-only mode; the client sends its
``< open >`` and ``< rawmode >`` handshake and never a frame), SocketCAN with
``receive_own_messages=False`` (listen-only is a property of a Linux CAN interface, set by
its owner with ``ip link set canX type can listen-only on``; this wrapper is the guarantee
on the software side).
"""

from __future__ import annotations

import can
from rob_twin.models.errors import RobTwinError
from rob_twin.twin.bus.host_process import HostConfig, close_bus, open_bus
from rob_twin.twin.bus.socketcand import LOCALHOST

LISTEN_INTERFACES = ("socketcand", "socketcan")


class TransmitRefusedError(RobTwinError):
    """Something tried to send a frame on a listen-only bus (a defect of the caller)."""


class ListenOnlyBus(can.BusABC):
    """``inner``'s frames, read-only; ``send_attempts`` counts refused sends."""

    def __init__(self, inner: can.BusABC):
        self._inner = inner
        self.send_attempts = 0
        super().__init__(channel=inner.channel_info)
        self.channel_info = f"{inner.channel_info} (listen only)"

    def _recv_internal(self, timeout: float | None):
        return self._inner.recv(timeout=timeout), False

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        self.send_attempts += 1
        raise TransmitRefusedError(
            f"listen-only bus {self.channel_info}: refused to send id "
            f"0x{msg.arbitration_id:03X} (the mirror never transmits)"
        )

    def send_periodic(self, *args, **kwargs):  # type: ignore[override]
        self.send_attempts += 1
        raise TransmitRefusedError(
            f"listen-only bus {self.channel_info}: refused a periodic send (the mirror "
            "never transmits)"
        )

    def shutdown(self) -> None:
        close_bus(self._inner, drain_timeout_s=0.5)
        super().shutdown()


def open_listen_only(
    interface: str,
    channel: str,
    host: str = LOCALHOST,
    port: int = 29536,
    connect_timeout_s: float = 3.0,
) -> ListenOnlyBus:
    """``channel`` on ``interface`` ('socketcand': a server at host:port; 'socketcan'),
    wrapped read-only; ``HostError`` (bounded by ``connect_timeout_s`` [s]) if unreachable."""
    cfg = HostConfig(interface=interface, host=host, port=port, connect_timeout_s=connect_timeout_s)
    return ListenOnlyBus(open_bus(cfg, channel))
