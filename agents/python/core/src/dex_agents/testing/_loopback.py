"""What the scripted servers on loopback share: a threaded HTTP server and its lifecycle,
and a response writer that notices a client that went away."""

from __future__ import annotations

import select
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

POLL_SECONDS = 0.05


class ClientGone(Exception):
    """The client closed its connection before the response was complete."""


def client_gone(sock: socket.socket) -> bool:
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def read_body(handler: BaseHTTPRequestHandler) -> bytes | None:
    """The request's body; None when the client went away before sending all of it (a
    process killed while it sent the request), which a scripted server must neither record
    nor answer."""
    length = int(handler.headers.get("Content-Length") or 0)
    raw = handler.rfile.read(length) if length > 0 else b""
    if len(raw) < length:
        handler.close_connection = True
        return None
    return raw


def pieces(text: str, count: int) -> list[str]:
    """``text`` split into at most ``count`` consecutive non-empty pieces."""
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A response's head and body are written separately: without TCP_NODELAY, Nagle's
    # algorithm and the client's delayed ACK would hold the body some 40 ms.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def do_POST(self) -> None:
        self.server.owner._handle_post(self)

    def do_GET(self) -> None:
        self.server.owner._handle_unknown(self)

    def do_PUT(self) -> None:
        self.server.owner._handle_unknown(self)

    def do_DELETE(self) -> None:
        self.server.owner._handle_unknown(self)

    def do_HEAD(self) -> None:
        self.server.owner._handle_unknown(self)

    def log_message(self, format: str, *args: Any) -> None:
        return


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # A fixed port (`dex-agents model-server --port 8765`) binds again at once after the server
    # is killed, while its old connections wait out TIME_WAIT. Two servers still cannot listen
    # on one port: Linux refuses a second listener either way.
    allow_reuse_address = True

    def __init__(self, owner: LoopbackServer, port: int) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", port), Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-request is the tests' business, not a traceback's."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class Exchange:
    """Writes one response to a handler's socket; raises :class:`ClientGone` on a lost client."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    def _write(self, data: bytes) -> None:
        try:
            self.handler.wfile.write(data)
            self.handler.wfile.flush()
        except (OSError, ValueError) as exc:
            raise ClientGone from exc

    def _head(self, status: int, headers: dict[str, str]) -> None:
        try:
            self.handler.send_response(status)
            for name, value in headers.items():
                self.handler.send_header(name, value)
            self.handler.end_headers()
        except (OSError, ValueError) as exc:
            raise ClientGone from exc

    def start_stream(self) -> None:
        self._head(
            200,
            {
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "Transfer-Encoding": "chunked",
            },
        )

    def _chunk(self, raw: bytes) -> None:
        self._write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")

    def end_stream(self) -> None:
        self._write(b"0\r\n\r\n")


class LoopbackServer:
    """A scripted server's HTTP thread on ``127.0.0.1`` and an ephemeral port (or ``port``);
    a subclass answers requests in ``_handle_post`` and ``_handle_unknown``. ``release`` lets
    go of the responses held on ``_hanging`` events."""

    _thread_name = "scripted-server"
    _url_path = ""

    def __init__(self, port: int) -> None:
        self._port = port
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._hanging: list[threading.Event] = []
        self._dropped = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError(f"{self._thread_name}: already started")
        self._stopping.clear()
        httpd = _HTTPServer(self, self._port)
        port = httpd.server_address[1]
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{port}{self._url_path}"
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": POLL_SECONDS},
            name=f"{self._thread_name}-{port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        self.release()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def release(self) -> None:
        with self._lock:
            hanging, self._hanging = self._hanging, []
        for event in hanging:
            event.set()

    def _handle_post(self, handler: Handler) -> None:
        raise NotImplementedError

    def _handle_unknown(self, handler: Handler) -> None:
        raise NotImplementedError
