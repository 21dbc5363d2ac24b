"""Admin pages: API tokens (created with the secret shown once, listed, revoked), the price table, and
the provider rules the cache engine judges requests by (read-only)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from dashboard.access.roles import ADMIN, role_required
from dashboard.access.tokens import token_create, token_revoke
from dashboard.costs.session_costs import sessions_reprice
from dashboard.models import ApiToken, ModelPrice, Source
from projections.providers import mechanics as cache_mechanics
from projections.providers import rules as provider_rules


class TokenForm(forms.Form):
    source = forms.SlugField(
        max_length=100,
        help_text="The agent host; a new name creates the source.",
        widget=forms.TextInput(attrs={"list": "source-names"}),
    )
    name = forms.CharField(max_length=100, help_text="Where the token will live, e.g. build-farm-7.")


class PriceForm(forms.ModelForm):  # type: ignore[type-arg]
    source_url = forms.URLField(
        max_length=500, required=False, assume_scheme="https", help_text="The page the price was read from."
    )

    class Meta:
        model = ModelPrice
        fields = [
            "pattern",
            "provider",
            "input",
            "cache_write_5m",
            "cache_write_1h",
            "cache_read",
            "output",
            "source_url",
            "read_on",
        ]
        widgets = {"read_on": forms.DateInput(attrs={"type": "date"})}


def _tokens_context(
    form: TokenForm, secret: str | None = None, token: ApiToken | None = None
) -> dict[str, Any]:
    return {
        "form": form,
        "secret": secret,
        "new_token": token,
        "tokens": ApiToken.objects.select_related("source", "created_by"),
        "sources": Source.objects.values_list("name", flat=True),
    }


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def token_list(request: HttpRequest) -> HttpResponse:
    """The tokens of every source; a POST creates one and shows its secret on this answer only."""
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        source, _ = Source.objects.get_or_create(name=form.cleaned_data["source"])
        creator = request.user if isinstance(request.user, User) else None
        token, secret = token_create(source=source, name=form.cleaned_data["name"], created_by=creator)
        response = render(request, "dashboard/tokens.html", _tokens_context(TokenForm(), secret, token))
        response["Cache-Control"] = "no-store"
        return response
    status = 400 if form.errors else 200
    return render(request, "dashboard/tokens.html", _tokens_context(form), status=status)


@require_POST
@role_required(ADMIN)
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id)
    if token_revoke(token=token, now=timezone.now()):
        messages.success(request, f"Token {token.prefix}… of {token.source} is revoked.")
    return HttpResponseRedirect(reverse("dashboard:tokens"))


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def price_list(request: HttpRequest) -> HttpResponse:
    """The price table; a POST adds a row. ``?pattern=MODEL`` (the link beside "no price for MODEL")
    fills in the pattern of the row to add."""
    initial = {"pattern": request.GET.get("pattern", "")[:120], "read_on": timezone.localdate()}
    form = PriceForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        price = form.save(commit=False)
        price.updated_by = request.user
        price.save()
        _repriced(request, f"Price for {price.pattern} added.")
        return HttpResponseRedirect(reverse("dashboard:prices"))
    context = {"form": form, "prices": ModelPrice.objects.select_related("updated_by"), "editing": None}
    return render(request, "dashboard/prices.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def price_edit(request: HttpRequest, price_id: int) -> HttpResponse:
    price = get_object_or_404(ModelPrice, pk=price_id)
    form = PriceForm(request.POST or None, instance=price)
    if request.method == "POST" and form.is_valid():
        price = form.save(commit=False)
        price.updated_by = request.user
        price.save()
        _repriced(request, f"Price for {price.pattern} saved.")
        return HttpResponseRedirect(reverse("dashboard:prices"))
    context = {"form": form, "prices": ModelPrice.objects.select_related("updated_by"), "editing": price}
    return render(request, "dashboard/prices.html", context, status=400 if form.errors else 200)


@require_POST
@role_required(ADMIN)
def price_delete(request: HttpRequest, price_id: int) -> HttpResponse:
    price = get_object_or_404(ModelPrice, pk=price_id)
    price.delete()
    _repriced(request, f"Price for {price.pattern} deleted.")
    return HttpResponseRedirect(reverse("dashboard:prices"))


def _repriced(request: HttpRequest, done: str) -> None:
    """Price every session again at the changed table, so the list sorts by today's costs, and say so."""
    changed = sessions_reprice()
    messages.success(request, f"{done} {changed} session cost{'s' if changed != 1 else ''} changed.")


@role_required(ADMIN)  # before the method check, so a non-admin learns nothing about the page
@require_http_methods(["GET"])
def provider_rules_page(request: HttpRequest) -> HttpResponse:
    """The dated provider rules, read-only: each family's figures with the page and day they come
    from, and the rows of the price table that price it (the one home of prices), or a link to add
    the first."""
    prices: dict[str, list[ModelPrice]] = {}
    for price in ModelPrice.objects.all():
        family = provider_rules.family_of(price.pattern.replace("*", ""))
        if family is not None:
            prices.setdefault(family.family, []).append(price)
    context = {
        "checked": cache_mechanics.CHECKED,
        "mechanics": list(cache_mechanics.MECHANICS.values()),
        "groups": [
            (provider, [_rule_row(rule, prices.get(rule.family, [])) for rule in rules])
            for provider, rules in provider_rules.rules_by_provider().items()
        ],
        "thinking_source": provider_rules.THINKING_SOURCE,
    }
    return render(request, "dashboard/provider_rules.html", context)


def _rule_row(rule: provider_rules.ModelRule, prices: list[ModelPrice]) -> dict[str, Any]:
    """One family as the page shows it: the figures, the sources they were read from, its prices."""
    sources = [rule.minimum_source, rule.multipliers_source, rule.window_source]
    return {
        "rule": rule,
        "writes": ", ".join(f"{ttl} {factor:g}x" for ttl, factor in rule.write_multipliers.items())
        or "no fee",
        "read": f"{rule.read_multiplier:g}x" if rule.read_multiplier is not None else "by model",
        "hosts": ", ".join(f"{host} {window:,}" for host, window in rule.host_windows),
        "change_note": any(source is not None and source.basis == "change-note" for source in sources),
        "prices": prices,
        "catch_all": rule.family.startswith("Other "),
    }
