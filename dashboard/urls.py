from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard.lazy_views import LazyView


def view(dotted_path: str) -> LazyView:
    """A view of ``dashboard``, imported on its first request (see ``lazy_views``)."""
    return LazyView(f"dashboard.{dotted_path}")


app_name = "dashboard"

dashboard_patterns = [
    path("", view("views.overview.overview"), name="overview"),
    path("overview/wasted-writes/", view("views.overview.wasted_writes"), name="overview_wasted"),
    path("sessions/", view("views.sessions.session_list"), name="sessions"),
    path("sessions/export.<str:fmt>", view("views.session_export.session_export"), name="sessions_export"),
    path("sessions/<int:session_id>/", view("views.sessions.session_detail"), name="session"),
    path(
        "sessions/<int:session_id>/export.json",
        view("views.session_export.session_json_export"),
        name="session_export",
    ),
    path(
        "sessions/<int:session_id>/events/",
        view("views.session_timeline.session_events_hx"),
        name="session_events",
    ),
    path(
        "sessions/<int:session_id>/host-notes/",
        view("views.session_timeline.session_host_notes_hx"),
        name="session_host_notes",
    ),
    path("sessions/<int:session_id>/live/", view("views.session_live.session_live_hx"), name="session_live"),
    path(
        "sessions/<int:session_id>/analyse/", view("views.analysis.session_analyse"), name="session_analyse"
    ),
    path("requests/", view("views.requests.request_list"), name="requests"),
    path("requests/export.<str:fmt>", view("views.request_export.request_export"), name="requests_export"),
    path("requests/<int:request_id>/", view("views.requests.request_detail"), name="request"),
    path("warnings/", view("views.warnings.warning_list"), name="warnings"),
    path("savings/", view("views.savings.savings"), name="savings"),
    path("savings/export.<str:fmt>", view("views.savings.savings_export"), name="savings_export"),
    path("glossary/", view("views.glossary.glossary"), name="glossary"),
    path("projections/", view("views.projections.projection_list"), name="projections"),
    path("projections/runs/<int:run_id>/", view("views.projections.fold_run"), name="fold_run"),
    path(
        "projections/runs/<int:run_id>/progress/",
        view("views.projections.fold_run_progress_hx"),
        name="fold_run_progress",
    ),
    path("ingest/", view("views.ingest.ingest_page"), name="ingest"),
    path("ingest/<int:job_id>/", view("views.ingest.ingest_job"), name="ingest_job"),
    path("ingest/<int:job_id>/retry/", view("views.ingest.ingest_job_retry"), name="ingest_job_retry"),
    path("manage/tokens/", view("views.admin_pages.token_list"), name="tokens"),
    path(
        "manage/tokens/<int:token_id>/revoke/",
        view("views.admin_pages.token_revoke_view"),
        name="token_revoke",
    ),
    path("manage/prices/", view("views.admin_pages.price_list"), name="prices"),
    path("manage/prices/<int:price_id>/", view("views.admin_pages.price_edit"), name="price_edit"),
    path("manage/prices/<int:price_id>/delete/", view("views.admin_pages.price_delete"), name="price_delete"),
    path("manage/provider-rules/", view("views.admin_pages.provider_rules_page"), name="provider_rules"),
]

urlpatterns = [
    path("", include((dashboard_patterns, "dashboard"))),
    path("api/v1/ingest", view("api.ingest"), name="api_ingest"),
    path("api/v1/batches", view("api.batches"), name="api_batches"),
    path("api/v1/batches/<int:job_id>", view("api.batch"), name="api_batch"),
    # OTLP/HTTP: the paths an exporter appends to OTEL_EXPORTER_OTLP_ENDPOINT.
    path("v1/logs", view("views.otlp.logs"), name="otlp_logs"),
    path("v1/traces", view("views.otlp.traces"), name="otlp_traces"),
    path("v1/metrics", view("views.otlp.metrics"), name="otlp_metrics"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("favicon.ico", view("views.favicon.favicon"), name="favicon"),
]
