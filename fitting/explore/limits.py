"""What the explorer's server accepts from a client, and for how long it waits (issue 69).

The page sends small JSON bodies (a control change, an action, a fit window: under 1 KB), one short
WebSocket message per frame (``{"type":"ack"}``, 14 bytes) and trajectory uploads (streamed to disk,
at most ``runs.MAX_UPLOAD_BYTES``). Everything larger, slower or more numerous than that is refused:

* a JSON body over :data:`MAX_JSON_BYTES`: 413, from its Content-Length before it is read, or as soon
  as a chunked body passes the cap; bodies over :data:`JSON_INLINE_BYTES` are parsed (and their depth
  checked) in a thread, so that no request waits behind another's body;
* a WebSocket message over :data:`MAX_WS_MESSAGE`: the connection closes with code 1009 (Uvicorn
  refuses it from its frame header; the app checks again for other servers);
* an upload whose ``meta`` holds more than :data:`MAX_META_CHARS` characters: 422 before it is parsed;
* a request body that stalls: 408 when no chunk arrives for :data:`BODY_TIMEOUT` seconds, or when the
  body arrives slower, on average, than :data:`MIN_BODY_RATE` bytes a second after that grace;
* a connection whose request headers are not complete within :data:`HEADER_TIMEOUT` seconds: closed;
  an idle kept-alive connection: closed after :data:`KEEP_ALIVE_TIMEOUT` seconds;
* connections beyond :data:`MAX_CONNECTIONS` (and beyond the process's descriptor limit less
  :data:`RESERVED_DESCRIPTORS`, kept for the server's own files and threads): answered 503 and closed.

:func:`fitting.explore.make_app` takes the first four; :func:`server_config` (used by
``embdyn explore``, whose options set them all) the rest.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

__all__ = ["MAX_JSON_BYTES", "MAX_WS_MESSAGE", "MAX_META_CHARS", "BODY_TIMEOUT", "MIN_BODY_RATE",
           "HEADER_TIMEOUT", "KEEP_ALIVE_TIMEOUT", "MAX_CONNECTIONS", "RESERVED_DESCRIPTORS", "JSON_INLINE_BYTES",
           "BodyRefused", "read_body", "parse_json", "server_config", "connection_cap", "log"]

#: bytes of a JSON request body (the page's largest, all the controls at once, is under 1 KB)
MAX_JSON_BYTES = 64 << 10
#: bytes of a WebSocket message from the page (its only message, the frame's ack, is 14 bytes)
MAX_WS_MESSAGE = 4 << 10
#: characters of an uploaded trajectory's ``meta`` JSON text (a training run's ``train_indices`` of
#: 100 000 pairs take about 700 000; the shipped runs under 600)
MAX_META_CHARS = 1 << 20
#: JSON bodies up to this size are parsed on the event loop; larger ones in a thread
JSON_INLINE_BYTES = 4 << 10
#: seconds a request body may go without a chunk (and the grace before MIN_BODY_RATE applies)
BODY_TIMEOUT = 20.0
#: bytes a second a request body must average once it is past BODY_TIMEOUT seconds
MIN_BODY_RATE = 64 << 10
#: seconds from a connection's opening (or its previous response) to its request's complete headers
HEADER_TIMEOUT = 10.0
#: seconds an idle kept-alive connection stays open
KEEP_ALIVE_TIMEOUT = 5.0
#: open connections (HTTP and WebSocket) at a time; a browser page uses at most about seven
MAX_CONNECTIONS = 100
#: file descriptors kept for the server's own work (the listening socket, uploads being written, the
#: compile thread's files, imports) when the connection cap is fitted to the process's limit
RESERVED_DESCRIPTORS = 64

log = logging.getLogger("fitting.explore")


class BodyRefused(Exception):
    """A request body refused before or while it was read: ``status`` (408 or 413) and a plain message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


async def read_body(request: Any, limit: int, *, timeout: float = BODY_TIMEOUT, min_rate: float = MIN_BODY_RATE,
                    sink: Any = None) -> tuple[bytes, int]:
    """The request's body, at most ``limit`` bytes (:class:`BodyRefused` 413 from its Content-Length before
    anything is read, or as soon as a chunked body passes it; 408 for a stalled or too slow body). With
    ``sink`` (a callable taking each chunk) the chunks go there and the bytes returned are empty.
    Returns ``(body, bytes received)``. A client that goes away raises Starlette's ``ClientDisconnect``."""
    size = request.headers.get("content-length")
    if size is not None and size.strip().isdigit() and int(size) > limit:
        raise BodyRefused(413, f"the request body has {int(size)} bytes; the most the explorer reads is {limit}")
    chunks: list[bytes] = []
    received = 0
    began = time.monotonic()
    stream = request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), timeout)
        except StopAsyncIteration:
            break
        except asyncio.TimeoutError:
            raise BodyRefused(408, f"the request body stalled: no data for {timeout:g} s") from None
        received += len(chunk)
        if received > limit:
            raise BodyRefused(413, f"the request body has more than {limit} bytes, the most the explorer reads")
        elapsed = time.monotonic() - began
        if elapsed > timeout and received < min_rate * (elapsed - timeout):
            raise BodyRefused(408, f"the request body arrives too slowly ({received} bytes in {elapsed:.0f} s; "
                                   f"at least {int(min_rate)} bytes a second after the first {timeout:g} s)")
        if chunk:
            if sink is None:
                chunks.append(chunk)
            else:
                sink(chunk)
    return b"".join(chunks), received


async def parse_json(body: bytes) -> Any:
    """``json_loads_bounded(body)``; in a thread for bodies over :data:`JSON_INLINE_BYTES`."""
    from particles.core.io import json_loads_bounded

    if len(body) <= JSON_INLINE_BYTES:
        return json_loads_bounded(body)
    return await asyncio.to_thread(json_loads_bounded, body)


def connection_cap(wanted: int = MAX_CONNECTIONS, reserved: int = RESERVED_DESCRIPTORS) -> int:
    """``wanted``, lowered to what the process's descriptor limit leaves after ``reserved`` (raising the soft
    limit towards the hard one first, where the system allows it)."""
    try:
        import resource
    except ImportError:  # not a POSIX system: no descriptor limit to fit
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + reserved
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - reserved))


def _guarded_protocol(header_timeout: float, max_connections: int) -> type:
    """Uvicorn's h11 protocol with a header timeout and a connection cap checked as each connection opens."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _armed_cycle: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                log.warning("refused a connection: %d open, the most the explorer holds is %d",
                            len(self.connections) - 1, max_connections)
                body = b"the explorer holds too many connections: try again in a moment\n"
                transport.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
                                b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
                transport.close()
                return
            self._arm_header_timer()

        def _arm_header_timer(self) -> None:
            self._disarm_header_timer()
            self._armed_cycle = self.cycle
            self._header_timer = self.loop.call_later(header_timeout, self._headers_too_slow)

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            # no request began since the timer was armed, and the connection is not between requests
            # waiting for its keep-alive timeout (which closes it anyway)
            if self.cycle is self._armed_cycle and not self.transport.is_closing():
                log.warning("closed a connection whose request headers took over %g s", header_timeout)
                if self.conn.their_state is h11.IDLE and self.conn.our_state is h11.IDLE:
                    self.send_400_response(f"request headers not received within {header_timeout:g} s")
                else:
                    self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not self._armed_cycle:  # a request's headers arrived
                self._disarm_header_timer()

        def handle_websocket_upgrade(self, event: Any) -> None:
            self._disarm_header_timer()
            super().handle_websocket_upgrade(event)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_header_timer()
            super().connection_lost(exc)

    return GuardedH11Protocol


def server_config(app: Any, host: str, port: int, *, header_timeout: float = HEADER_TIMEOUT,
                  keep_alive_timeout: float = KEEP_ALIVE_TIMEOUT, max_connections: int = MAX_CONNECTIONS,
                  max_ws_message: int | None = None, **kwargs: Any) -> Any:
    """A ``uvicorn.Config`` for the explorer's ``app`` with the limits above: the header timeout and the
    connection cap (fitted to the descriptor limit), the keep-alive timeout, and WebSocket messages over
    ``max_ws_message`` (default: the app's own cap) closed with 1009 from their frame header."""
    import uvicorn

    cap = connection_cap(max_connections)
    if max_ws_message is None:
        max_ws_message = getattr(getattr(app, "state", None), "limits", {}).get("max_ws_message", MAX_WS_MESSAGE)
    options = dict(log_level="warning", ws="websockets-sansio", lifespan="off")
    options.update(kwargs)
    return uvicorn.Config(app, host=host, port=port, http=_guarded_protocol(header_timeout, cap),
                          timeout_keep_alive=keep_alive_timeout, limit_concurrency=cap + 1,
                          ws_max_size=max_ws_message, **options)

