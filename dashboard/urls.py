from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.generic import RedirectView

from dashboard.web.lazy_views import LazyView


def view(dotted_path: str) -> LazyView:
    """A view of ``dashboard``, imported on its first request (see ``lazy_views``)."""
    return LazyView(f"dashboard.{dotted_path}")


app_name = "dashboard"

dashboard_patterns = [
    path("", view("fleet.views.overview"), name="overview"),
    path("overview/wasted-writes/", view("fleet.views.wasted_writes"), name="overview_wasted"),
    path("sessions/", view("sessions.views.session_list"), name="sessions"),
    path("sessions/export.<str:fmt>", view("sessions.export.session_export"), name="sessions_export"),
    path("sessions/<int:session_id>/", view("sessions.views.session_detail"), name="session"),
    path(
        "sessions/<int:session_id>/export.json",
        view("sessions.export.session_json_export"),
        name="session_export",
    ),
    path(
        "sessions/<int:session_id>/events/",
        view("sessions.timeline_views.session_events_hx"),
        name="session_events",
    ),
    path(
        "sessions/<int:session_id>/events/<int:seq>.json",
        view("sessions.timeline_views.session_event_json"),
        name="session_event",
    ),
    path(
        "sessions/<int:session_id>/host-notes/",
        view("sessions.timeline_views.session_host_notes_hx"),
        name="session_host_notes",
    ),
    path("sessions/<int:session_id>/live/", view("sessions.live.session_live_hx"), name="session_live"),
    path("sessions/<int:session_id>/move/", view("sessions.moves.session_move_view"), name="session_move"),
    path(
        "sessions/<int:session_id>/analyse/", view("analysis.views.session_analyse"), name="session_analyse"
    ),
    path("requests/", view("requests.views.request_list"), name="requests"),
    path("requests/export.<str:fmt>", view("requests.export.request_export"), name="requests_export"),
    path("requests/<int:request_id>/", view("requests.views.request_detail"), name="request"),
    path("warnings/", view("analysis.inbox.warning_list"), name="warnings"),
    path("alerts/", view("alerts.views.alert_list"), name="alerts"),
    path(
        "alerts/<int:alert_id>/acknowledge/",
        view("alerts.views.alert_acknowledge_view"),
        name="alert_acknowledge",
    ),
    path("alerts/<int:alert_id>/mute/", view("alerts.views.alert_mute_view"), name="alert_mute"),
    path("savings/", view("savings.views.savings"), name="savings"),
    path("savings/export.<str:fmt>", view("savings.views.savings_export"), name="savings_export"),
    path("glossary/", view("web.glossary_page.glossary"), name="glossary"),
    path("projections/", view("refold.views.projection_list"), name="projections"),
    path("projections/runs/<int:run_id>/", view("refold.views.fold_run"), name="fold_run"),
    path(
        "projections/runs/<int:run_id>/progress/",
        view("refold.views.fold_run_progress_hx"),
        name="fold_run_progress",
    ),
    path("ingest/", view("ingest.views.ingest_page"), name="ingest"),
    path("ingest/<int:job_id>/", view("ingest.views.ingest_job"), name="ingest_job"),
    path("ingest/<int:job_id>/retry/", view("ingest.views.ingest_job_retry"), name="ingest_job_retry"),
    path("manage/tokens/", view("access.admin_pages.token_list"), name="tokens"),
    path(
        "manage/tokens/<int:token_id>/revoke/",
        view("access.admin_pages.token_revoke_view"),
        name="token_revoke",
    ),
    path("manage/prices/", view("access.admin_pages.price_list"), name="prices"),
    path("manage/prices/<int:price_id>/", view("access.admin_pages.price_edit"), name="price_edit"),
    path(
        "manage/prices/<int:price_id>/delete/", view("access.admin_pages.price_delete"), name="price_delete"
    ),
    path("manage/alert-rules/", view("alerts.views.rule_list"), name="alert_rules"),
    path("manage/alert-rules/<int:rule_id>/", view("alerts.views.rule_edit"), name="alert_rule_edit"),
    path(
        "manage/alert-rules/<int:rule_id>/delete/",
        view("alerts.views.rule_delete"),
        name="alert_rule_delete",
    ),
    path("manage/provider-rules/", view("access.admin_pages.provider_rules_page"), name="provider_rules"),
]

urlpatterns = [
    path("", include((dashboard_patterns, "dashboard"))),
    path("api/v1/ingest", view("ingest.api.views.ingest"), name="api_ingest"),
    path("api/v1/batches", view("ingest.api.views.batches"), name="api_batches"),
    path("api/v1/batches/<int:job_id>", view("ingest.api.views.batch"), name="api_batch"),
    # OTLP/HTTP: the paths an exporter appends to OTEL_EXPORTER_OTLP_ENDPOINT.
    path("v1/logs", view("ingest.otlp.views.logs"), name="otlp_logs"),
    path("v1/traces", view("ingest.otlp.views.traces"), name="otlp_traces"),
    path("v1/metrics", view("ingest.otlp.views.metrics"), name="otlp_metrics"),
    # Prometheus scrapes with a bearer token of its own (CACHESCOPE_METRICS_TOKEN), not a login.
    path("metrics", view("alerts.metrics.metrics"), name="metrics"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    # Where people type it: sent on to the login page, with the page to return to.
    path(
        "login/",
        login_not_required(RedirectView.as_view(pattern_name="login", query_string=True, permanent=False)),
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("favicon.ico", view("web.favicon.favicon"), name="favicon"),
    # Outside the pages' namespace: the role check there reads the session, which needs the database.
    path("healthz", view("health.views.healthz"), name="healthz"),
]
