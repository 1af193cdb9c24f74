"""One server, one port: the page, its websocket (``/ws``) and the telemetry stream.

Runs an asyncio event loop (``websockets``) in its own thread. Static assets are served
from this package's ``static/`` folder by ``process_request`` (no CDN, nothing fetched
at run time). Per client: a hello within ``hello_timeout_s``, frames of at most
``MAX_FRAME_BYTES`` (larger ones are dropped and counted; above ``max_message_bytes``
the library closes the socket), a token-bucket rate limit (excess frames dropped and
counted), a keepalive ping (a client that stops reading is closed after
``ping_timeout_s``; for the operator that is a socket loss: both hands brake).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import mimetypes
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path

from rob_twin.twin.teleop.controller import TeleopController
from rob_twin.twin.teleop.messages import (
    MAX_FRAME_BYTES,
    Hello,
    InputFrame,
    ResetRequest,
    TeleopMessageError,
    ViewRequest,
    encode,
    parse_message,
)
from rob_twin.twin.teleop.progress import ServerProgress
from rob_twin.twin.teleop.telemetry import TelemetryHub, TelemetrySource
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

STATIC_DIR = Path(__file__).parent / "static"
ROUTES = {"/": "index.html", "/watch": "watch.html"}


@dataclass(frozen=True)
class ServerConfig:
    """host/port: where to bind (port 0: any free port); rate_hz/burst: per-client input
    token bucket [frames/s, frames]; telemetry_hz [Hz]; poll_hz: staleness checks [Hz];
    hello_timeout_s, ping_interval_s, ping_timeout_s [s]; max_message_bytes: the library's
    hard cap (closes the socket); send_buffer_bytes: a small kernel send buffer makes a
    slow client's writes block early, so it gets fresh values rather than a backlog."""

    host: str = "127.0.0.1"
    port: int = 8765
    rate_hz: float = 150.0
    burst: int = 30
    telemetry_hz: float = 30.0
    poll_hz: float = 200.0
    hello_timeout_s: float = 2.0
    ping_interval_s: float = 1.0
    ping_timeout_s: float = 2.0
    max_message_bytes: int = 65536
    send_buffer_bytes: int | None = None  # per-client kernel send buffer (None: the OS default)


def default_config() -> ServerConfig:
    return ServerConfig()


class TokenBucket:
    """rate_hz [tokens/s], burst [tokens]; ``now_s``: the start time on the caller's clock [s]."""

    def __init__(self, rate_hz: float, burst: int, now_s: float):
        self.rate, self.burst = rate_hz, float(burst)
        self.tokens, self.t = float(burst), now_s

    def allow(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.t) * self.rate)
        self.t = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


def _static_response(path: str) -> Response:
    name = ROUTES.get(path) or (path[len("/static/") :] if path.startswith("/static/") else None)
    files = {p.name: p for p in STATIC_DIR.iterdir() if p.is_file()} if STATIC_DIR.is_dir() else {}
    if name not in files:
        body = f"not found: {path}; pages: / (operator), /watch (watcher)\n".encode()
        return Response(
            404,
            "Not Found",
            Headers(
                {"Content-Type": "text/plain; charset=utf-8", "Content-Length": str(len(body))}
            ),
            body,
        )
    body = files[name].read_bytes()
    ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if name.endswith(".js"):
        ctype = "text/javascript"
    if ctype.startswith("text/"):
        ctype += "; charset=utf-8"
    return Response(
        200,
        HTTPStatus.OK.phrase,
        Headers(
            {
                "Content-Type": ctype,
                "Content-Length": str(len(body)),
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
            }
        ),
        body,
    )


class TeleopServer:
    """The asyncio server thread; ``start()`` returns once the port is bound."""

    def __init__(
        self,
        controller: TeleopController,
        source: TelemetrySource,
        config: ServerConfig | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ):
        self.config = config or default_config()
        self.controller = controller
        self.source = source
        self.ssl_context = ssl_context
        self.hub: TelemetryHub | None = None
        self.counts = controller.counts  # server-side drops share the controller's counters
        self.port: int | None = None
        self._ids = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.telemetry_log: list[float] = []  # publish stamps [s] (monotonic)
        self.progress = ServerProgress()  # what this thread has handled, for others to wait on
        self.video = None  # a rob_twin.twin.teleop.video.LiveVideo (set by the app) or None
        # cameras some client watches: replaced on this thread, read by the video bridge thread
        self.wanted_cameras: frozenset[str] = frozenset()
        self.video_log: list[tuple[str, int, int]] = []  # (camera, seq, clients given it)

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        host = self.config.host if self.config.host not in ("0.0.0.0", "::") else "127.0.0.1"
        return f"{scheme}://{host}:{self.port}/"

    @property
    def ws_url(self) -> str:
        return self.url.replace("http", "ws", 1) + "ws"

    def start(self, timeout_s: float = 10.0) -> None:
        self._thread = threading.Thread(target=self._run, name="teleop-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError(f"teleop server did not start within {timeout_s} s")
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(5.0)

    def call(self, fn) -> None:
        """Run ``fn()`` on the server's thread (thread-safe, does not wait)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(fn)

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as err:  # reported to start()'s caller
            self._error = err
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self.hub = TelemetryHub()
        c = self.config
        async with serve(
            self._handler,
            c.host,
            c.port,
            ssl=self.ssl_context,
            process_request=self._process_request,
            compression=None,
            max_size=c.max_message_bytes,
            ping_interval=c.ping_interval_s,
            ping_timeout=c.ping_timeout_s,
            close_timeout=1.0,
        ) as server:
            self.port = server.sockets[0].getsockname()[1]
            tasks = [
                asyncio.create_task(self._poll_task()),
                asyncio.create_task(self._telemetry_task()),
            ]
            self._ready.set()
            await self._stop.wait()
            for t in tasks:
                t.cancel()

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/ws":
            return None
        return _static_response(path)

    async def _poll_task(self) -> None:
        period = 1.0 / self.config.poll_hz
        while True:
            self.controller.poll()
            self._sync_roles()
            self.progress.poll_done()
            await asyncio.sleep(period)

    def _sync_roles(self) -> None:
        """Tell each client whose role changed since it was last told (a ``role`` message):
        the operator lease is the one source of the page's role badge, as it is of the
        ``not_operator`` counter, so a lapsed lease shows as "watcher", not "operator"."""
        if self.hub is None:
            return
        for client, slot in list(self.hub.slots.items()):
            role = "operator" if self.controller.is_operator(client) else "watcher"
            if slot.role is None or slot.role == role:
                slot.role = role
                continue
            reason = (
                "the operator lease lapsed: no input from this page for more than "
                f"{self.controller.config.operator_ttl_s:g} s; ask again (hello) to drive"
                if slot.role == "operator"
                else ""
            )
            slot.role = role
            self.counts[f"role_changes_to_{role}"] += 1
            slot.put("role", encode("role", client=client, role=role, reason=reason))

    async def _telemetry_task(self) -> None:
        period = 1.0 / self.config.telemetry_hz
        deadline = time.monotonic()
        while True:
            text = self.source.telemetry()
            self.telemetry_log.append(time.monotonic())
            self.hub.fanout("telemetry", text)
            deadline += period
            await asyncio.sleep(max(0.0, deadline - time.monotonic()))

    def publish_video(self, frame) -> None:
        """Hand a ``VideoFrame`` to the clients of its camera (any thread; never blocks:
        the text is made here, the fan-out runs on the server's loop)."""
        text = encode(
            "camera",
            camera=frame.camera,
            seq=frame.seq,
            state_stamp_ms=round(frame.state_stamp_s * 1e3, 3),
            rendered_stamp_ms=round(frame.rendered_stamp_s * 1e3, 3),
            sim_time_s=frame.sim_time_s,
            render_ms=round(frame.render_ms, 2),
            width=frame.width,
            height=frame.height,
            jpeg_base64=base64.b64encode(frame.jpeg).decode(),
        )

        def fan() -> None:
            if self.hub is not None:
                n = self.hub.fanout_camera(frame.camera, text)
                self.video_log.append((frame.camera, frame.seq, n))
                del self.video_log[:-1000]

        self.call(fan)

    def _set_view(self, slot, camera: str | None) -> str:
        """Point ``slot`` at ``camera`` (None: no video); returns "" or why not."""
        if camera is not None:
            if self.video is None:
                return "video is off on this server"
            try:
                camera = self.video.resolve(camera)
            except ValueError as err:
                return str(err)
        slot.camera = camera
        self.wanted_cameras = self.hub.wanted_cameras()
        return ""

    async def _sender(self, ws: ServerConnection, slot) -> None:
        try:
            while True:
                for text in await slot.take():
                    await ws.send(text)
                    slot.sent += 1
        except ConnectionClosed:
            pass

    async def _handler(self, ws: ServerConnection) -> None:
        client = f"client-{next(self._ids)}"
        counts = self.counts
        if self.config.send_buffer_bytes:
            sock = ws.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.config.send_buffer_bytes)
        try:
            first = await asyncio.wait_for(ws.recv(), self.config.hello_timeout_s)
            hello = parse_message(first)
            if not isinstance(hello, Hello):
                raise TeleopMessageError("type", "input before hello", "hello first")
        except (TimeoutError, TeleopMessageError) as err:
            counts["refused_handshakes"] += 1
            await ws.close(1008, f"expected a hello frame: {err}"[:120])
            return
        except ConnectionClosed:
            return
        role = self.controller.hello(client, hello)
        try:
            await ws.send(
                encode(
                    "welcome",
                    client=client,
                    role=role,
                    session=hello.session,
                    cameras=list(self.video.cameras) if self.video else [],
                    camera=self.video.resolve(None) if self.video and self.video.cameras else None,
                    limits={
                        "max_frame_bytes": MAX_FRAME_BYTES,
                        "rate_hz": self.config.rate_hz,
                        "input_timeout_s": self.controller.config.input_timeout_s,
                        "operator_ttl_s": self.controller.config.operator_ttl_s,
                    },
                )
            )
        except ConnectionClosed:
            self.controller.disconnect(client)
            return
        slot = self.hub.add(client)  # no video until the client asks (``view``)
        slot.role = role
        sender = asyncio.create_task(self._sender(ws, slot))
        now = (
            self.controller.now
        )  # stamps, staleness and the rate limit share the controller's clock
        bucket = TokenBucket(self.config.rate_hz, self.config.burst, now())
        try:
            async for raw in ws:
                msg = self._handle_message(client, raw, now(), bucket, slot)
                if isinstance(msg, InputFrame):
                    self.progress.message_handled(msg.session, msg.seq)
                else:
                    self.progress.message_handled()
        except ConnectionClosed:
            pass
        finally:
            sender.cancel()
            self.hub.remove(client)
            self.wanted_cameras = self.hub.wanted_cameras()
            self.controller.disconnect(client)
            self.progress.client_closed(client)

    def _handle_message(self, client: str, raw, received: float, bucket: TokenBucket, slot):
        """One inbound message: rate limit, size, parse, apply; returns the parsed message
        (None when it was dropped)."""
        counts = self.counts
        if not bucket.allow(received):
            counts["rate_dropped"] += 1
            return None
        if len(raw) > MAX_FRAME_BYTES:
            counts["oversize_dropped"] += 1
            slot.put(
                "error", encode("error", reason=f"frame of {len(raw)} bytes > {MAX_FRAME_BYTES}")
            )
            return None
        try:
            msg = parse_message(raw)
        except TeleopMessageError as err:
            counts["malformed"] += 1
            slot.put("error", encode("error", reason=str(err)))
            return None
        if isinstance(msg, InputFrame):
            why = self.controller.handle_input(client, msg, received)
            if why:
                slot.put("refused", encode("refused", reason=why))
                self._sync_roles()  # a lapsed lease: the page learns it with the refusal
        elif isinstance(msg, Hello):
            role = self.controller.hello(client, msg)
            slot.role = role
            slot.put("welcome", encode("welcome", client=client, role=role, session=msg.session))
        elif isinstance(msg, ViewRequest):
            why = self._set_view(slot, msg.camera)
            if why:
                counts["view_refused"] += 1
                slot.put("error", encode("error", reason=why))
            else:
                slot.put("view", encode("view", camera=slot.camera))
        elif isinstance(msg, ResetRequest):
            why = self.controller.reset(client, msg)
            slot.put("reset", encode("reset", arm=msg.arm.value, ok=not why, reason=why))
        return msg
