"""An install without the C hash says so once, and renders all the same."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterator

import pytest

import projections.cache.render
from projections.cache.render import accel
from projections.cache.render.rendering import render_request
from tests.projections.cache.builders import body, conversation


@pytest.fixture
def without_extension(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Import ``accel`` again as an install without a C compiler would: ``_native`` cannot be found."""
    monkeypatch.setitem(sys.modules, "projections.cache.render._native", None)
    monkeypatch.delattr(projections.cache.render, "_native", raising=False)
    try:
        yield
    finally:
        monkeypatch.undo()
        importlib.reload(accel)


def test_a_missing_extension_is_logged_once_as_a_warning(
    without_extension: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="projections.cache.render.accel"):
        importlib.reload(accel)
        importlib.import_module("projections.cache.render.accel")
        importlib.import_module("projections.cache.render.canonical")
    assert accel.native is None
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, accel.MISSING)]


def test_without_the_extension_a_request_renders_as_with_it(without_extension: None) -> None:
    request = body(conversation(3))
    built = render_request("anthropic", "messages", request)
    importlib.reload(accel)
    plain = render_request("anthropic", "messages", request)
    assert accel.native is None
    assert plain.prefix_hashes == built.prefix_hashes
    assert plain.block_hashes == built.block_hashes


@pytest.mark.skipif(accel.native is None, reason="the C extension is not built here")
def test_a_built_extension_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="projections.cache.render.accel"):
        importlib.reload(accel)
    assert accel.native is not None
    assert caplog.records == []
