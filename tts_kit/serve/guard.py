"""What stands between the network and the routes: the API key, HTTP versions, slow clients,
and ``accept()`` failing for want of file descriptors (docs/benchmarks.md)."""

from __future__ import annotations

import asyncio
import errno
import hmac
import ipaddress
import json
import logging
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

log = logging.getLogger("uvicorn.error")


def key_matches(header: bytes, key: bytes) -> bool:
    """``header`` (the raw Authorization value) is ``Bearer KEY``: constant time in the key.

    Example:
        >>> key_matches(b"bearer k", b"k"), key_matches(b"Basic k", b"k")
        (True, False)
    """
    token = header[7:] if header[:7].lower() == b"bearer " else b""
    return hmac.compare_digest(token, key)


def has_key(scope: dict, key: bytes) -> bool:
    """The ASGI request ``scope`` carries the right key (always True without a key)."""
    given = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
    return not key or key_matches(given, key)


class KeyCheck:
    """ASGI middleware: 401 (one JSON line) without the right key, except ``/health``."""

    def __init__(self, app: Any, key: bytes):
        self.app, self.key = app, key

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]],
                       send: Callable[[dict], Awaitable[None]]) -> None:
        if (scope["type"] != "http" or scope.get("path") == "/health"
                or has_key(scope, self.key)):
            await self.app(scope, receive, send)
            return
        await _refuse(send, 401, "missing or wrong API key; send Authorization: Bearer KEY",
                      [(b"www-authenticate", b"Bearer")])


class HttpVersionCheck:
    """ASGI middleware: 505 for a request line's HTTP version other than 1.0 and 1.1
    (``GET / HTTP/9.9``: uvicorn's h11 parser takes any ``HTTP/d.d``)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("http_version") in ("1.0", "1.1"):
            return await self.app(scope, receive, send)
        await _refuse(send, 505, f"HTTP version {str(scope.get('http_version'))[:10]} is not "
                      "supported; use HTTP/1.1", [(b"connection", b"close")])


def error_json(status: int, message: str, param: str | None = None) -> bytes:
    """An error body in OpenAI's shape, so its clients show the reason and field (``param``).

    Example:
        >>> json.loads(error_json(429, "busy"))["error"]["code"]
        'too_many_requests'
    """
    try:
        code = HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:  # 499: the client left
        code = "client_closed_request"
    kind = {401: "authentication_error", 429: "rate_limit_error"}.get(
        status, "server_error" if status >= 500 else "invalid_request_error")
    return (json.dumps({"error": {"message": message, "type": kind, "code": code,
                                  "param": param}}, ensure_ascii=False) + "\n").encode()


async def _refuse(send: Any, status: int, message: str, headers: list) -> None:
    """Answer ``status`` with `error_json` and ``headers``, the route never run."""
    body = error_json(status, message)
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), *headers,
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _busy(scope: dict, receive: Any, send: Any) -> None:
    await _refuse(send, 503, "the server has --limit-concurrency connections open; retry "
                  "in a moment", [(b"connection", b"close")])


def header_timeout_protocol(seconds: float) -> type:
    """uvicorn's h11 protocol, closing a connection whose next request's headers are not all
    in ``seconds`` after it opened or its last answer; past ``--limit-concurrency``, a JSON 503.

    Example:
        >>> header_timeout_protocol(5.0).__name__
        'HeaderTimeoutH11Protocol'
    """
    from uvicorn.protocols.http import h11_impl
    from uvicorn.protocols.http.h11_impl import H11Protocol

    h11_impl.service_unavailable = _busy  # what it answers past --limit-concurrency

    class HeaderTimeoutH11Protocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_header_timer()

        def _arm_header_timer(self) -> None:
            # The request whose headers are awaited is the one after ``self.cycle`` (None:
            # the first); a new cycle before the timer fires means they came in time.
            self._header_timer = self.loop.call_later(seconds, self._headers_late, self.cycle)

        def _headers_late(self, waiting_after: Any) -> None:
            if self.cycle is waiting_after and not self.transport.is_closing():
                log.warning("tts-kit serve: closed a connection whose request headers took "
                         "over %g s", seconds)
                self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._header_timer.cancel()
            if not self.transport.is_closing() and self.cycle is not None \
                    and self.cycle.response_complete:
                self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._header_timer.cancel()
            super().connection_lost(exc)

        def eof_received(self) -> bool | None:  # type: ignore[override]
            # A client that shut its write side after its whole request (a half-close)
            # still reads the answer: the transport stays open (None: close, mid-request).
            # One that closed for good looks the same until written to: a 100 (Continue),
            # which clients must accept (RFC 9110 15.2), draws its reset (`_gone`).
            cycle = self.cycle
            if cycle is None or cycle.more_body or cycle.response_complete:
                return None
            if not cycle.response_started and self.conn.their_http_version == b"1.1":
                import h11  # never a 1xx to an HTTP/1.0 client (RFC 9110 15.2)

                self.transport.write(self.conn.send(h11.InformationalResponse(
                    status_code=100, headers=[], reason=b"Continue")))
                self.loop.call_later(0.01, self._gone, 0.01)
            return True

        def _gone(self, waited: float) -> None:  # a reset after the 100: the client left
            sock = self.transport.get_extra_info("socket")
            if sock is None or self.transport.is_closing():
                return
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self.transport.close()  # so does its request
            elif waited < 0.3:  # asked again at 10, 20, 40 ... 320 ms: a round trip or two
                self.loop.call_later(waited, self._gone, 2 * waited)

    return HeaderTimeoutH11Protocol


class QuietAcceptErrors:
    """An event-loop exception handler logging accept errors once per ``every_s``, with a count."""

    def __init__(self, every_s: float = 10.0):
        self.every_s = every_s
        self.last = -float("inf")
        self.hidden = 0

    def __call__(self, loop: Any, context: dict) -> None:
        message = str(context.get("message", ""))
        if "accept" not in message:
            loop.default_exception_handler(context)
            return
        now = time.monotonic()
        if now - self.last < self.every_s:
            self.hidden += 1
            return
        exc = context.get("exception")
        more = f" ({self.hidden} more since the last report)" if self.hidden else ""
        log.error("tts-kit serve: %s: %s%s; new connections wait (raise the open-file limit "
                  "or lower --limit-concurrency)", message, exc, more)
        self.last, self.hidden = now, 0


#: ``accept()`` failures asyncio retries a second later (the listening socket stays ready).
_RESOURCE_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class _AcceptOnceAfterFailure:
    """A listening socket for one pass of asyncio's accept loop: after ``accept()`` fails
    for want of a resource, the rest of the pass sees no connection waiting (the loop
    already queued its retry), instead of failing and queueing a retry per backlog slot."""

    __slots__ = ("sock", "failed")

    def __init__(self, sock: Any):
        self.sock, self.failed = sock, False

    def accept(self) -> Any:
        if self.failed:
            raise BlockingIOError(errno.EAGAIN, "retry queued")
        try:
            return self.sock.accept()
        except OSError as exc:
            self.failed = exc.errno in _RESOURCE_ERRNOS
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class AcceptBackoffLoop(asyncio.SelectorEventLoop):
    """asyncio's selector loop with one accept retry queued per failure, not one per
    backlog slot (CPython before gh-151615), and none on a socket closed meanwhile.

    Example:
        >>> loop = AcceptBackoffLoop()
        >>> loop.run_until_complete(asyncio.sleep(0, "ran")), loop.close()
        ('ran', None)
    """

    def _accept_connection(self, protocol_factory: Any, sock: Any,  # type: ignore[override]
                           *args: Any, **kwargs: Any) -> None:
        if isinstance(sock, _AcceptOnceAfterFailure):
            sock = sock.sock
        super()._accept_connection(  # type: ignore[misc]
            protocol_factory, _AcceptOnceAfterFailure(sock), *args, **kwargs)

    def _start_serving(self, protocol_factory: Any, sock: Any,  # type: ignore[override]
                       *args: Any, **kwargs: Any) -> None:
        if isinstance(sock, _AcceptOnceAfterFailure):
            sock = sock.sock
        if sock.fileno() == -1:  # closed while its retry waited: the server stopped
            return
        super()._start_serving(protocol_factory, sock, *args, **kwargs)  # type: ignore[misc]


def run_uvicorn(server: Any) -> None:
    """``server.run()`` (a ``uvicorn.Server``) on `AcceptBackoffLoop` (uvicorn's own loop
    on Windows, whose selector loop is not uvicorn's choice there).

    Example:
        >>> run_uvicorn(uvicorn.Server(uvicorn.Config(app, port=8000)))  # doctest: +SKIP
    """
    if sys.platform == "win32":
        server.run()
    elif hasattr(asyncio, "Runner"):  # Python 3.11+
        with asyncio.Runner(loop_factory=AcceptBackoffLoop) as runner:
            runner.run(server.serve())
    else:
        loop = AcceptBackoffLoop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.serve())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def exposure_warning(host: str, keyed: bool) -> str | None:
    """What to warn about when a server binds ``host`` beyond this machine without a key.

    Example:
        >>> exposure_warning("127.0.0.1", keyed=False), exposure_warning("0.0.0.0", keyed=True)
        (None, None)
    """
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        loopback = False
    if keyed or loopback:
        return None
    return (f"listening on {host} without an API key: anyone who can reach this port can "
            "use the server; give --api-key or $TTS_KIT_API_KEY")


__all__ = ["AcceptBackoffLoop", "HttpVersionCheck", "KeyCheck", "QuietAcceptErrors",
           "error_json", "exposure_warning", "has_key", "header_timeout_protocol",
           "key_matches", "run_uvicorn"]
