"""A socketcand-compatible TCP server: the twin's buses reachable by any socketcand client.

socketcand (the linux-can daemon) serves CAN interfaces over TCP in an ASCII protocol;
python-can's ``socketcand`` interface, SavvyCAN and others speak it. This server
implements its raw mode, which is what those clients use::

    server: < hi >                 client: < open CAN10 >
    server: < ok >                 client: < rawmode >
    server: < ok >
    then    client: < send 011 3 40 0 80 >        (id, length, data bytes in hex)
            server: < frame 091 12.345678 0100800000000001 >   (id, seconds, hex data)

Each named channel is bridged to an in-process python-can ``virtual`` bus of the same
name, where the motor bank sits. A client's frame goes onto that bus (so the drives
read it) and to every other client on the channel (a bus is shared: a monitor sees the
host's commands, a second host is a visible second writer); the bank's frames go to
every client. A client's frame on a feedback id (0x91..0x97) means another drive or a
second bank answers on this channel: it is counted (``foreign_feedback``) and reported.

Binds to 127.0.0.1 by default; every socket has a timeout, and ``close()`` ends all
threads. An unknown channel is answered ``< error unknown channel ... >`` and closed.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

import can
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import FEEDBACK_IDS

LOCALHOST = "127.0.0.1"
DEFAULT_PORT = 29536  # socketcand's default port
FIRST_FRAME_DELAY_S = 0.05  # python-can's client reads '< ok >' with one recv: keep frames apart


class SocketcandError(RobTwinError):
    """A malformed socketcand message or a server that cannot start."""


def format_frame(msg: can.Message) -> str:
    """A bus frame as socketcand's ``< frame ID SECONDS DATA >``."""
    ident = f"{msg.arbitration_id:08X}" if msg.is_extended_id else f"{msg.arbitration_id:03X}"
    return f"< frame {ident} {msg.timestamp:.6f} {bytes(msg.data).hex().upper()} >"


def parse_send(text: str) -> can.Message:
    """``< send ID LEN B0 B1 ... >`` (hex fields) as a message; SocketcandError if malformed."""
    parts = text.strip()[1:-1].split()
    if len(parts) < 3 or parts[0] != "send":
        raise SocketcandError(f"not a socketcand send command: {text!r}")
    try:
        ident, length = int(parts[1], 16), int(parts[2], 16)
        data = bytes(int(b, 16) for b in parts[3:])
    except ValueError:
        raise SocketcandError(f"socketcand send with a non-hex field: {text!r}") from None
    extended = len(parts[1]) > 3
    if not (0 <= ident <= (0x1FFFFFFF if extended else 0x7FF)):
        raise SocketcandError(f"socketcand send: id 0x{ident:X} out of range in {text!r}")
    if length != len(data) or length > 8:
        raise SocketcandError(
            f"socketcand send: length {length} does not match {len(data)} "
            f"data bytes (0..8) in {text!r}"
        )
    return can.Message(
        arbitration_id=ident, data=data, is_extended_id=extended, timestamp=time.time()
    )


@dataclass
class ChannelStats:
    frames_from_clients: int = 0
    frames_to_clients: int = 0
    malformed: int = 0
    foreign_feedback: int = 0  # feedback-id frames from a client: a second bank or drive
    clients: int = 0
    last_error: str = ""


@dataclass
class _Client:
    sock: socket.socket
    channel: str
    ready_at: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    alive: bool = True

    def send_text(self, text: str) -> None:
        with self.lock:
            self.sock.sendall(text.encode("ascii"))


class SocketcandServer:
    """Serves ``channels`` (names of in-process virtual buses) on ``host:port``
    (port 0: any free port; ``port`` holds the bound one after ``start()``)."""

    def __init__(
        self,
        channels: list[str],
        host: str = LOCALHOST,
        port: int = DEFAULT_PORT,
        io_timeout_s: float = 0.2,
    ):
        if not channels:
            raise SocketcandError("a socketcand server needs at least one channel")
        self.host, self.port = host, port
        self.channels = list(channels)
        self.stats = {ch: ChannelStats() for ch in self.channels}
        self._timeout = io_timeout_s
        self._buses = {
            ch: can.Bus(interface="virtual", channel=ch, receive_own_messages=False)
            for ch in self.channels
        }
        self._clients: list[_Client] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> SocketcandServer:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind((self.host, self.port))
        except OSError as err:
            srv.close()
            for bus in self._buses.values():
                bus.shutdown()
            raise SocketcandError(
                f"cannot bind socketcand server to {self.host}:{self.port}: {err}"
            ) from None
        srv.listen(8)
        srv.settimeout(self._timeout)
        self._listener = srv
        self.port = srv.getsockname()[1]
        self._spawn(self._accept_loop, "socketcand-accept")
        for ch in self.channels:
            self._spawn(lambda ch=ch: self._bus_to_clients(ch), f"socketcand-{ch}")
        return self

    def _spawn(self, fn, name: str) -> None:
        t = threading.Thread(target=fn, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=2.0)
        with self._lock:
            for c in self._clients:
                _close_quietly(c.sock)
            self._clients.clear()
        if self._listener is not None:
            _close_quietly(self._listener)
        for bus in self._buses.values():
            bus.shutdown()

    def __enter__(self) -> SocketcandServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ threads
    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(self._timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._spawn(lambda sock=sock: self._serve(sock), "socketcand-client")

    def _read_message(
        self, sock: socket.socket, buf: bytearray, deadline: float | None
    ) -> str | None:
        """The next ``< ... >`` message, or None when the peer closed or the deadline passed."""
        while True:
            start, end = buf.find(b"<"), buf.find(b">")
            if start != -1 and end > start:
                text = buf[start : end + 1].decode("ascii", errors="replace")
                del buf[: end + 1]
                return text
            if len(buf) > 4096:
                buf.clear()  # no message in 4 kB of input: discard it
            if self._stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                return None
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk

    def _serve(self, sock: socket.socket) -> None:
        buf = bytearray()
        client: _Client | None = None
        try:
            sock.sendall(b"< hi >")
            opened = self._read_message(sock, buf, time.monotonic() + 5.0)
            parts = (opened or "").strip("<> ").split()
            if len(parts) != 2 or parts[0] != "open":
                return
            ch = parts[1]
            if ch not in self._buses:
                sock.sendall(
                    f"< error unknown channel {ch}; served: {' '.join(self.channels)} >".encode()
                )
                return
            sock.sendall(b"< ok >")
            mode = self._read_message(sock, buf, time.monotonic() + 5.0)
            if (mode or "").strip("<> ") != "rawmode":
                sock.sendall(b"< error only rawmode is served >")
                return
            sock.sendall(b"< ok >")
            client = _Client(sock, ch, time.monotonic() + FIRST_FRAME_DELAY_S)
            with self._lock:
                self._clients.append(client)
                self.stats[ch].clients += 1
            while not self._stop.is_set():
                text = self._read_message(sock, buf, None)
                if text is None:
                    return
                self._from_client(client, text)
        except OSError:
            return
        finally:
            if client is not None:
                client.alive = False
                with self._lock:
                    if client in self._clients:
                        self._clients.remove(client)
                    self.stats[client.channel].clients -= 1
            _close_quietly(sock)

    def _from_client(self, client: _Client, text: str) -> None:
        st = self.stats[client.channel]
        if text.strip("<> ").split()[:1] != ["send"]:
            return  # other commands of the protocol are not served in raw mode
        try:
            msg = parse_send(text)
        except SocketcandError as err:
            st.malformed += 1
            st.last_error = str(err)
            return
        st.frames_from_clients += 1
        if msg.arbitration_id in FEEDBACK_IDS and not msg.is_extended_id:
            st.foreign_feedback += 1
            st.last_error = (
                f"frame on feedback id 0x{msg.arbitration_id:02X} from a client: "
                "a second bank or drive answers on this channel"
            )
        self._buses[client.channel].send(msg)
        self._broadcast(client.channel, msg, exclude=client)

    def _bus_to_clients(self, ch: str) -> None:
        bus = self._buses[ch]
        while not self._stop.is_set():
            msg = bus.recv(timeout=self._timeout)
            if msg is not None:
                self._broadcast(ch, msg)

    def _broadcast(self, ch: str, msg: can.Message, exclude: _Client | None = None) -> None:
        text = format_frame(msg)
        now = time.monotonic()
        with self._lock:
            targets = [
                c
                for c in self._clients
                if c.channel == ch and c is not exclude and c.alive and now >= c.ready_at
            ]
        for c in targets:
            try:
                c.send_text(text)
                self.stats[ch].frames_to_clients += 1
            except OSError:
                c.alive = False

    def report(self) -> dict:
        return {
            "host": self.host,
            "port": self.port,
            "channels": {ch: dict(st.__dict__) for ch, st in self.stats.items()},
        }


def _close_quietly(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
