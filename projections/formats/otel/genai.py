"""GenAI spans (OpenTelemetry semantic conventions for generative AI) → sessions of usage-only requests.

Follows the GenAI semantic conventions as kept in the open-telemetry/semantic-conventions-genai
repository (gen-ai spans and usage attributes, status Development, read 2026-12-03); the attribute
names are those of opentelemetry-semantic-conventions 0.66b2, which marks them moved there, and the
older names are read too. One inference span (``gen_ai.operation.name`` ``chat``, ``text_completion``,
``generate_content``, or none on older instrumentations) is one provider call:

- session: ``gen_ai.conversation.id``, else ``session.id`` (older and OpenInference-style
  instrumentations), else the span's trace (``trace-<trace id>``);
- model: ``gen_ai.response.model``, else ``gen_ai.request.model``;
- provider: ``gen_ai.provider.name``, else the older ``gen_ai.system``;
- usage: ``gen_ai.usage.input_tokens`` (older: ``gen_ai.usage.prompt_tokens``),
  ``gen_ai.usage.output_tokens`` (older: ``gen_ai.usage.completion_tokens``),
  ``gen_ai.usage.cache_read.input_tokens`` (older: ``gen_ai.usage.cache_read_input_tokens``) and
  ``gen_ai.usage.cache_creation.input_tokens`` (older: ``gen_ai.usage.cache_creation_input_tokens``).

The conventions say ``gen_ai.usage.input_tokens`` "SHOULD include all types of input tokens,
including cached tokens", whatever the provider, and that both cache counts "SHOULD be included in"
it; so the uncached bucket is the input count less the read and the write. Some Anthropic
instrumentations predate that and pass Anthropic's exclusive ``input_tokens`` through: when the
cache counts exceed the input count, the input count is read as already exclusive, and a notice
says so. The key of a call is its span id, so a retried export adds nothing.

Agent, tool and embedding spans (``invoke_agent``, ``execute_tool``, ``embeddings``, ...) are not
calls: an agent span may sum its children's usage, which would count it twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from projections.client_version import client_version
from projections.formats.otel.otlp import (
    BadValue,
    SpanItem,
    TelemetrySession,
    session_labels,
    text,
    token_count,
)
from projections.normalized import (
    JSON,
    LineError,
    LineNotice,
    RequestRecord,
    SessionImport,
    Usage,
    UsageConvention,
)

FORMAT = "genai-otel"
INFERENCE_OPERATIONS = frozenset({"", "chat", "text_completion", "generate_content", "completion"})
USAGE_NAMES = {
    "input": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "output": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    "read": ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"),
    "write": ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens"),
}
PROVIDERS: dict[str, tuple[str, UsageConvention]] = {
    "anthropic": ("anthropic", "anthropic"),
    "openai": ("openai", "openai"),
    "azure.ai.openai": ("openai", "openai"),
    "azure_openai": ("openai", "openai"),
    "gcp.gemini": ("gemini", "gemini"),
    "gcp.vertex_ai": ("gemini", "gemini"),
    "gcp.gen_ai": ("gemini", "gemini"),
    "vertex_ai": ("gemini", "gemini"),
    "gemini": ("gemini", "gemini"),
    "deepseek": ("deepseek", "deepseek"),
    "openrouter": ("openrouter", "openrouter"),
}
"""Provider names of the conventions (and of older instrumentations) → Cachescope's provider and
the usage convention its cache predictor reads. Any other provider keeps its own name and is read
as prompt caching without reported writes, the OpenAI-style default most others follow."""


@dataclass(slots=True)
class _Gathered:
    imported: SessionImport
    records: list[RequestRecord] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)


def is_inference_span(span: SpanItem) -> bool:
    """Whether ``span`` is one model call: a GenAI span of an inference operation."""
    attrs = span.attributes
    operation = text(attrs, "gen_ai.operation.name")
    if operation not in INFERENCE_OPERATIONS:
        return False
    named = text(
        attrs, "gen_ai.request.model", "gen_ai.response.model", "gen_ai.provider.name", "gen_ai.system"
    )
    return bool(named) or any(name in attrs for names in USAGE_NAMES.values() for name in names)


def genai_sessions(
    items: Iterable[SpanItem], path: str, errors: list[LineError], notices: list[LineNotice]
) -> list[TelemetrySession]:
    """The sessions the inference spans among ``items`` describe; other spans are skipped.

    A span whose usage cannot be read is reported in ``errors`` at its position and skipped.
    """
    sessions: dict[str, _Gathered] = {}
    for span in items:
        if not is_inference_span(span):
            continue
        attrs: dict[str, JSON] = {**span.resource, **span.attributes}
        session_id = text(attrs, "gen_ai.conversation.id", "session.id") or (
            f"trace-{span.trace_id}" if span.trace_id else ""
        )
        if not session_id:
            errors.append(
                LineError(path, span.position, "traceId", "a span without a trace id or conversation")
            )
            continue
        if not span.span_id:
            errors.append(
                LineError(path, span.position, "spanId", "a span without its id cannot be kept once")
            )
            continue
        try:
            record = _call(span, attrs, path, notices)
        except BadValue as bad:
            errors.append(LineError(path, span.position, bad.field, bad.reason))
            continue
        gathered = sessions.get(session_id)
        if gathered is None:
            gathered = sessions[session_id] = _Gathered(
                SessionImport(external_id=session_id, format=FORMAT, path=path, items=iter(()))
            )
        _note_session(gathered.imported, span, attrs)
        gathered.records.append(record)
        gathered.positions.append(span.position)
    return [TelemetrySession(g.imported, g.records, g.positions) for g in sessions.values()]


def _call(span: SpanItem, attrs: Mapping[str, JSON], path: str, notices: list[LineNotice]) -> RequestRecord:
    named = text(attrs, "gen_ai.provider.name", "gen_ai.system")
    model = text(attrs, "gen_ai.response.model", "gen_ai.request.model")
    provider, convention = _provider(named, model)
    usage = _usage(attrs, convention, span.position, path, notices)
    status = token_count(attrs, "http.response.status_code")
    if status is not None and not 100 <= status <= 599:
        raise BadValue("http.response.status_code", f"expected an HTTP status, got {status}")
    service, version = text(attrs, "service.name"), text(attrs, "service.version")
    return RequestRecord(
        key=span.span_id[:200],
        ordinal=0,
        lineage="main",
        provider=provider[:40],
        platform=(named or provider)[:40],
        api="messages" if provider == "anthropic" else "chat",
        model=model,
        started_at=span.start,
        first_token_at=None,
        usage=usage,
        status=status,
        line=span.position,
        client_version=client_version(service, version) if service and version else "",
    )


def _provider(named: str, model: str) -> tuple[str, UsageConvention]:
    if named in PROVIDERS:
        return PROVIDERS[named]
    if "claude" in model.lower() or "anthropic" in model.lower():
        # Claude on Bedrock or another platform keeps Anthropic's cache rules.
        return "anthropic", "anthropic"
    return (named or "unknown"), "openai"


def _usage(
    attrs: Mapping[str, JSON],
    convention: UsageConvention,
    position: int,
    path: str,
    notices: list[LineNotice],
) -> Usage | None:
    counts = {bucket: token_count(attrs, *names) for bucket, names in USAGE_NAMES.items()}
    if all(value is None for value in counts.values()):
        return None
    total, read, write = counts["input"], counts["read"], counts["write"]
    uncached = total
    if total is not None:
        cached = (read or 0) + (write or 0)
        if cached > total:
            notices.append(
                LineNotice(
                    path,
                    position,
                    USAGE_NAMES["input"][0],
                    f"the cache counts ({cached}) exceed the input count ({total}), so the input count was "
                    "read as excluding them (Anthropic's convention), not as the semantic conventions say",
                )
            )
        else:
            uncached = total - cached
    raw = {name: attrs[name] for names in USAGE_NAMES.values() for name in names if name in attrs}
    return Usage(
        uncached_input=uncached,
        cache_read=read,
        cache_write_5m=write,
        cache_write_1h=None,
        output=counts["output"],
        convention=convention,
        raw=raw,
    )


def _note_session(imported: SessionImport, span: SpanItem, attrs: Mapping[str, JSON]) -> None:
    for moment in (span.start, span.end):
        if moment is None:
            continue
        if imported.started_at is None or moment < imported.started_at:
            imported.started_at = moment
        if imported.ended_at is None or moment > imported.ended_at:
            imported.ended_at = moment
    for key, value in session_labels(attrs).items():
        imported.labels.setdefault(key, value)
    if not imported.title:
        imported.title = text(attrs, "gen_ai.agent.name")[:120]
