"""The CSV and JSON bodies of the lists' exports, written a row at a time so a fleet's list is
streamed, never held in memory, and a spreadsheet never runs what a log put in a cell."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

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


def csv_lines(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A header line, then one line per row with its ``columns`` in order, each cell made safe."""
    writer = csv.writer(_Echo())
    yield writer.writerow(columns)
    for row in rows:
        yield writer.writerow([csv_safe(row[column]) for column in columns])


def json_array(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A JSON array of ``rows``, one object per line."""
    yield "["
    for index, row in enumerate(rows):
        yield ("," if index else "") + "\n" + json.dumps(row, ensure_ascii=False)
    yield "\n]\n"
