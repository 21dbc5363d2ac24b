"""Every main page on a phone, in the dark theme and from the keyboard, without errors or failed loads."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from dashboard.models import Request, Session

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}

# Reads the page's colours as a browser renders them and works out WCAG contrast ratios, so the
# checks below measure what a reader sees rather than what the stylesheet meant.
CONTRAST_JS = """
(selector) => {
  function rgb(text) { return text.match(/[\\d.]+/g).slice(0, 3).map(Number); }
  function luminance(colour) {
    const [r, g, b] = rgb(colour).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }
  function background(element) {
    for (let node = element; node; node = node.parentElement) {
      const colour = getComputedStyle(node).backgroundColor;
      if (!/rgba\\(.*, 0\\)$/.test(colour) && colour !== "transparent") { return colour; }
    }
    return getComputedStyle(document.documentElement).backgroundColor;
  }
  function ratio(a, b) {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  }
  const shown = Array.from(document.querySelectorAll(selector)).filter((e) => e.offsetParent);
  return shown.slice(0, 40).map((e) => {
    const style = getComputedStyle(e);
    return {
      text: e.textContent.trim().slice(0, 40),
      contrast: ratio(style.color, background(e)),
      underlined: style.textDecorationLine.includes("underline"),
      backgroundLuminance: luminance(background(e)),
    };
  });
}
"""


@pytest.fixture
def main_pages(live_server: Any, login_as: Any, ingest_demo_file: Any) -> dict[str, str]:
    """Each main page's URL over one ingested compacted session, for an admin who may see them all."""
    file = ingest_demo_file("dsh", "compacted")
    session = Session.objects.get(external_id=file.sessions[0].external_id)
    request = Request.objects.filter(session=session).order_by("pk").last()
    assert request is not None
    login_as("admin")
    paths = {
        "overview": "/",
        "sessions": "/sessions/",
        "session": session.get_absolute_url(),
        "requests": "/requests/",
        "request": request.get_absolute_url(),
        "warnings": "/warnings/",
        "savings": "/savings/?range=all",
        "ingest": "/ingest/",
        "projections": "/projections/",
        "tokens": "/manage/tokens/",
        "prices": "/manage/prices/",
        "provider rules": "/manage/provider-rules/",
        "glossary": "/glossary/",
    }
    return {name: live_server.url + path for name, path in paths.items()}


def visit(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("load")
    # Charts draw as they come near the screen: scroll each one there, for a chart that widened the
    # page would show only once drawn.
    for chart in page.locator("[data-chart], [data-cache-chart]").all():
        chart.scroll_into_view_if_needed()
        expect(chart).to_have_attribute("data-drawn", "yes")
    page.evaluate("window.scrollTo(0, 0)")


def test_every_main_page_fits_a_phone_without_sideways_scrolling(
    page: Any, main_pages: dict[str, str], screenshot: Any
) -> None:
    page.set_viewport_size(PHONE)
    for name, url in main_pages.items():
        visit(page, url)
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], f"{name} scrolls sideways: {widths[0]} px wide in {widths[1]} px"
        screenshot(f"390-{name}")


def test_the_navigation_folds_into_a_menu_on_a_phone_that_opens_from_the_keyboard(
    page: Any, main_pages: dict[str, str], screenshot: Any
) -> None:
    page.set_viewport_size(PHONE)
    visit(page, main_pages["session"])
    sessions_link = page.get_by_role("navigation", name="Main").get_by_role("link", name="Sessions")
    expect(sessions_link).to_be_hidden()

    menu = page.locator(".menu > summary")
    menu.focus()
    page.keyboard.press("Enter")
    expect(sessions_link).to_be_visible()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    screenshot("menu-open")
    sessions_link.focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(main_pages["sessions"])


def test_the_navigation_is_one_open_row_on_a_wide_screen(page: Any, main_pages: dict[str, str]) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    visit(page, main_pages["overview"])
    expect(page.locator(".menu > summary")).to_be_hidden()
    nav = page.get_by_role("navigation", name="Main")
    for name in ("Overview", "Sessions", "Requests", "Warnings", "Ingest", "Glossary"):
        expect(nav.get_by_role("link", name=name)).to_be_visible()
    expect(nav.get_by_role("link", name="Overview")).to_have_attribute("aria-current", "page")
    # The maintainer's tools drop down from the Admin menu, apart from the operator's pages.
    admin = page.get_by_role("navigation", name="Admin")
    expect(nav.get_by_role("link", name="Projections")).to_have_count(0)
    expect(admin.get_by_role("link", name="Projections")).to_be_hidden()
    page.locator(".admin-menu > summary").click()
    for name in ("Projections", "API tokens", "Prices", "Provider rules", "Users and groups"):
        expect(admin.get_by_role("link", name=name)).to_be_visible()


def test_the_dark_theme_follows_the_system_and_keeps_text_readable(
    page: Any, main_pages: dict[str, str], screenshot: Any
) -> None:
    page.emulate_media(color_scheme="dark")
    for name in ("overview", "session", "request", "requests"):
        visit(page, main_pages[name])
        body = page.evaluate(CONTRAST_JS, "main p, main td, main h1, main h2")
        assert body, name
        assert max(item["backgroundLuminance"] for item in body) < 0.05, f"{name} is not dark"
        low = [item for item in body if item["contrast"] < 4.5]
        assert not low, f"{name}: text below 4.5:1 in the dark theme: {low}"
        links = page.evaluate(CONTRAST_JS, "main a")
        assert links, name
        low = [item for item in links if item["contrast"] < 4.5 or not item["underlined"]]
        assert not low, f"{name}: links not underlined or below 4.5:1 in the dark theme: {low}"
        screenshot(f"dark-{name}")

    # The charts draw on the page's own background in its text colour, not plotly's white.
    visit(page, main_pages["session"])
    chart = page.locator("[data-chart=breakdown-figure]")
    expect(chart.locator(".main-svg").first).to_be_visible()
    paper = chart.locator(".main-svg").first
    assert paper.evaluate("(e) => getComputedStyle(e).backgroundColor") == "rgba(0, 0, 0, 0)"
    tick = chart.locator(".ytick text").first
    assert tick.evaluate("(e) => getComputedStyle(e).fill") == page.evaluate(
        "getComputedStyle(document.body).color"
    )


def test_links_are_underlined_and_readable_in_the_light_theme(page: Any, main_pages: dict[str, str]) -> None:
    page.emulate_media(color_scheme="light")
    for name in ("overview", "session", "request"):
        visit(page, main_pages[name])
        links = page.evaluate(CONTRAST_JS, "main a")
        assert links, name
        low = [item for item in links if item["contrast"] < 4.5 or not item["underlined"]]
        assert not low, f"{name}: links not underlined or below 4.5:1: {low}"
        muted = page.evaluate(CONTRAST_JS, "main .muted, main th")
        low = [item for item in muted if item["contrast"] < 4.5]
        assert not low, f"{name}: secondary text below 4.5:1: {low}"


def test_the_keyboard_reaches_the_page_with_a_visible_focus_ring(
    page: Any, main_pages: dict[str, str], screenshot: Any
) -> None:
    visit(page, main_pages["session"])
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "(() => { const e = document.activeElement, s = getComputedStyle(e); return"
        " {inMain: !!e.closest('main'), style: s.outlineStyle, width: parseFloat(s.outlineWidth)}; })()"
    )
    assert focused["inMain"], focused
    assert focused["style"] != "none", focused
    assert focused["width"] >= 2, focused
    screenshot("focus")


def test_charts_have_no_toolbar_over_their_titles(page: Any, main_pages: dict[str, str]) -> None:
    visit(page, main_pages["session"])
    charts = page.locator(".js-plotly-plot")
    expect(charts.first.locator(".main-svg").first).to_be_visible()
    assert charts.count() >= 1
    charts.first.hover()
    expect(page.locator(".modebar")).to_have_count(0)


def test_the_main_pages_load_without_console_errors_or_failed_requests(
    page: Any, main_pages: dict[str, str], screenshot: Any
) -> None:
    problems: list[str] = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("requestfailed", lambda request: problems.append(f"failed: {request.url}"))
    page.on(
        "response",
        lambda response: response.status >= 400 and problems.append(f"{response.status}: {response.url}"),
    )
    for name, url in main_pages.items():
        visit(page, url)
        # The icons a browser asks for on its own, whether or not this headless one does.
        icons = page.eval_on_selector_all("link[rel=icon]", "(links) => links.map((link) => link.href)")
        assert len(icons) == 2, name
        for icon in icons:
            response = page.request.get(icon)
            assert response.ok, f"{name}: {icon} answered {response.status}"
            assert response.headers["content-type"].startswith("image/"), icon
        assert not problems, f"{name}: {problems}"
    screenshot("last-page")
