"""The traced Worker's flows for test_traces.py: the OpenTelemetry SDK's global tracer provider
exporting through the standard OTLP/HTTP exporter (configured by the OTEL_* variables, tracing
turned on by DEX_AGENTS_TRACING=1), and `Traced`, served by traced-app.js in a Node child of
the Worker, which exports its own spans to the same endpoint
(`dex-agents worker traced_flows:flows`)."""

from __future__ import annotations

from pathlib import Path

from dex_agents import AgentSessionOptions
from dex_agents.remote import remote_flow
from dex_agents.testing.node_runner import NodeRunner
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)

APP = Path(__file__).resolve().parent.parent / "build" / "e2e" / "traced-app.js"
flows = [remote_flow(NodeRunner(APP).url, "Traced", AgentSessionOptions())]
