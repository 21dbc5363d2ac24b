"""Pages go to a browser gzip-compressed when it accepts that, and plain to one that does not."""

from __future__ import annotations

import gzip

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer() -> Client:
    user = User.objects.create_user(username="viewer", password="a-long-test-password")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)
    return client


def test_a_page_is_sent_gzip_compressed_to_a_browser_that_accepts_it(viewer: Client) -> None:
    response = viewer.get("/sessions/", headers={"accept-encoding": "gzip, deflate, br"})
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in response["Vary"]
    page = gzip.decompress(response.content).decode()
    assert "<h1>Sessions</h1>" in page


def test_a_page_is_sent_plain_to_a_client_that_asks_for_no_compression(viewer: Client) -> None:
    response = viewer.get("/sessions/")
    assert response.status_code == 200
    assert "Content-Encoding" not in response
    assert "<h1>Sessions</h1>" in response.content.decode()
