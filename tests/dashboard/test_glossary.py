"""The glossary page, and terms linked to it wherever a page uses them."""

from __future__ import annotations

from decimal import Decimal
from html import escape
from pathlib import Path

import pytest
from django.template import Context, Template
from django.test import Client
from django.urls import reverse

from dashboard.web.glossary import TERMS, term_named
from projections.cache.explain.verdict import LABEL_MEANINGS
from tests.dashboard.test_request_page import analysed

pytestmark = pytest.mark.django_db
GLOSSARY = reverse("dashboard:glossary")


def test_the_glossary_explains_every_term_and_every_miss_label(viewer_client: Client) -> None:
    page = viewer_client.get(GLOSSARY).content.decode()
    for term in TERMS:
        assert f'id="{term.slug}"' in page, term.name
    for label, meaning in LABEL_MEANINGS.items():
        assert f'id="label-{label}"' in page
        assert escape(meaning) in page


def test_the_glossary_needs_a_login(client: Client) -> None:
    response = client.get(GLOSSARY)
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_a_term_links_to_its_entry_with_its_sense_as_tooltip() -> None:
    rendered = Template('{% load cachescope %}{% term "wire allows" "Wire allows" %}').render(Context())
    entry = term_named("wire allows")
    assert rendered.startswith(f'<a class="term" href="{GLOSSARY}#wire-allows" title="')
    assert ">Wire allows</a>" in rendered
    assert entry.short.split(":")[0] in rendered


def test_a_template_naming_an_unknown_term_fails_loudly() -> None:
    with pytest.raises(KeyError, match="no glossary entry 'cache hit ratio'"):
        Template('{% load cachescope %}{% term "cache hit ratio" %}').render(Context())


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "—"),
        (Decimal(0), "$0"),
        (Decimal("1234.5678"), "$1,234.57"),
        (Decimal("0.012345"), "$0.0123"),
        (Decimal("0.00042"), "$0.00042"),
    ],
)
def test_costs_show_cents_from_a_dollar_and_three_figures_below(value: Decimal | None, shown: str) -> None:
    assert Template("{% load cachescope %}{{ value|usd }}").render(Context({"value": value})) == shown


def test_the_request_page_links_its_terms_to_the_glossary(tmp_path: Path, viewer_client: Client) -> None:
    page = viewer_client.get(analysed(tmp_path).get_absolute_url()).content.decode()
    for slug in ("credited", "wire-allows", "first-change", "marker"):
        assert f'href="{GLOSSARY}#{slug}"' in page, slug
