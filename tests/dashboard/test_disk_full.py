"""An upload or an API batch onto a full data folder says so and leaves nothing half-written: no
job, no file. A real full file system: a tmpfs of 1 MB mounted as the data folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.access.tokens import token_create
from dashboard.models import IngestJob, Source
from tests.dashboard.outages import small_filesystem
from tests.dashboard.test_uploads import log_bytes, upload

pytestmark = pytest.mark.django_db


def _big_log() -> bytes:
    """A valid log of about 2 MB, twice what the file system holds."""
    line = log_bytes("big").splitlines(keepends=True)
    padding = (
        b'{"type":"turn/end","seq":%d,"time":1767225700000,"data":{"turn":%d,"note":"' + b"x" * 900 + b'"}}\n'
    )
    return b"".join(line) + b"".join(padding % (100 + n, n) for n in range(2200))


def _files(folder: Path) -> list[str]:
    return [str(Path(root, name).relative_to(folder)) for root, _, names in os.walk(folder) for name in names]


def test_an_upload_onto_a_full_data_folder_says_so_and_leaves_no_job_and_no_file(
    tmp_path: Path, settings: Any, operator_client: Client
) -> None:
    with small_filesystem(tmp_path / "data") as data:
        settings.DATA_DIR = data
        response = upload(operator_client, "session.jsonl", _big_log())
        left = _files(data)

    assert response.status_code == 400
    assert "no space left on the data folder" in response.content.decode()
    assert not IngestJob.objects.exists()
    assert left == []


def test_an_api_batch_onto_a_full_data_folder_answers_507_and_keeps_nothing(
    tmp_path: Path, settings: Any
) -> None:
    _, secret = token_create(source=Source.objects.create(name="farm"), name="ci", created_by=None)
    with small_filesystem(tmp_path / "data") as data:
        settings.DATA_DIR = data
        response = Client().post(
            reverse("api_batches"),
            data=_big_log(),
            content_type="application/x-ndjson",
            headers={"Authorization": f"Bearer {secret}"},
        )
        left = _files(data)

    assert response.status_code == 507
    assert response.json()["error"].startswith("no space left on the data folder; nothing was saved")
    assert not IngestJob.objects.exists()
    assert left == []
