"""The lists' exports: one answer for both (the refusal of a bad filter, the download's name) and
their CSV and JSON bodies, written a row at a time so a fleet's list is streamed, never held in
memory, and a spreadsheet never runs what a log put in a cell."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from django.db.models import Max, QuerySet
from django.http import Http404, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.utils import timezone

EXPORT_FORMATS = ("csv", "json")
ROWS_HEADER = "X-Cachescope-Rows"
"""How many rows the export holds, counted before the first is sent: a client that reads fewer
(a proxy or a worker timeout cut the stream) can tell its file is not whole."""

FORMULA_STARTS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")
"""What a spreadsheet reads as the start of a formula, with the full-width forms (U+FF1D, U+FF0B,
U+FF0D, U+FF20) that some of them fold into the ASCII ones."""


def csv_safe(value: Any) -> Any:
    """``value`` with a leading apostrophe when a spreadsheet could run it as a formula.

    A title from a log must not run when the export is opened. Leading whitespace of any kind (space,
    tab, CR, LF, a full-width space) is defused too: spreadsheets skip it before looking for ``=``.
    """
    if isinstance(value, str) and value and (value[0] in FORMULA_STARTS or value[0].isspace()):
        return "'" + value
    return value


class _Echo:
    """A file-like object whose write returns the line, for csv.writer inside a generator."""

    def write(self, value: str) -> str:
        return value


def csv_cell(value: Any) -> Any:
    """``value`` as one CSV cell: a list as its items joined by spaces (JSON keeps it a list), made
    safe (:func:`csv_safe`)."""
    if isinstance(value, list | tuple):
        value = " ".join(str(item) for item in value)
    return csv_safe(value)


def csv_lines(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A header line, then one line per row with its ``columns`` in order, each a :func:`csv_cell`."""
    writer = csv.writer(_Echo())
    yield writer.writerow(columns)
    for row in rows:
        yield writer.writerow([csv_cell(row[column]) for column in columns])


def json_array(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A JSON array of ``rows``, one object per line."""
    yield "["
    for index, row in enumerate(rows):
        yield ("," if index else "") + "\n" + json.dumps(row, ensure_ascii=False)
    yield "\n]\n"


def export_response(
    *,
    fmt: str,
    name: str,
    errors: Mapping[str, str],
    columns: Sequence[str],
    rows: Callable[[], Iterable[dict[str, Any]]],
    count: Callable[[], int] | None = None,
) -> HttpResponse | StreamingHttpResponse:
    """The streamed download ``cachescope-<name>-<UTC time>.<fmt>`` of ``rows()``, or the answer
    instead: 404 for a format other than CSV or JSON, 400 naming every bad filter in ``errors``.

    A list whose filter could not be read is refused rather than exported without it, which would
    hold more than was asked for. ``rows`` is called only once the export goes ahead; ``count()``,
    the rows it will yield, is sent first as :data:`ROWS_HEADER`.
    """
    if fmt not in EXPORT_FORMATS:
        raise Http404(f"no export format {fmt!r}")
    if errors:
        problems = "; ".join(f"{field}: {message}" for field, message in errors.items())
        message = f"bad filter, nothing exported: {problems}\n"
        return HttpResponseBadRequest(message, content_type="text/plain")
    if fmt == "csv":
        response = StreamingHttpResponse(csv_lines(columns, rows()), content_type="text/csv; charset=utf-8")
    else:
        response = StreamingHttpResponse(json_array(rows()), content_type="application/json")
    if count is not None:
        response[ROWS_HEADER] = str(count())
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="cachescope-{name}-{stamp}.{fmt}"'
    return response


def stored_rows_export(
    *,
    fmt: str,
    name: str,
    errors: Mapping[str, str],
    columns: Sequence[str],
    listed: QuerySet[Any],
    rows: Callable[[QuerySet[Any]], Iterable[dict[str, Any]]],
) -> HttpResponse | StreamingHttpResponse:
    """:func:`export_response` of ``rows(stored)``: ``stored`` is ``listed`` cut to the rows stored
    when the export begins (ids up to the last one then), so the count sent first and the rows sent
    after it agree while ingests go on."""
    up_to = listed.model._default_manager.aggregate(last=Max("pk"))["last"] or 0
    stored = listed.filter(pk__lte=up_to)
    return export_response(
        fmt=fmt,
        name=name,
        errors=errors,
        columns=columns,
        rows=lambda: rows(stored),
        count=lambda: stored.order_by().count(),
    )
