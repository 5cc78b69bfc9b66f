"""A small OTLP/HTTP trace receiver on loopback, for tests that check the spans a real Worker
(and whatever else exports to it, a remote runner's process) sends through a real exporter:
it decodes each ExportTraceServiceRequest with opentelemetry-proto's classes and keeps the
spans as SpanViews. Needs opentelemetry-proto (the core's dev dependencies have it).

    with OtlpReceiver() as receiver:
        # OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint in the exporting processes
        spans = receiver.wait_for(6, session_id)
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

__all__ = ["OtlpReceiver", "SpanView"]


@dataclass(frozen=True)
class SpanView:
    """One finished span, as the tests read it: name, kind, IDs, parent, links, attributes."""

    name: str
    kind: str  # INTERNAL, CLIENT, ...
    trace_id: str
    span_id: str
    parent_id: str | None
    links: tuple[tuple[str, str], ...]  # (trace ID, span ID)
    attributes: dict[str, Any]
    error: bool
    start: int
    end: int

    def is_named_by(self, traceparent: str | None) -> bool:
        """Whether a stored W3C traceparent names this span, sampled."""
        if traceparent is None:
            return False
        version, trace_id, span_id, flags = traceparent.split("-")
        sampled = int(flags, 16) & 1
        return (version, trace_id, span_id, sampled) == ("00", self.trace_id, self.span_id, 1)

    @property
    def step(self) -> tuple[str, str]:
        return self.attributes["dex.step.type"], self.name


class OtlpReceiver:
    """Receives OTLP/HTTP protobuf trace exports at `endpoint` while entered."""

    def __init__(self) -> None:
        self.spans: list[SpanView] = []
        self.resources: list[dict[str, Any]] = []
        self.schema_urls: set[str] = set()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = _read_body(self)
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver._take(ExportTraceServiceRequest.FromString(body))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, count: int, session_id: str, timeout: float = 30.0) -> list[SpanView]:
        """The session's spans once at least `count` arrived."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                found = [s for s in self.spans if s.attributes.get("dex.flow.id") == session_id]
            if len(found) >= count:
                return sorted(found, key=lambda s: s.start)
            if time.monotonic() > deadline:
                names = [s.name for s in found]
                raise AssertionError(f"{len(found)} spans of {count} arrived: {names}")
            time.sleep(0.05)

    def _take(self, request: ExportTraceServiceRequest) -> None:
        with self._lock:
            for resource_spans in request.resource_spans:
                self.resources.append(_attributes(resource_spans.resource.attributes))
                for scope_spans in resource_spans.scope_spans:
                    self.schema_urls.add(scope_spans.schema_url)
                    self.spans.extend(_view(span) for span in scope_spans.spans)


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request's body, sent with a length (Python's exporter) or chunked (Node's)."""
    if handler.headers.get("transfer-encoding", "").lower() != "chunked":
        return handler.rfile.read(int(handler.headers.get("content-length", 0)))
    body = bytearray()
    while size := int(handler.rfile.readline().split(b";", 1)[0].strip(), 16):
        body += handler.rfile.read(size)
        handler.rfile.readline()  # the CRLF after the chunk
    while handler.rfile.readline().strip():  # trailers, up to the empty line
        pass
    return bytes(body)


def _view(span: Span) -> SpanView:
    return SpanView(
        name=span.name,
        kind=Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex() or None,
        links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links),
        attributes=_attributes(span.attributes),
        error=span.status.code == Status.STATUS_CODE_ERROR,
        start=span.start_time_unix_nano,
        end=span.end_time_unix_nano,
    )


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None
