"""The alerts page (open and resolved; acknowledge and mute for operators) and the rules page (admins)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.access.roles import ADMIN, OPERATOR, VIEWER, has_role, role_required
from dashboard.alerts.evaluation import alert_acknowledge, alert_mute, rule_destinations
from dashboard.alerts.messages import alert_links, figure_text, metric_label
from dashboard.models import Alert, AlertRule

RESOLVED_LISTED = 50
MUTE_HOURS = ((1, "1 hour"), (4, "4 hours"), (24, "a day"), (168, "a week"))


class AlertRuleForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = AlertRule
        fields = [
            "name",
            "metric",
            "cause",
            "slice",
            "current_hours",
            "baseline_days",
            "threshold",
            "min_requests",
            "webhook_url",
            "email_to",
            "enabled",
        ]
        widgets = {"webhook_url": forms.URLInput(attrs={"placeholder": "https://hooks.example/…"})}


class MuteForm(forms.Form):
    hours = forms.TypedChoiceField(choices=[(0, "unmute"), *MUTE_HOURS], coerce=int)


def _row(alert: Alert) -> dict[str, Any]:
    rule = alert.rule
    return {
        "alert": alert,
        "metric": metric_label(rule),
        "baseline": figure_text(rule, alert.baseline),
        "current": figure_text(rule, alert.current),
        "links": alert_links(alert),
    }


@require_GET
@role_required(VIEWER)
def alert_list(request: HttpRequest) -> HttpResponse:
    """Open alerts first (newest first), then the latest resolved ones."""
    now = timezone.now()
    alerts = Alert.objects.select_related("rule")
    context = {
        "open": [_row(alert) for alert in alerts.open()],
        "resolved": [_row(alert) for alert in alerts.filter(status=Alert.Status.RESOLVED)[:RESOLVED_LISTED]],
        "now": now,
        "mute_hours": MUTE_HOURS,
        "can_act": has_role(request.user, OPERATOR),
        "can_edit_rules": has_role(request.user, ADMIN),
        "rules": AlertRule.objects.count(),
    }
    return render(request, "alerts/alert_list.html", context)


@require_POST
@role_required(OPERATOR)
def alert_acknowledge_view(request: HttpRequest, alert_id: int) -> HttpResponse:
    alert = get_object_or_404(Alert, pk=alert_id)
    if alert_acknowledge(alert=alert, by=request.user.get_username(), now=timezone.now()):
        messages.success(request, f"Alert for {alert.slice_label} acknowledged.")
    else:
        messages.info(request, f"Alert for {alert.slice_label} was already acknowledged or resolved.")
    return HttpResponseRedirect(reverse("dashboard:alerts"))


@require_POST
@role_required(OPERATOR)
def alert_mute_view(request: HttpRequest, alert_id: int) -> HttpResponse:
    alert = get_object_or_404(Alert, pk=alert_id)
    form = MuteForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose how long to mute the alert for.")
        return HttpResponseRedirect(reverse("dashboard:alerts"))
    hours = form.cleaned_data["hours"]
    until = alert_mute(alert=alert, hours=hours, now=timezone.now())
    if hours:
        messages.success(
            request, f"Nothing is sent for {alert.slice_label} until {until:%Y-%m-%d %H:%M} UTC."
        )
    else:
        messages.success(request, f"Alert for {alert.slice_label} unmuted.")
    return HttpResponseRedirect(reverse("dashboard:alerts"))


def _rules_context(form: AlertRuleForm, editing: AlertRule | None) -> dict[str, Any]:
    rules = list(AlertRule.objects.all())
    return {
        "form": form,
        "editing": editing,
        "rules": [
            {"rule": rule, "metric": metric_label(rule), "destinations": rule_destinations(rule)}
            for rule in rules
        ],
    }


@role_required(ADMIN)
@require_http_methods(["GET", "POST"])
def rule_list(request: HttpRequest) -> HttpResponse:
    """The rules; a POST adds one (nothing is saved when any field is wrong)."""
    form = AlertRuleForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        rule = form.save()
        messages.success(request, f"Rule {rule.name} added.")
        return HttpResponseRedirect(reverse("dashboard:alert_rules"))
    status = 400 if form.errors else 200
    return render(request, "alerts/rules.html", _rules_context(form, None), status=status)


@role_required(ADMIN)
@require_http_methods(["GET", "POST"])
def rule_edit(request: HttpRequest, rule_id: int) -> HttpResponse:
    rule = get_object_or_404(AlertRule, pk=rule_id)
    form = AlertRuleForm(request.POST or None, instance=rule)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Rule {rule.name} saved.")
        return HttpResponseRedirect(reverse("dashboard:alert_rules"))
    status = 400 if form.errors else 200
    return render(request, "alerts/rules.html", _rules_context(form, rule), status=status)


@role_required(ADMIN)
@require_POST
def rule_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    rule = get_object_or_404(AlertRule, pk=rule_id)
    rule.delete()
    messages.success(request, f"Rule {rule.name} and its alerts deleted.")
    return HttpResponseRedirect(reverse("dashboard:alert_rules"))
