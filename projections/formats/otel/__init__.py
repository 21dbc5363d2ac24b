"""OpenTelemetry: OTLP export requests as plain dicts, Claude Code's telemetry events and GenAI
spans, each read into usage-only sessions.

May import: ``projections.formats.reading`` and the log model.
"""
