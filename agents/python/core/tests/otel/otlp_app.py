"""The traced Worker app of the OTLP test: the flows of app.py, and the SDK's tracer provider
with the standard OTLP/HTTP exporter, configured only by the OTEL_* environment variables
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_BSP_SCHEDULE_DELAY). The Worker turns
tracing on because DEX_AGENTS_TRACING=1 and uses this global provider."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from .app import flows

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)

__all__ = ["flows"]
