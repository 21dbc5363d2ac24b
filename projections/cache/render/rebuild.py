"""A stored request turned back into the body that was sent.

The store keeps a request's units (one block hash per unit, with its tier, role and message index)
and its markers, but not its body. The body is rebuilt from the units and their blocks' JSON and
rendered again; the rendering must give back the stored block hashes, or the rebuilt body is not the
one that was sent and the request is analysed from its usage alone.

A unit is the list ``[hash, tier, role, message index or None, index in message, message id or None]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.rendering import Renderer, RenderError, render_request
from projections.normalized import JSON, RequestRecord

_CONTENT_BLOCK_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})
"""Responses API items that are the content of a message rather than an item of their own."""


class StoredRequestError(ValueError):
    """A stored request whose units cannot be turned back into the body that was sent."""


@dataclass(frozen=True, slots=True)
class StoredRequest:
    """A request as the store keeps it: its facts and usage, its units and markers, no body."""

    ref: int
    """The store's id of the request, named in every error."""
    record: RequestRecord
    """The request's facts and usage; its ``body`` is ``None``."""
    params: Mapping[str, JSON]
    """The body's fields other than the prompt (``max_tokens``, ``thinking``, ``tool_choice``, ...)."""
    units: Sequence[Sequence[JSON]]
    markers: Sequence[Mapping[str, JSON]]
    """``{"position": unit index, "ttl": "5m" | "1h"}``, or ``{"automatic": true, "ttl": ...}``."""
    has_body: bool
    """Whether the source logged the body (a transcript-only source did not)."""


def rebuild_body(stored: StoredRequest, raws: Mapping[str, JSON]) -> dict[str, JSON]:
    """The request body rebuilt from its units, their blocks' JSON (``raws`` by hash) and markers.

    ``cache_control`` is not part of a block, so it is put back on the units the markers name.
    Raises :class:`StoredRequestError` naming the request when a block is missing or the layout
    cannot be a body.
    """
    units = stored.units
    # One comprehension over the units, the common case, rather than a loop step each: a request late
    # in a long conversation has thousands, and a session's analysis rebuilds every request.
    try:
        values: list[JSON] = [raws[unit[0]] for unit in units]
    except KeyError:
        missing = next(unit[0] for unit in units if unit[0] not in raws)
        raise StoredRequestError(f"request {stored.ref}: block {missing} is not stored") from None
    marked: dict[int, str] = {}
    automatic: str | None = None
    for marker in stored.markers:
        if marker.get("automatic"):
            automatic = marker.get("ttl", "5m")
        else:
            marked[int(marker["position"])] = marker.get("ttl", "5m")
    for position in sorted(p for p in marked if 0 <= p < len(values)):
        raw = values[position]
        if not isinstance(raw, dict):
            raise StoredRequestError(
                f"request {stored.ref}: marker at unit {position} sits on a plain string"
            )
        values[position] = {**raw, "cache_control": _control(marked[position])}
    record = stored.record
    params = stored.params
    body: dict[str, JSON] = {"model": record.model, **params}
    if "effort" in params and record.api == "messages":
        body.pop("effort")
        body["output_config"] = {"effort": params["effort"]}
    if "output_format" in params:
        # Sent as output_config.format; the renderer keeps it as a parameter of its own.
        body.pop("output_format")
        body["output_config"] = {**_mapping(body.get("output_config")), "format": params["output_format"]}
    for derived in ("images", "citations", "web_search"):
        body.pop(derived, None)  # found in the content by the renderer, never sent as fields
    tools = [values[i] for i, unit in enumerate(units) if unit[1] == "tools"]
    if tools:
        body["tools"] = tools
    heads = [i for i, unit in enumerate(units) if unit[1] != "tools" and unit[3] is None]
    messages = _messages(record.api, units, values)
    if record.api == "messages":
        if heads:
            only = values[heads[0]]
            body["system"] = only if len(heads) == 1 and isinstance(only, str) else [values[i] for i in heads]
        body["messages"] = messages
    elif record.api == "chat":
        body["messages"] = messages
    elif record.api == "responses":
        if heads:
            body["instructions"] = values[heads[0]]
        body["input"] = messages
    else:
        raise StoredRequestError(f"request {stored.ref}: unknown api {record.api!r}")
    if automatic is not None:
        body["cache_control"] = _control(automatic)
    return body


def rebuild_request(
    stored: StoredRequest, raws: Mapping[str, JSON], renderer: Renderer | None = None
) -> tuple[RequestRecord, RenderedRequest | None]:
    """The stored request as the engine takes it, with its body rebuilt when it had one, and the
    rebuilt body's rendering (``None`` without a body), by ``renderer`` when a session's requests
    are rebuilt in order.

    The rendering is what proves the rebuilt body matches the stored units; the analysis takes it
    as it is rather than rendering the same body twice. Raises :class:`StoredRequestError` when
    the body cannot be rebuilt or does not render to the stored units.
    """
    if not stored.has_body:
        return stored.record, None
    body = rebuild_body(stored, raws)
    record = replace(stored.record, body=body)
    try:
        render = renderer.render if renderer is not None else render_request
        rendered = render(record.provider, record.api, body, usage=record.usage)
    except RenderError as error:
        raise StoredRequestError(f"request {stored.ref}: the rebuilt body does not render: {error}") from None
    _check_rendering(stored, rendered)
    return record, rendered


def _control(ttl: str) -> dict[str, JSON]:
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def _messages(api: str, units: Sequence[Sequence[JSON]], values: list[JSON]) -> list[JSON]:
    groups: dict[int, tuple[list[Sequence[JSON]], list[JSON]]] = {}
    for unit, value in zip(units, values, strict=True):
        index = unit[3]
        if index is None:
            continue
        if type(index) is not int:
            index = int(index)
        group = groups.get(index)
        if group is None:
            groups[index] = ([unit], [value])
        else:
            group[0].append(unit)
            group[1].append(value)
    count = max(groups, default=-1) + 1
    # A message without content renders no unit; an empty one keeps the later indexes in place.
    messages: list[JSON] = [{"role": "user", "content": []} for _ in range(count)]
    for index, (members, contents) in groups.items():
        messages[index] = _message(api, members, contents)
    return messages


def _message(api: str, units: Sequence[Sequence[JSON]], values: list[JSON]) -> JSON:
    role = units[0][2]
    first = values[0]
    if api == "chat" and role == "tool" and isinstance(first, dict):
        return {"role": "tool", "tool_call_id": first.get("tool_call_id"), "content": first.get("content")}
    if (
        api == "responses"
        and len(values) == 1
        and isinstance(first, dict)
        and first.get("type") not in _CONTENT_BLOCK_TYPES
    ):
        return first  # an item of its own (function call, its output, reasoning)
    message: dict[str, JSON] = {"role": role}
    if units[0][5] is not None:
        message["id"] = units[0][5]
    calls: list[JSON] = []
    if api == "chat":
        while values and isinstance(values[-1], dict) and "function" in values[-1]:
            calls.insert(0, values.pop())
    if len(values) == 1 and isinstance(values[0], str):
        message["content"] = values[0]
    elif values or not calls:
        message["content"] = values  # the caller's list, made for this message alone
    if calls:
        message["tool_calls"] = calls
    return message


def _check_rendering(stored: StoredRequest, rendered: RenderedRequest) -> None:
    stored_units = stored.units
    # Column by column: the same test as the tuples below, without a tuple a unit when all is well.
    if (
        len(stored_units) == len(rendered.block_hashes)
        and [u[0] for u in stored_units] == rendered.block_hashes
        and [u[2] for u in stored_units] == rendered.roles
        and [u[3] for u in stored_units] == rendered.message_indexes
    ):
        return
    units = [(u[0], u[2], u[3]) for u in stored_units]
    again = list(zip(rendered.block_hashes, rendered.roles, rendered.message_indexes, strict=True))
    if units == again:
        return
    position = next((i for i, (a, b) in enumerate(zip(units, again, strict=False)) if a != b), None)
    if position is None:
        raise StoredRequestError(f"request {stored.ref}: {len(again)} units rebuilt, {len(units)} stored")
    raise StoredRequestError(f"request {stored.ref}: unit {position} does not rebuild to its stored hash")


def _mapping(value: JSON) -> dict[str, JSON]:
    return dict(value) if isinstance(value, dict) else {}
