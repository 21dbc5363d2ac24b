"""The same log sent under another source is stored once: the ingest says where it already is, the
fleet's totals count it once, and an admin may move it to the source it was sent as."""

from __future__ import annotations

import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from dashboard.fleet.rollups import rollups_rebuild
from dashboard.ingest.files import ingest_paths
from dashboard.models import IngestJob, Session, Source, UsageRollup
from tests.dashboard.logs import dsh_lines, write_dsh_log, write_jsonl

pytestmark = pytest.mark.django_db


def ingest_json(path: Path, source: str) -> dict:  # type: ignore[type-arg]
    out = StringIO()
    call_command("ingest", str(path), "--source", source, "--json", stdout=out)
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def test_a_second_ingest_under_another_source_stores_nothing_and_names_the_first(tmp_path: Path) -> None:
    log = write_dsh_log(tmp_path / "s1" / "session.jsonl", session_id="s1", turns=2)
    ingest_json(log, "laptop")
    stored = Session.objects.get()

    result = ingest_json(log, "build-farm")
    out = StringIO()
    call_command("ingest", str(log), "--source", "build-farm", stdout=out)

    assert Session.objects.count() == 1
    assert result["sessions"] == 0
    assert result["stored_elsewhere"] == [{"session_id": "s1", "stored_as": stored.pk, "source": "laptop"}]
    assert "s1: already stored under source laptop" in out.getvalue()
    job = IngestJob.objects.get(pk=result["job"])
    assert list(job.sessions_elsewhere.all()) == [stored]


def test_the_fleet_counts_the_session_sent_twice_once(tmp_path: Path, viewer_client: Client) -> None:
    log = write_dsh_log(
        tmp_path / "s1" / "session.jsonl", session_id="s1", turns=2, model="deepseek-v4-flash"
    )
    ingest_paths(paths=[log], source_name="laptop")
    ingest_paths(paths=[log], source_name="build-farm")

    totals = viewer_client.get(reverse("dashboard:overview"), {"range": "all"}).context["totals"]

    assert (totals["sessions"], totals["requests"]) == (1, 2)


def test_a_grown_copy_under_another_source_is_still_the_same_log(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "short" / "session.jsonl", dsh_lines("s1", turns=2))
    write_jsonl(tmp_path / "long" / "session.jsonl", dsh_lines("s1", turns=4))
    ingest_paths(paths=[tmp_path / "short"], source_name="laptop")

    summary = ingest_paths(paths=[tmp_path / "long"], source_name="build-farm")

    assert [(external_id, name) for external_id, _pk, name in summary.elsewhere] == [("s1", "laptop")]
    assert Session.objects.count() == 1


def test_another_log_that_only_shares_the_id_is_stored_under_its_own_source(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a" / "session.jsonl", dsh_lines("s1", turns=2, system="You are terse."))
    write_jsonl(tmp_path / "b" / "session.jsonl", dsh_lines("s1", turns=2, system="You are chatty."))
    ingest_paths(paths=[tmp_path / "a"], source_name="laptop")

    summary = ingest_paths(paths=[tmp_path / "b"], source_name="build-farm")

    assert summary.elsewhere == []
    assert sorted(Session.objects.values_list("source__name", flat=True)) == ["build-farm", "laptop"]


def test_an_admin_moves_the_session_to_the_source_it_was_sent_as_from_the_job_page(
    tmp_path: Path, make_user: Callable[..., User], viewer_client: Client
) -> None:
    log = write_dsh_log(tmp_path / "s1" / "session.jsonl", session_id="s1", turns=2)
    ingest_paths(paths=[log], source_name="laptop")
    rollups_rebuild()
    job = IngestJob.objects.get(pk=ingest_json(log, "build-farm")["job"])
    admin = Client()
    admin.force_login(make_user("root", "admin"))

    viewer_page = viewer_client.get(job.get_absolute_url()).content.decode()
    admin_page = admin.get(job.get_absolute_url()).content.decode()
    move = reverse("dashboard:session_move", args=[Session.objects.get().pk])

    assert "stored under source <strong>laptop</strong>" in viewer_page
    assert move not in viewer_page
    assert f'action="{move}"' in admin_page
    assert viewer_client.post(move, {"source": "build-farm"}).status_code == 403
    response = admin.post(move, {"source": "build-farm", "next": job.get_absolute_url()}, follow=True)

    assert response.redirect_chain[-1][0] == job.get_absolute_url()
    assert "now belongs to source build-farm" in response.content.decode()
    assert Session.objects.get().source.name == "build-farm"
    by_source = set(UsageRollup.objects.filter(requests__gt=0).values_list("source__name", flat=True))
    assert by_source == {"build-farm"}  # the overview's sums moved with it


def test_a_move_onto_a_source_that_holds_the_id_already_is_refused(
    tmp_path: Path, make_user: Callable[..., User]
) -> None:
    write_jsonl(tmp_path / "a" / "session.jsonl", dsh_lines("s1", turns=2, system="You are terse."))
    write_jsonl(tmp_path / "b" / "session.jsonl", dsh_lines("s1", turns=2, system="You are chatty."))
    ingest_paths(paths=[tmp_path / "a"], source_name="laptop")
    ingest_paths(paths=[tmp_path / "b"], source_name="build-farm")
    laptop = Session.objects.get(source__name="laptop")
    admin = Client()
    admin.force_login(make_user("root", "admin"))

    response = admin.post(
        reverse("dashboard:session_move", args=[laptop.pk]), {"source": "build-farm"}, follow=True
    )

    assert "source build-farm already holds a session s1; nothing was moved" in response.content.decode()
    assert Session.objects.get(pk=laptop.pk).source == Source.objects.get(name="laptop")
