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
every client. A client's frame on a reply id of the bank's drives (``reply_ids``, passed
down by the bank from its drive family: Amber 0x91..0x97, Damiao MST ids 0x11..0x18 on
OpenArm) means another drive or a second bank answers on this channel: it is counted
(``foreign_feedback``) and reported.

A request-reply bank (Damiao: a drive answers every command frame at once) passes a
``responder``: the I/O thread hands it each frame a client sends, synchronously, and what it
returns goes out to every client of the channel (the sender included) in the same
wake-up, with no thread hop and no wait for a physics step; the replies also go onto the
in-process bus, so recorders and monitors there see them. ``inject`` sends frames the
in-process side makes (a second writer's) the same way.

No frame is dropped around the handshake: python-can's client reads ``< ok >`` of rawmode
with a single ``recv`` and fails when a frame arrived in the same read, so frames for a
client that just entered raw mode are *held* (queued, not sent) until it has provably read
that ``< ok >`` (it sent something, which a python-can client does only after reading it)
or ``FIRST_FRAME_DELAY_S`` passed (a client that only listens); then they all go out, in
order.

Serving everyone: one thread does all socket I/O (non-blocking sockets, one selector), so
no client's socket can block another's. Every client has a bounded send queue
(``SocketcandLimits.send_queue_bytes`` beyond a kernel buffer of
``socket_send_buffer_bytes``); a frame goes out to a client in one write with whatever
else is queued for it, so the cost of a frame is one copy per client and one system call
per client per wake-up, not per frame. A client whose queue overflows, or that takes no
byte for ``stall_timeout_s`` while frames wait, is stalled: its socket is closed and it is
counted (``stalled_disconnects``); nobody else waits for it. Bytes outside messages are
discarded and counted (``garbage_bytes``, see ``socketcand_protocol.CommandStream``); a
malformed command is a typed error, counted (``malformed``) with its message in
``last_error``; in raw mode it gets no reply (python-can reads every ``< error >`` as an
error frame), during the handshake it is answered ``< error ... >`` and the connection
closed. An unknown channel is answered ``< error unknown channel ... >`` and closed.

No client can crowd out another:

* Line rate per sender. A real bus carries at most its line rate (classic CAN at 1 Mbit/s:
  ~8,300 frames/s of 8 bytes, ~111-135 bits each), so each client's frames are admitted
  (onto the bus and to the others) no faster than the channel's bus (``bus``, a
  ``rob_twin.twin.bus.timing.BusTimingConfig``: ROB's classic 1 Mbit/s unless the bank passes
  the robot's, e.g. OpenArm's ``fd:1M/5M``) carries them: each frame takes its exact bit
  length (``rob_twin.twin.bus.frame_bits``, interframe space included) of that sender's
  line time, and a frame is admitted once its sender's line is free, or at most
  ``SocketcandLimits.line_burst_s`` ahead (a burst a controller's transmit queue would hold).
  Frames beyond that wait, in order, in a per-sender queue (counted ``rate_limited``), as
  arbitration would delay them; when that queue holds ``sender_queue_frames`` the server
  stops reading that sender's socket until half of them are admitted (counted
  ``reads_paused``): the rest of a flood waits in the sender's own socket buffers
  (``socket_receive_buffer_bytes`` here), TCP holds the sender back as a full transmit queue
  would, and nothing is dropped. Only the sender's own frames wait: a flood of one client
  reaches the others at most at the line rate, no other client's frames wait behind it,
  none is closed for it, and the server reads and parses no more of a flood than the line
  rate admits. A client that closes with frames still queued keeps its place until they
  are all admitted (nothing it sent is lost).
  The limit is per sender: N flooding clients may together put N line rates on a channel.
* Bounded handshakes. At most ``max_pending_handshakes`` connections (and
  ``max_pending_per_address`` from one address) may be in their handshake at once; a new
  connection beyond either closes the *oldest* one still in its handshake (answered
  ``< error ... >``, counted ``handshakes_evicted`` in ``report()["connections"]``), so
  sockets that connect and never speak cannot keep a real client out: the newest
  connection always gets its turn. ``max_clients`` still bounds all connections.

Binds to 127.0.0.1 by default; ``close()`` ends all threads.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field

import can
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import FEEDBACK_IDS
from rob_twin.twin.bus.socketcand_protocol import (
    CommandStream,
    SocketcandCommandError,
    SocketcandError,
    error_reply,
    format_frame,
    parse_command,
    parse_open,
    parse_send,
)
from rob_twin.twin.bus.timing import BusTimingConfig
from rob_twin.twin.bus.timing import default_config as default_bus

__all__ = [
    "DEFAULT_PORT",
    "LOCALHOST",
    "ChannelStats",
    "ConnectionStats",
    "SocketcandError",
    "SocketcandLimits",
    "SocketcandServer",
    "default_config",
    "format_frame",
    "parse_send",
]

LOCALHOST = "127.0.0.1"
DEFAULT_PORT = 29536  # socketcand's default port
# python-can's client reads rawmode's '< ok >' with one recv: frames for a new raw client are
# held (never dropped) until it sends something or this long passed [s]
FIRST_FRAME_DELAY_S = 0.05
# what a bank's responder is: (channel, frame a client sent) -> the replies to send at once
Responder = Callable[[str, can.Message], "list[can.Message]"]
BUS_BATCH = 256  # frames taken from a bus per wake-up of its thread
FLUSH_EVERY_MESSAGES = 256  # a client's messages handled between writes (~14 kB of replies)
PACE_TICK_S = 0.001  # [s] shortest wait for a rate-limited sender's next frames
FRAME_S_CACHE = 4096  # frame durations remembered (by id, format and data)
LISTEN_BACKLOG = 1024  # connections the kernel holds until the I/O thread accepts them


class SocketcandLimitsError(SocketcandError, InvalidValueError):
    """A socketcand limit out of its range."""

    subject = "socketcand limits"


@dataclass(frozen=True)
class SocketcandLimits:
    """Per-client bounds of the server.

    ``send_queue_bytes``: bytes queued for one client beyond its kernel buffer before it
    counts as stalled (64 kB: ~1,800 frames, 2.6 s of ROB's feedback on one bus);
    ``socket_send_buffer_bytes``: SO_SNDBUF asked for each client socket (the kernel may
    double it); ``stall_timeout_s``: [s] a client with frames waiting that takes no byte
    for this long is stalled; ``handshake_timeout_s``: [s] to get through open/rawmode;
    ``max_message_bytes``: longest message read; ``max_clients``: connections at once;
    ``poll_s``: [s] how often timeouts are checked and ``close()`` is noticed.

    Fairness (module docstring): ``sender_queue_frames``: frames of one client waiting for its
    line rate (1..1,000,000; 8,192: ~1 s of 8-byte frames at 1 Mbit/s); at that many the
    sender's socket is not read until half are admitted; ``socket_receive_buffer_bytes``:
    SO_RCVBUF asked for each client socket (what a paused sender may have in flight);
    ``line_burst_s``: [s] how far ahead of its line time a sender's frames are admitted at
    once (0..1; 1.5 ms: about ten 8-byte frames at 1 Mbit/s, a SocketCAN queue of 10;
    0: strictly one frame after another); ``max_pending_handshakes``: connections in their
    handshake at once (1..100,000), a new one beyond closes the oldest;
    ``max_pending_per_address``: the same from one source address (1..100,000; on 127.0.0.1
    every local client has the same address, so keep it below ``max_pending_handshakes``
    only where clients come from several addresses).
    """

    send_queue_bytes: int = 64 * 1024
    socket_send_buffer_bytes: int = 64 * 1024
    socket_receive_buffer_bytes: int = 64 * 1024
    stall_timeout_s: float = 2.0
    handshake_timeout_s: float = 5.0
    max_message_bytes: int = 256
    max_clients: int = 1024
    poll_s: float = 0.2
    sender_queue_frames: int = 8192
    line_burst_s: float = 0.0015
    max_pending_handshakes: int = 64
    max_pending_per_address: int = 64

    def __post_init__(self) -> None:
        for name, lo, hi in (
            ("send_queue_bytes", 1024, 1 << 30),
            ("socket_send_buffer_bytes", 1024, 1 << 30),
            ("socket_receive_buffer_bytes", 1024, 1 << 30),
            ("max_message_bytes", 64, 65536),
            ("max_clients", 1, 100_000),
            ("sender_queue_frames", 1, 1_000_000),
            ("max_pending_handshakes", 1, 100_000),
            ("max_pending_per_address", 1, 100_000),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise SocketcandLimitsError(name, v, f"an integer in {lo}..{hi}")
        for name, lo, hi in (
            ("stall_timeout_s", 0.01, 3600.0),
            ("handshake_timeout_s", 0.01, 3600.0),
            ("poll_s", 0.001, 10.0),
            ("line_burst_s", 0.0, 1.0),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi:
                raise SocketcandLimitsError(name, v, f"seconds in {lo}..{hi}")


def default_config() -> SocketcandLimits:
    """The server's limits for ROB (see ``SocketcandLimits``)."""
    return SocketcandLimits()


@dataclass
class ChannelStats:
    frames_from_clients: int = 0
    frames_to_clients: int = 0  # frames queued for clients (one per client per frame)
    malformed: int = 0
    foreign_feedback: int = 0  # reply-id frames from a client: a second bank or drive
    replies: int = 0  # frames the responder answered with (request-reply banks)
    responder_errors: int = 0  # frames the responder failed on (its error in last_error)
    clients: int = 0
    stalled_disconnects: int = 0  # clients closed because they stopped reading
    garbage_bytes: int = 0  # bytes outside any message, discarded
    rate_limited: int = 0  # messages from clients that waited for their sender's line rate
    reads_paused: int = 0  # times a sender's socket went unread: its queue was full
    last_error: str = ""


@dataclass
class ConnectionStats:
    """Connections of the whole server (before a channel is known)."""

    accepted: int = 0
    refused_full: int = 0  # refused: ``max_clients`` connections open
    handshakes_evicted: int = 0  # closed in their handshake to make room for a newer one
    handshake_timeouts: int = 0  # closed: handshake not finished in ``handshake_timeout_s``


@dataclass(eq=False)
class _Client:
    """One connection; its ``out`` buffer is guarded by the server's lock."""

    sock: socket.socket
    stream: CommandStream
    deadline: float  # end of the handshake [s, monotonic]
    state: str = "open"  # open -> rawmode -> raw
    channel: str = ""
    hold_until: float = 0.0  # frames wait in ``held`` until then, or until the client speaks
    held: bytearray = field(default_factory=bytearray)  # frames for it not yet to be sent
    out: bytearray = field(default_factory=bytearray)
    last_progress: float = 0.0  # when it last took a byte, or its queue was empty
    stalled: str = ""  # why it is to be closed as stalled
    writing: bool = False  # registered for write readiness
    paused: bool = False  # its socket is not read: its queue for the line is full
    closed: bool = False
    address: str = ""  # the peer's IP address
    queue: deque = field(default_factory=deque)  # its messages waiting for its line time
    line_free_at: float = 0.0  # when its line is free for its next frame [s, monotonic]
    eof: bool = False  # it closed its side: served until its queue is admitted, then closed
    unwritable: bool = False  # a send to it failed (it reset): nothing more goes to it


class SocketcandServer:
    """Serves ``channels`` (names of in-process virtual buses) on ``host:port``
    (port 0: any free port; ``port`` holds the bound one after ``start()``).

    reply_ids: standard ids only the bank's drives send on (a client's frame there is
    counted as ``foreign_feedback``; default: Amber's feedback ids); responder: called in
    the I/O thread with every frame a client sends, returns the replies to send at once
    (None: the bank reads the in-process bus instead); bus: the channels' bus, whose bit
    rates and frame format bound each sender's rate (None: classic CAN at 1 Mbit/s)."""

    def __init__(
        self,
        channels: list[str],
        host: str = LOCALHOST,
        port: int = DEFAULT_PORT,
        limits: SocketcandLimits | None = None,
        reply_ids: Collection[int] = FEEDBACK_IDS,
        responder: Responder | None = None,
        bus: BusTimingConfig | None = None,
    ):
        if not channels:
            raise SocketcandError("a socketcand server needs at least one channel")
        self.limits = limits or default_config()
        self.host, self.port = host, port
        self.channels = list(channels)
        self.reply_ids = frozenset(reply_ids)
        self.responder = responder
        self.stats = {ch: ChannelStats() for ch in self.channels}
        self.connections = ConnectionStats()
        self.bus = bus or default_bus()
        self._frame_s: dict[tuple, float] = {}  # frame durations [s], loop thread only
        self._buses = {
            ch: can.Bus(interface="virtual", channel=ch, receive_own_messages=False)
            for ch in self.channels
        }
        self._lock = threading.Lock()
        self._conns: set[_Client] = set()  # loop thread only
        self._raw: dict[str, list[_Client]] = {ch: [] for ch in self.channels}  # under _lock
        self._dirty: set[_Client] = set()  # clients with new output, under _lock
        self._held: set[_Client] = set()  # raw clients whose first frames are held, under _lock
        # loop thread only: connections in their handshake, oldest first (all, and by address)
        self._pending: OrderedDict[_Client, bool] = OrderedDict()
        self._pending_by_address: dict[str, OrderedDict[_Client, bool]] = {}
        self._pacing: set[_Client] = set()  # raw clients with frames waiting for line time
        self._wake_pending = False
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None
        self.failure = ""  # set when the I/O loop stopped on an unexpected error
        self._sel: selectors.BaseSelector | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None

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
        srv.listen(LISTEN_BACKLOG)
        srv.setblocking(False)
        self._listener = srv
        self.port = srv.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(srv, selectors.EVENT_READ, "accept")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._spawn(self._serve_until_closed, "socketcand-io")
        for ch in self.channels:
            self._spawn(lambda ch=ch: self._bus_to_clients(ch), f"socketcand-{ch}")
        return self

    def _spawn(self, fn, name: str) -> None:
        t = threading.Thread(target=fn, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def close(self) -> None:
        self._stop.set()
        self._wake()
        for t in self._threads:
            t.join(timeout=2.0)
        for c in list(self._conns):
            self._drop(c)
        for s in (self._listener, self._wake_r, self._wake_w):
            if s is not None:
                _close_quietly(s)
        if self._sel is not None:
            self._sel.close()
        for bus in self._buses.values():
            bus.shutdown()

    def __enter__(self) -> SocketcandServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the I/O thread
    def _serve_until_closed(self) -> None:
        """The I/O loop; an error it did not expect latches in ``failure`` (reported), and
        every client is closed: the server stops serving rather than serve half."""
        try:
            self._io_loop()
        except Exception as err:  # noqa: BLE001 - latched and reported, never retried
            self.failure = f"socketcand I/O loop stopped: {type(err).__name__}: {err}"
            for c in list(self._conns):
                self._drop(c)
            if self._listener is not None:
                _close_quietly(self._listener)

    def _io_loop(self) -> None:
        assert self._sel is not None
        next_sweep = time.monotonic() + self.limits.poll_s
        while not self._stop.is_set():
            for key, mask in self._sel.select(timeout=self._select_timeout()):
                if key.data == "accept":
                    self._accept()
                elif key.data == "wake":
                    self._drain_wake()
                else:
                    c: _Client = key.data
                    if mask & selectors.EVENT_READ and not c.closed:
                        self._read(c)
                    if mask & selectors.EVENT_WRITE and not c.closed:
                        self._flush(c)
            if self._pacing:
                self._pace(time.monotonic())
            with self._lock:
                if self._held:
                    self._release_held(time.monotonic())
                dirty, self._dirty = self._dirty, set()
                self._wake_pending = False
            for c in dirty:
                if not c.closed:
                    self._flush(c)
            if (now := time.monotonic()) >= next_sweep:
                next_sweep = now + self.limits.poll_s
                self._sweep(now)

    def _select_timeout(self) -> float:
        """Until the next sweep, or sooner when a held client's hold ends or a rate-limited
        sender's next frame is due (at least ``PACE_TICK_S``)."""
        timeout = self.limits.poll_s
        if self._pacing:
            due = min(c.line_free_at for c in self._pacing) - self.limits.line_burst_s
            timeout = min(timeout, max(PACE_TICK_S, due - time.monotonic()))
        with self._lock:
            if not self._held:
                return timeout
            first = min(c.hold_until for c in self._held)
        return min(timeout, max(0.0, first - time.monotonic()))

    def _release_held(self, now: float, client: _Client | None = None) -> None:
        """Under ``_lock``: queue what was held for ``client`` (None: every client whose hold
        ended by ``now``) behind what it already has, in order."""
        for c in [client] if client is not None else list(self._held):
            if client is None and c.hold_until > now:
                continue
            self._held.discard(c)
            c.hold_until = 0.0
            if c.held:
                if not c.out:
                    c.last_progress = now
                c.out += c.held
                c.held.clear()
                self._dirty.add(c)

    def _accept(self) -> None:
        assert self._listener is not None and self._sel is not None
        while True:
            try:
                sock, peer = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            address = str(peer[0])
            self._make_room_for_handshake(address)
            if len(self._conns) >= self.limits.max_clients:
                self.connections.refused_full += 1
                _refuse(sock, f"too many clients; valid: at most {self.limits.max_clients}")
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_SNDBUF, self.limits.socket_send_buffer_bytes
            )
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_RCVBUF, self.limits.socket_receive_buffer_bytes
            )
            now = time.monotonic()
            c = _Client(
                sock,
                CommandStream(self.limits.max_message_bytes),
                deadline=now + self.limits.handshake_timeout_s,
                last_progress=now,
                address=address,
            )
            self.connections.accepted += 1
            self._conns.add(c)
            self._pending[c] = True
            self._pending_by_address.setdefault(address, OrderedDict())[c] = True
            self._sel.register(sock, selectors.EVENT_READ, c)
            self._reply(c, b"< hi >")

    def _make_room_for_handshake(self, address: str) -> None:
        """Before a new connection from ``address``: close the oldest connection still in
        its handshake when that address, or everyone, has as many as allowed."""
        lim = self.limits
        mine = self._pending_by_address.get(address)
        if mine is not None and len(mine) >= lim.max_pending_per_address:
            oldest = next(iter(mine))
            why = f"{len(mine)} connections from {address} in their handshake"
            limit = f"at most {lim.max_pending_per_address} from one address"
        elif len(self._pending) >= lim.max_pending_handshakes:
            oldest = next(iter(self._pending))
            why = f"{len(self._pending)} connections in their handshake"
            limit = f"at most {lim.max_pending_handshakes}"
        else:
            return
        self.connections.handshakes_evicted += 1
        self._refuse(oldest, f"closed for a newer connection: {why}; valid: {limit}")

    def _handshake_done(self, c: _Client) -> None:
        """``c`` is no longer in its handshake (raw mode, or closed)."""
        if self._pending.pop(c, False):
            mine = self._pending_by_address[c.address]
            del mine[c]
            if not mine:
                del self._pending_by_address[c.address]

    def _read(self, c: _Client) -> None:
        try:
            data = c.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._end_of_input(c)  # the peer closed (or reset) its side
            return
        self._take(c, data)

    def _read_rest(self, c: _Client) -> None:
        """A send to ``c`` failed: it closed with our replies unread, which resets the
        connection. What it sent before is still in our receive buffer, and a bus carries
        every frame put on it before its sender closed (LeRobot's disconnect sends its
        disable frames, then closes), so read it all and take it, then end its input."""
        c.unwritable = True
        with self._lock:
            c.out.clear()
        chunks = []
        while True:
            try:
                data = c.sock.recv(65536)
            except OSError:  # BlockingIOError included: nothing more now
                break
            if not data:
                break
            chunks.append(data)
        if chunks:
            self._take(c, b"".join(chunks))
        if not c.closed:
            self._end_of_input(c)

    def _take(self, c: _Client, data: bytes) -> None:
        """Bytes ``c`` sent: its handshake, or frames behind its line-rate queue."""
        if c.state == "raw" and c.hold_until:
            with self._lock:  # it speaks, so it has read rawmode's '< ok >': send what waits
                self._release_held(time.monotonic(), c)
        before = c.stream.discarded_bytes
        messages = c.stream.feed(data)
        if c.channel and c.stream.discarded_bytes != before:
            self.stats[c.channel].garbage_bytes += c.stream.discarded_bytes - before
        k = 0
        while k < len(messages) and c.state != "raw":
            if c.closed:
                return
            self._handshake(c, messages[k])
            k += 1
        if k < len(messages) and not c.closed:
            self._queue(c, messages[k:] if k else messages)

    def _queue(self, c: _Client, messages: list[str]) -> None:
        """A raw client's messages behind what it has waiting, admitted as far as its line
        time allows; with ``sender_queue_frames`` still waiting its socket is not read until
        half of them are admitted (``_admit``)."""
        st = self.stats[c.channel]
        now = time.monotonic()
        if not c.queue:  # its line was idle until now: no credit for the idle time
            c.line_free_at = max(c.line_free_at, now)
        c.queue.extend(messages)
        self._admit(c, now)
        st.rate_limited += min(len(messages), len(c.queue))  # the new ones still waiting
        if not c.closed and not c.paused and len(c.queue) >= self.limits.sender_queue_frames:
            c.paused = True
            st.reads_paused += 1
            st.last_error = (
                f"a client's socket not read for a while: its {len(c.queue)} frames waiting "
                f"for the line ({self.bus.label()}) are a full queue"
            )
            self._set_events(c)

    def _admit(self, c: _Client, now: float) -> None:
        """Handle ``c``'s waiting messages in order while its line is free (or at most
        ``line_burst_s`` ahead); each frame takes its duration on the bus of line time."""
        limit = now + self.limits.line_burst_s
        n = 0
        while c.queue and c.line_free_at <= limit and not c.closed:
            self._from_client(c, c.queue.popleft())
            n += 1
            if n % FLUSH_EVERY_MESSAGES == 0:
                self._flush_dirty()
        if c.paused and len(c.queue) <= self.limits.sender_queue_frames // 2:
            c.paused = False  # read it again
            self._set_events(c)
        if c.queue and not c.closed:
            self._pacing.add(c)
            return
        self._pacing.discard(c)
        if c.eof:
            self._drop(c)  # everything it sent is on the bus: now it is closed

    def _pace(self, now: float) -> None:
        """Admit the frames of every rate-limited sender whose line time has come."""
        limit = now + self.limits.line_burst_s
        for c in list(self._pacing):
            if c.line_free_at <= limit:
                self._admit(c, now)

    def _end_of_input(self, c: _Client) -> None:
        """The peer closed (or reset) its side: closed now, or, with frames still waiting
        for their line time, once they are admitted (it gets nothing more)."""
        if not c.queue:
            self._drop(c)
            return
        c.eof = True
        with self._lock:
            c.out.clear()
            c.held.clear()
            self._held.discard(c)
        self._set_events(c)  # its input ended and nothing goes to it: watched no more

    def _flush_dirty(self) -> None:
        """Write what was queued for each client since the last write, mid-read: a
        responder's replies to one 64 kB read of commands (~1,800 frames) are more than
        ``send_queue_bytes``, and queued behind the whole read they made a client that reads
        everything look stalled."""
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        for c in dirty:
            if not c.closed:
                self._flush(c)

    def _handshake(self, c: _Client, text: str) -> None:
        try:
            cmd = parse_command(text)
            if c.state == "open":
                ch = parse_open(cmd)
                if ch not in self._buses:
                    self._refuse(c, f"unknown channel {ch}; served: {' '.join(self.channels)}")
                    return
                c.channel, c.state = ch, "rawmode"
                self._reply(c, b"< ok >")
            elif cmd.verb == "rawmode":
                c.state = "raw"
                self._handshake_done(c)
                with self._lock:  # a member from now on: frames wait in ``held`` (not ``out``)
                    c.hold_until = time.monotonic() + FIRST_FRAME_DELAY_S
                    self._held.add(c)
                    self._raw[c.channel].append(c)
                    self.stats[c.channel].clients += 1
                self._reply(c, b"< ok >")  # so this goes out before any frame
            else:
                self._refuse(c, "only rawmode is served")
        except SocketcandCommandError as err:
            self._refuse(c, str(err))

    def _from_client(self, client: _Client, text: str) -> None:
        """One message of a client in raw mode: a frame onto the bus and to the others."""
        st = self.stats[client.channel]
        try:
            if parse_command(text).verb == "echo":
                self._reply(client, b"< echo >")
                return
            msg = parse_send(text)
        except SocketcandCommandError as err:
            st.malformed += 1
            st.last_error = str(err)
            return
        st.frames_from_clients += 1
        client.line_free_at += self._frame_seconds(msg)
        if msg.arbitration_id in self.reply_ids and not msg.is_extended_id:
            st.foreign_feedback += 1
            st.last_error = (
                f"frame on reply id 0x{msg.arbitration_id:02X} from a client: "
                "a second bank or drive answers on this channel"
            )
        try:
            self._buses[client.channel].send(msg)
        except can.CanError as err:
            st.last_error = f"frame from a client not put on {client.channel}: {err}"
            return
        self._broadcast(client.channel, format_frame(msg).encode("ascii"), 1, exclude=client)
        if self.responder is not None:
            self._respond(client.channel, msg)

    def _frame_seconds(self, msg: can.Message) -> float:
        """[s] ``msg`` on the channels' bus, interframe space included (remembered)."""
        key = (msg.arbitration_id, msg.is_extended_id, msg.is_remote_frame, bytes(msg.data))
        seconds = self._frame_s.get(key)
        if seconds is None:
            if len(self._frame_s) >= FRAME_S_CACHE:
                self._frame_s.clear()
            seconds = self._frame_s[key] = self.bus.frame_seconds(msg)
        return seconds

    def _respond(self, ch: str, msg: can.Message) -> None:
        """The responder's replies to ``msg``: onto the in-process bus and to every client."""
        st = self.stats[ch]
        assert self.responder is not None
        try:
            replies = self.responder(ch, msg)
        except Exception as err:  # noqa: BLE001 - counted and reported; the server serves on
            st.responder_errors += 1
            st.last_error = f"responder failed on id 0x{msg.arbitration_id:X}: {err!r}"
            return
        if replies:
            self._deliver(ch, replies)
            st.replies += len(replies)

    def inject(self, channel: str, frames: list[can.Message]) -> None:
        """Frames the in-process side sends (any thread): onto the in-process bus (not back
        to this server) and to every client of ``channel`` at once."""
        if frames:
            self._deliver(channel, frames)
            self._wake()

    def _deliver(self, ch: str, frames: list[can.Message]) -> None:
        bus = self._buses[ch]
        for m in frames:
            try:
                bus.send(m)
            except can.CanError as err:
                self.stats[ch].last_error = f"frame not put on {ch}: {err}"
        text = "".join(format_frame(m) for m in frames)
        self._broadcast(ch, text.encode("ascii"), len(frames))

    def _flush(self, c: _Client) -> None:
        """Write what is queued for ``c`` (one system call); closes it when it is stalled."""
        assert self._sel is not None
        if c.eof or c.unwritable:  # it closed its side: nothing more goes to it
            with self._lock:
                c.out.clear()
            return
        with self._lock:
            stalled = c.stalled
            if not stalled and c.out:
                try:
                    n = c.sock.send(c.out)
                except (BlockingIOError, InterruptedError):
                    n = 0
                except OSError:
                    n = -1
                if n > 0:
                    del c.out[:n]
                    c.last_progress = time.monotonic()
            else:
                n = 0
            pending = bool(c.out)
        if stalled:
            self._close_stalled(c, stalled)
        elif n < 0:
            self._read_rest(c)
        elif pending != c.writing:
            c.writing = pending
            self._set_events(c)

    def _set_events(self, c: _Client) -> None:
        """Register ``c`` for what is to be watched: reading unless it is paused (or its
        input ended), writing while bytes wait for it; neither: not registered."""
        if self._sel is None or c.closed:
            return
        events = (0 if c.paused or c.eof else selectors.EVENT_READ) | (
            selectors.EVENT_WRITE if c.writing and not c.eof else 0
        )
        try:
            if not events:
                self._sel.unregister(c.sock)
            else:
                try:
                    self._sel.modify(c.sock, events, c)
                except KeyError:
                    self._sel.register(c.sock, events, c)
        except (KeyError, ValueError):
            pass

    def _sweep(self, now: float) -> None:
        """Handshakes that ran out of time; clients that took nothing for too long."""
        for c in list(self._conns):
            if c.state != "raw" and now > c.deadline:
                self.connections.handshake_timeouts += 1
                self._refuse(c, f"handshake not finished in {self.limits.handshake_timeout_s} s")
            elif c.out and now - c.last_progress > self.limits.stall_timeout_s:
                with self._lock:
                    c.stalled = c.stalled or (
                        f"took no byte for {self.limits.stall_timeout_s} s with "
                        f"{len(c.out)} bytes queued"
                    )
                self._flush(c)

    def _close_stalled(self, c: _Client, why: str) -> None:
        st = self.stats[c.channel]
        st.stalled_disconnects += 1
        st.last_error = f"stalled client closed: {why}"
        self._drop(c)

    def _reply(self, c: _Client, data: bytes) -> None:
        with self._lock:
            if not c.out:
                c.last_progress = time.monotonic()
            c.out += data
        self._flush(c)

    def _refuse(self, c: _Client, reason: str) -> None:
        """Answer ``< error REASON >`` (best effort) and close."""
        with self._lock:
            c.out.clear()
        _refuse(c.sock, reason, close=False)
        self._drop(c)

    def _drop(self, c: _Client) -> None:
        if c.closed:
            return
        c.closed = True
        self._conns.discard(c)
        self._handshake_done(c)
        self._pacing.discard(c)
        c.queue.clear()
        with self._lock:
            if c in self._raw.get(c.channel, ()):
                self._raw[c.channel].remove(c)
                self.stats[c.channel].clients -= 1
            self._held.discard(c)
            c.out.clear()
            c.held.clear()
        if self._sel is not None:
            try:
                self._sel.unregister(c.sock)
            except (KeyError, ValueError):
                pass
        _close_quietly(c.sock)

    # ------------------------------------------------------------------ the bus threads
    def _bus_to_clients(self, ch: str) -> None:
        bus = self._buses[ch]
        while not self._stop.is_set():
            msg = bus.recv(timeout=self.limits.poll_s)
            if msg is None:
                continue
            batch = [msg]
            while len(batch) < BUS_BATCH and (more := bus.recv(timeout=0)) is not None:
                batch.append(more)
            text = "".join(format_frame(m) for m in batch)
            self._broadcast(ch, text.encode("ascii"), len(batch))
            self._wake()

    def _broadcast(self, ch: str, data: bytes, frames: int, exclude: _Client | None = None) -> None:
        """Queue ``data`` (``frames`` frames) for every ready client of ``ch``; a client
        whose queue would pass ``send_queue_bytes`` is marked stalled instead."""
        now = time.monotonic()
        limit = self.limits.send_queue_bytes
        with self._lock:
            queued = 0
            for c in self._raw[ch]:
                if c is exclude or c.stalled or c.eof:
                    continue
                if len(c.out) + len(c.held) + len(data) > limit:
                    c.stalled = f"send queue full ({len(c.out) + len(c.held)} bytes, limit {limit})"
                elif c.hold_until:  # not yet known to have read rawmode's '< ok >'
                    c.held += data
                    queued += 1
                    continue
                elif not c.out:
                    c.last_progress = now
                    c.out += data
                    queued += 1
                else:
                    c.out += data
                    queued += 1
                self._dirty.add(c)
            self.stats[ch].frames_to_clients += queued * frames

    def _wake(self) -> None:
        with self._lock:
            if self._wake_pending:
                return
            self._wake_pending = True
        if self._wake_w is not None:
            try:
                self._wake_w.send(b"\0")
            except OSError:
                pass  # the loop is awake already (buffer full) or closed

    def _drain_wake(self) -> None:
        assert self._wake_r is not None
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    def report(self) -> dict:
        return {
            "host": self.host,
            "port": self.port,
            "failure": self.failure,
            "limits": asdict(self.limits),
            "bus": self.bus.label(),
            "connections": asdict(self.connections),
            "channels": {ch: dict(st.__dict__) for ch, st in self.stats.items()},
        }


def _refuse(sock: socket.socket, reason: str, close: bool = True) -> None:
    try:
        sock.send(error_reply(reason))
    except OSError:
        pass
    if close:
        _close_quietly(sock)


def _close_quietly(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
