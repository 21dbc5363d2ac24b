"""The charts' JSON reaches the page as json_script would put it, escaped so it cannot end the script."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

from django.utils.html import json_script

from dashboard.templatetags.chart_json import chart_json, chart_json_text


def _payload(html: str) -> str:
    return html.split(">", 1)[1].rsplit("</script>", 1)[0]


def test_reads_back_as_json_script_writes_it() -> None:
    figure = {
        "data": [
            {
                "x": [1, 2.5],
                "text": ["</script><!-- a & b >"],
                "when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            }
        ],
        "cost": Decimal("0.125"),
        "none": None,
    }
    ours, theirs = chart_json(figure, "chart"), json_script(figure, "chart")
    assert ours.startswith('<script id="chart" type="application/json">')
    assert json.loads(_payload(ours)) == json.loads(_payload(theirs))


def test_nothing_in_a_label_can_close_the_element_or_open_a_comment() -> None:
    text = chart_json_text({"label": "</script><script>alert(1)</script> <!-- & -->"})
    for character in "<>&":
        assert character not in text
    assert json.loads(text)["label"] == "</script><script>alert(1)</script> <!-- & -->"


def test_the_element_id_is_escaped() -> None:
    assert 'id="a&quot;b"' in chart_json([1], 'a"b')
