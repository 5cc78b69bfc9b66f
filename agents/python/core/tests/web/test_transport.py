"""What a client cannot do to a real `dex-agents serve` process: resume tokens of any length, bodies
sent without a token or past the limit, clients that trickle their headers or body, and, with
`--no-auth`, requests from a web page. Each case uses real clients (httpx, raw sockets),
measures the server from outside (/proc/<pid>/status VmRSS, /proc/<pid>/fd), and ends with a
turn that still completes. One SQLite database: none of this depends on the backend."""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

import httpx
import pytest
from click.testing import CliRunner

from dex_agents.cli import cli
from dex_agents.testing import ScriptedModelServer, ServeProcess, WorkerProcess, reply_text

HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0
MAX_CONNECTIONS = 64
MAX_BODY_BYTES = 1024 * 1024
LIMIT_ARGS = [
    "--header-timeout-seconds",
    str(HEADER_TIMEOUT),
    "--body-timeout-seconds",
    str(BODY_TIMEOUT),
    "--max-connections",
    str(MAX_CONNECTIONS),
    "--max-body-bytes",
    str(MAX_BODY_BYTES),
]
HUGE = 200 * 1024 * 1024
# How far the server's resident memory may rise under the hostile requests.
MEMORY_SLACK_KIB = 20 * 1024


@pytest.fixture(scope="module")
def db_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('transport') / 'dex.sqlite'}"


@pytest.fixture(scope="module")
def server(db_url: str, worker: WorkerProcess) -> Iterator[ServeProcess]:
    env = {"DEX_AGENTS_WEB_HEARTBEAT_SECONDS": "0.3"}
    with ServeProcess(db_url, env=env, args=LIMIT_ARGS) as serve:
        yield serve


# Measuring the server from outside ------------------------------------------------------------


def server_pid(server: ServeProcess) -> int:
    assert server.process is not None and server.process.poll() is None, server.log()
    return server.process.pid


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class PeakRss:
    """The highest VmRSS of a process while the block runs, sampled every few milliseconds."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = rss_kib(pid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.005):
            self.peak = max(self.peak, rss_kib(self.pid))

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, rss_kib(self.pid))


def a_turn_completes(server: ServeProcess, scripted_model: ScriptedModelServer) -> None:
    """A session's first turn, through the API, to its end."""
    scripted_model.enqueue(reply_text("Still here."))
    with httpx.Client(base_url=server.base_url, headers=server.headers, timeout=30) as http:
        started = http.post("/api/sessions", json={"flow_type": "Assistant", "message": "Hi?"})
        assert started.status_code == 201, started.text
        session = started.json()["session_id"]
        deadline = time.monotonic() + 30
        while True:
            snap = http.get(f"/api/sessions/{session}/snapshot").json()
            state = snap["state"]
            if state and state["turn_count"] == 1 and state["status"] == "waiting_for_user_message":
                break
            assert time.monotonic() < deadline, f"the turn did not complete: {state}"
            time.sleep(0.05)
    assert snap["messages"][-1]["text"] == "Still here."


# Raw sockets -----------------------------------------------------------------------------------


def connect(server: ServeProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def read_status(sock: socket.socket, timeout: float = 10.0) -> tuple[int | None, bytes]:
    """The status of the response the server sent, and what it sent (None: it sent nothing
    before closing or resetting)."""
    sock.setblocking(True)
    sock.settimeout(timeout)
    received = b""
    with contextlib.suppress(ConnectionResetError, BrokenPipeError):
        while b"\r\n\r\n" not in received or len(received) < 4096:
            data = sock.recv(65536)
            if not data:
                break
            received += data
    if not received.startswith(b"HTTP/1.1 "):
        return None, received
    return int(received[9:12]), received


def push_body(
    server: ServeProcess, head: bytes, chunk: bytes, total: int
) -> tuple[int | None, bytes, int]:
    """Sends a request's head, then `chunk` after `chunk` (up to `total` bytes) until the server
    answers or closes; returns the status, what it sent, and how many body bytes went out."""
    with connect(server) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        sent = 0
        deadline = time.monotonic() + 60
        while sent < total and time.monotonic() < deadline:
            readable, writable, _ = select.select([sock], [sock], [], 1.0)
            if readable:
                break
            if writable:
                try:
                    sent += sock.send(chunk)
                except BlockingIOError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    break
        status, answer = read_status(sock)
        return status, answer, sent


def post_head(server: ServeProcess, path: str, *, token: bool, length: int | None) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}"]
    lines.append("Content-Type: application/json")
    if token:
        lines.append(f"Authorization: Bearer {server.token}")
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    lines.append(framing)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def get_request(server: ServeProcess, path: str) -> bytes:
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {server.token}"
    return (head + "\r\n\r\n").encode()


def read_response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length, leaving the connection open."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return received


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed (or reset) the connection; reads what it sent."""
    sock.setblocking(False)
    try:
        while True:
            data = sock.recv(65536, socket.MSG_DONTWAIT)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError as error:
        return error.errno in (errno.ECONNRESET, errno.EPIPE)


# 1. Resume tokens -------------------------------------------------------------------------------


LAST = "Last-Event-ID"


def ui_token(**fields: object) -> str:
    raw = json.dumps({"v": 1, "turn": "t1", "start": 0, "o": 0, **fields}).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_every_malformed_resume_token_is_a_400_on_every_stream_route(
    server: ServeProcess, scripted_model: ScriptedModelServer
) -> None:
    long = "9" * 5000
    offsets = [long, "9" * 21, "99999999999", "-1", "+1", "1_0", "1e3", "0x1", "\u0661", " 1"]
    ui_tokens = [long, "x" * 9000, ui_token(start=10**30, o=10**30), ui_token(o=-1), "%%"]
    with httpx.Client(base_url=server.base_url, headers=server.headers, timeout=30) as http:
        session = http.post("/api/sessions", json={"flow_type": "Assistant"}).json()["session_id"]
        events = f"/api/sessions/{session}/events"
        stream = f"/api/sessions/{session}/chat/stream"
        requests = [(events, {"after": token}, {}, "after") for token in offsets]
        # (A header's surrounding spaces are not part of its value.)
        header_values = [token.encode() for token in offsets if token.strip() == token]
        requests += [(events, {}, {LAST: token}, LAST) for token in header_values]
        requests += [(stream, {"token": token}, {}, "token") for token in ui_tokens]
        requests += [(stream, {}, {LAST: token.encode()}, LAST) for token in ui_tokens]
        for path, params, headers, field in requests:
            response = http.get(path, params=params, headers=headers)
            assert response.status_code == 400, (path, params, headers, response.text)
            error = response.json()["error"]
            assert (error["code"], error["field"]) == ("invalid_resume_token", field)
            assert len(error["message"]) < 400
        # A valid token still streams.
        with http.stream("GET", events, params={"after": "0"}) as response:
            assert response.status_code == 200
    a_turn_completes(server, scripted_model)


# 2. Bodies -------------------------------------------------------------------------------------


def test_bodies_are_read_only_after_auth_and_only_up_to_the_limit(
    server: ServeProcess, scripted_model: ScriptedModelServer
) -> None:
    pid = server_pid(server)
    path = "/api/sessions/x/messages"
    chunk = b"[" * 65536
    chunked = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    a_turn_completes(server, scripted_model)
    baseline = rss_kib(pid)

    cases = [
        # Without a token: 401 before any of the body is read.
        (post_head(server, path, token=False, length=HUGE), chunk, 401, "unauthorized"),
        # With one: a declared length past the limit is refused at once...
        (post_head(server, path, token=True, length=HUGE), chunk, 413, "body_too_large"),
        # ...and a chunked body as it grows past it.
        (post_head(server, path, token=True, length=None), chunked, 413, "body_too_large"),
    ]
    with PeakRss(pid) as rss, ThreadPoolExecutor(max_workers=12) as pool:
        jobs = [
            (pool.submit(push_body, server, head, piece, HUGE), status, code)
            for head, piece, status, code in cases
            for _ in range(4)
        ]
        for job, status, code in jobs:
            got, answer, sent = job.result()
            assert got == status, (got, answer[:300])
            assert f'"code":"{code}"'.encode() in answer
            # What went out before the answer: the sockets' buffers (a few MiB on loopback),
            # up to the limit read, and up to the limit again read and dropped after it.
            assert sent < 16 * 1024 * 1024, f"{sent:,} bytes went out before the answer"
    assert rss.peak - baseline < MEMORY_SLACK_KIB, f"VmRSS {baseline} -> peak {rss.peak} KiB"

    # The limit is the limit: a body just under it is read (and refused for what it says).
    with httpx.Client(base_url=server.base_url, headers=server.headers, timeout=30) as http:
        under = http.post(path, json={"text": "a" * (MAX_BODY_BYTES - 100)})
        assert under.status_code == 404, under.text
        assert under.json()["error"]["code"] == "session_not_found"
        over = http.post(path, json={"text": "a" * MAX_BODY_BYTES})
        assert over.status_code == 413
        assert f"{MAX_BODY_BYTES:,} bytes" in over.json()["error"]["message"]
    a_turn_completes(server, scripted_model)


# 3. Slow clients -------------------------------------------------------------------------------


def test_slow_clients_are_cut_off_and_cannot_use_up_descriptors(
    server: ServeProcess, scripted_model: ScriptedModelServer
) -> None:
    pid = server_pid(server)
    a_turn_completes(server, scripted_model)
    baseline = open_fds(pid)
    # A body a byte at a time; a kept-alive connection, answered once, that trickles its next
    # request; then 300 connections that trickle header lines.
    body = connect(server)
    body.sendall(post_head(server, "/api/sessions", token=True, length=1000))
    kept = connect(server)
    kept.sendall(get_request(server, "/api/workers"))
    assert read_response(kept).startswith(b"HTTP/1.1 200 ")
    trickling = [connect(server) for _ in range(300)]
    sockets = [body, kept, *trickling]
    try:
        for sock in [kept, *trickling]:
            sock.sendall(b"GET /api/workers HTTP/1.1\r\n")
        # Those past the cap are closed as the server accepts them (a burst's descriptors
        # are freed within its event loop's round); the rest are held until they time out.
        most_fds, most_held = 0, 0
        start = time.monotonic()
        open_socks = set(sockets)
        while open_socks and time.monotonic() - start < HEADER_TIMEOUT + BODY_TIMEOUT + 10:
            for sock in list(open_socks):
                if closed_by_server(sock):
                    open_socks.discard(sock)
                    continue
                with contextlib.suppress(OSError):
                    sock.send(b"x" if sock is body else b"X-Slow: 1\r\n")
            if time.monotonic() - start > 0.5:
                most_fds = max(most_fds, open_fds(pid))
                most_held = max(most_held, len(open_socks))
            time.sleep(0.25)
        assert not open_socks, f"{len(open_socks)} slow connections are still open"
        assert 0 < most_held <= MAX_CONNECTIONS, most_held
        assert most_fds <= baseline + MAX_CONNECTIONS + 4, (baseline, most_fds)
        assert open_fds(pid) <= baseline + 2
    finally:
        for sock in sockets:
            sock.close()

    # Past the cap a connection is answered 503 at once (what this client reads of it).
    held = [connect(server) for _ in range(MAX_CONNECTIONS)]
    try:
        extra = connect(server)
        status, answer = read_status(extra)
        extra.close()
        assert status == 503 and b"server_busy" in answer, answer[:300]
    finally:
        for sock in held:
            sock.close()
    a_turn_completes(server, scripted_model)


# 4. --no-auth ----------------------------------------------------------------------------------


def test_no_auth_answers_only_loopback_names_and_pages(
    db_url: str, worker: WorkerProcess, scripted_model: ScriptedModelServer
) -> None:
    with ServeProcess(db_url, auth=False) as open_server:
        url = open_server.base_url
        with httpx.Client(base_url=url, timeout=30) as http:
            for host in ("attacker.example", "attacker.example:80", "127.0.0.1.nip.io", "10.0.0.1"):
                refused = http.get("/api/sessions", headers={"Host": host})
                assert refused.status_code == 403, (host, refused.text)
                assert refused.json()["error"]["code"] == "host_not_allowed"
            for host in ("localhost", f"localhost:{open_server.port}", "[::1]:80", "app.localhost"):
                assert http.get("/api/sessions", headers={"Host": host}).status_code == 200
            page = {"Origin": "http://attacker.example"}
            cross = http.post("/api/sessions/x/cancel", headers=page)
            assert cross.status_code == 403
            assert cross.json()["error"]["code"] == "origin_not_allowed"
            local_page = {"Origin": f"http://localhost:{open_server.port}"}
            assert http.post("/api/sessions/x/cancel", headers=local_page).status_code == 404

            scripted_model.enqueue(reply_text("Open, on loopback."))
            started = http.post("/api/sessions", json={"flow_type": "Assistant", "message": "Hi"})
            session = started.json()["session_id"]
            deadline = time.monotonic() + 30
            # The snapshot's state is null until the Worker's first Step has run.
            while not (http.get(f"/api/sessions/{session}/snapshot").json()["state"] or {}).get(
                "turn_count"
            ):
                assert time.monotonic() < deadline
                time.sleep(0.05)


def test_the_connection_cap_fits_the_open_file_limit() -> None:
    """A process whose open-file limit cannot be raised serves fewer connections than asked,
    and says so, rather than failing to accept."""
    code = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))\n"
        "from dex_agents.web.serve import TransportLimits, fitted_to_open_file_limit\n"
        "print(fitted_to_open_file_limit(TransportLimits(max_connections=1000)).max_connections)\n"
        "print(fitted_to_open_file_limit(TransportLimits(max_connections=100)).max_connections)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["236", "100"], run.stderr
    assert "leaves room for 236 connections, not --max-connections 1000" in run.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
def test_no_auth_on_a_non_loopback_host_is_refused_before_it_listens(host: str) -> None:
    refused = CliRunner().invoke(cli, ["serve", "--no-auth", "--host", host, "--port", "0"])
    assert refused.exit_code == 1
    assert "--no-auth serves this machine only" in refused.output
