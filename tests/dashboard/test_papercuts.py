"""Small things an operator trips over: where /login/ goes, where users and groups are managed, the
ingest job's unchanged sessions, the requests list's note on what a sort leaves out, and the
maintainer tools kept out of the operator's navigation."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from dashboard.models import IngestJob, Request, RequestAnalysis, Session, Source
from tests.dashboard.logs import write_dsh_log

pytestmark = pytest.mark.django_db


def admin_client(make_user: Callable[..., User]) -> Client:
    client = Client()
    client.force_login(make_user("root", "admin"))
    return client


def test_login_at_the_root_is_sent_on_to_the_login_page_keeping_where_to_go_next(client: Client) -> None:
    response = client.get("/login/", {"next": "/sessions/"})

    assert response.status_code == 302
    assert response["Location"] == reverse("login") + "?next=%2Fsessions%2F"
    assert client.get(response["Location"]).status_code == 200


def test_every_in_app_admin_page_links_to_the_users_and_groups_in_django_s_admin(
    make_user: Callable[..., User],
) -> None:
    client = admin_client(make_user)
    for name in ("dashboard:tokens", "dashboard:prices", "dashboard:provider_rules"):
        page = client.get(reverse(name)).content.decode()
        assert f'href="{reverse("admin:auth_user_changelist")}"' in page, name
        assert f'href="{reverse("admin:auth_group_changelist")}"' in page, name
    assert client.get(reverse("admin:auth_user_changelist")).status_code == 200  # an admin is staff


def test_the_ingest_job_page_shows_the_unchanged_sessions_the_command_prints(
    tmp_path: Path, viewer_client: Client
) -> None:
    write_dsh_log(tmp_path / "first" / "s1" / "session.jsonl", session_id="s1", turns=2)
    call_command("ingest", str(tmp_path / "first"), "--source", "laptop", stdout=_Sink())
    # A copy of the log in another folder is read (the file itself is skipped on its stat).
    write_dsh_log(tmp_path / "copy" / "s1" / "session.jsonl", session_id="s1", turns=2)
    out = _Sink()
    call_command("ingest", str(tmp_path / "copy"), "--source", "laptop", stdout=out)
    job = IngestJob.objects.order_by("-pk").first()
    assert job is not None

    page = viewer_client.get(job.get_absolute_url()).content.decode()

    assert "1 unchanged" in out.text
    assert job.sessions_unchanged == 1
    assert re.search(r"<dt>Sessions unchanged</dt><dd>1</dd>", page)


def test_a_job_recorded_before_unchanged_sessions_were_counted_shows_none(viewer_client: Client) -> None:
    job = IngestJob.objects.create(status=IngestJob.Status.DONE, sessions_unchanged=None)

    page = viewer_client.get(job.get_absolute_url()).content.decode()

    assert "Sessions unchanged" not in page


def test_a_sort_by_a_figure_says_how_many_requests_it_leaves_out_and_only_when_it_does(
    viewer_client: Client,
) -> None:
    session = Session.objects.create(source=Source.objects.create(name="farm"), external_id="s", format="dsh")
    calls = [
        Request.objects.create(session=session, ordinal=n, key=f"r{n}", uncached_input_tokens=10)
        for n in range(3)
    ]
    for call in calls[:2]:
        RequestAnalysis.objects.create(request=call, session=session, wasted_tokens=0)

    page = viewer_client.get(reverse("dashboard:requests"), {"sort": "-wasted"}).content.decode()

    assert len(viewer_client.get(reverse("dashboard:requests"), {"sort": "-wasted"}).context["page"]) == 2
    assert "1 request without it (it is not analysed yet) is left out" in page
    RequestAnalysis.objects.create(request=calls[2], session=session, wasted_tokens=5)
    page = viewer_client.get(reverse("dashboard:requests"), {"sort": "-wasted"}).content.decode()
    assert "3 requests, sorted by re-processed tokens" in page
    assert "left out" not in page  # every request has the figure: none is left out


def test_the_maintainer_tools_sit_under_an_admin_menu_not_in_the_main_navigation(
    viewer_client: Client, make_user: Callable[..., User]
) -> None:
    viewer = viewer_client.get(reverse("dashboard:overview")).content.decode()
    admin = admin_client(make_user).get(reverse("dashboard:overview")).content.decode()

    main = viewer.split('<nav aria-label="Main">')[1].split("</nav>")[0]
    assert "Projections" not in main
    assert "Admin" not in main
    menu = viewer.split('<nav aria-label="Admin">')[1].split("</nav>")[0]
    assert f'href="{reverse("dashboard:projections")}"' in menu
    assert "Prices" not in menu  # a viewer sees only what is theirs to open
    admin_menu = admin.split('<nav aria-label="Admin">')[1].split("</nav>")[0]
    for name in ("dashboard:projections", "dashboard:tokens", "dashboard:prices", "dashboard:provider_rules"):
        assert f'href="{reverse(name)}"' in admin_menu, name
    assert f'href="{reverse("admin:index")}"' in admin_menu


class _Sink:
    """A stdout for call_command that keeps what was written."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, value: str) -> None:
        self.text += value

    def flush(self) -> None:
        pass
