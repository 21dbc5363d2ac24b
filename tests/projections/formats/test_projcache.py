from __future__ import annotations

import json
from typing import Any

import pytest

from projections.formats import find_projcaches, read_projcache
from projections.normalized import FormatError
from tests.projections.formats.conftest import header, jsonl

ROWS = {"contextBreakdown": {"ver": 6, "seq": 41, "val": {"systemTokens": 400, "messageTokens": 900}}}


def test_identity_string_names_the_session(write: Any) -> None:
    cache = read_projcache(
        write("p/session_projcache.json", json.dumps({"identity": "s-9", "rows": ROWS}).encode())
    )
    assert cache.session_id == "s-9"
    row = cache.rows["contextBreakdown"]
    assert (row.ver, row.seq, row.val) == (6, 41, {"systemTokens": 400, "messageTokens": 900})


def test_identity_object_with_an_id_names_the_session(write: Any) -> None:
    document = {"identity": {"id": "s-7", "formatVersion": 4, "cwd": "/w"}, "rows": ROWS}
    assert read_projcache(write("session_projcache.json", json.dumps(document).encode())).session_id == "s-7"


def test_identity_without_an_id_takes_the_session_log_beside_it(write: Any) -> None:
    write("s/session.jsonl", jsonl([header(session_id="beside")]))
    document = {
        "record": {
            "identity": {"formatVersion": 4, "createdAt": 1, "cwd": "/w", "isSeeded": False},
            "rows": ROWS,
        }
    }
    path = write("s/session_projcache.json", json.dumps(document).encode())
    cache = read_projcache(path)
    assert cache.session_id == "beside"
    assert cache.identity == document["record"]["identity"]
    assert list(find_projcaches(path.parents[1])) == [path]


def test_bad_rows_are_listed_and_good_rows_kept(write: Any) -> None:
    rows = {**ROWS, "tokenUsage": {"ver": "1", "seq": 3, "val": {}}}
    cache = read_projcache(
        write("session_projcache.json", json.dumps({"identity": "s", "rows": rows}).encode())
    )
    assert list(cache.rows) == ["contextBreakdown"]
    assert [e.field for e in cache.errors] == ["rows.tokenUsage.ver"]


def test_a_file_that_is_not_a_projection_cache_is_refused(write: Any) -> None:
    with pytest.raises(FormatError, match="not a projection cache"):
        read_projcache(write("session_projcache.json", b'{"rows": []}'))
    with pytest.raises(FormatError, match="json"):
        read_projcache(write("other.json", b"{nope"))
