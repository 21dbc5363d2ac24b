from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

import dashboard.views.analysis as analysis_views
import dashboard.views.otlp as otlp_views
from dashboard import api
from dashboard.views import (
    admin_pages,
    favicon,
    glossary,
    ingest,
    overview,
    projections,
    request_export,
    requests,
    session_export,
    session_live,
    session_timeline,
    sessions,
    warnings,
)

app_name = "dashboard"

dashboard_patterns = [
    path("", overview.overview, name="overview"),
    path("overview/wasted-writes/", overview.wasted_writes, name="overview_wasted"),
    path("sessions/", sessions.session_list, name="sessions"),
    path("sessions/export.<str:fmt>", session_export.session_export, name="sessions_export"),
    path("sessions/<int:session_id>/", sessions.session_detail, name="session"),
    path("sessions/<int:session_id>/events/", session_timeline.session_events_hx, name="session_events"),
    path(
        "sessions/<int:session_id>/host-notes/",
        session_timeline.session_host_notes_hx,
        name="session_host_notes",
    ),
    path("sessions/<int:session_id>/live/", session_live.session_live_hx, name="session_live"),
    path("sessions/<int:session_id>/analyse/", analysis_views.session_analyse, name="session_analyse"),
    path("requests/", requests.request_list, name="requests"),
    path("requests/export.<str:fmt>", request_export.request_export, name="requests_export"),
    path("requests/<int:request_id>/", requests.request_detail, name="request"),
    path("warnings/", warnings.warning_list, name="warnings"),
    path("glossary/", glossary.glossary, name="glossary"),
    path("projections/", projections.projection_list, name="projections"),
    path("projections/runs/<int:run_id>/", projections.fold_run, name="fold_run"),
    path(
        "projections/runs/<int:run_id>/progress/",
        projections.fold_run_progress_hx,
        name="fold_run_progress",
    ),
    path("ingest/", ingest.ingest_page, name="ingest"),
    path("ingest/<int:job_id>/", ingest.ingest_job, name="ingest_job"),
    path("ingest/<int:job_id>/retry/", ingest.ingest_job_retry, name="ingest_job_retry"),
    path("manage/tokens/", admin_pages.token_list, name="tokens"),
    path("manage/tokens/<int:token_id>/revoke/", admin_pages.token_revoke_view, name="token_revoke"),
    path("manage/prices/", admin_pages.price_list, name="prices"),
    path("manage/prices/<int:price_id>/", admin_pages.price_edit, name="price_edit"),
    path("manage/prices/<int:price_id>/delete/", admin_pages.price_delete, name="price_delete"),
    path("manage/provider-rules/", admin_pages.provider_rules_page, name="provider_rules"),
]

urlpatterns = [
    path("", include((dashboard_patterns, "dashboard"))),
    path("api/v1/ingest", api.ingest, name="api_ingest"),
    path("api/v1/batches", api.batches, name="api_batches"),
    path("api/v1/batches/<int:job_id>", api.batch, name="api_batch"),
    # OTLP/HTTP: the paths an exporter appends to OTEL_EXPORTER_OTLP_ENDPOINT.
    path("v1/logs", otlp_views.logs, name="otlp_logs"),
    path("v1/traces", otlp_views.traces, name="otlp_traces"),
    path("v1/metrics", otlp_views.metrics, name="otlp_metrics"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("favicon.ico", favicon.favicon, name="favicon"),
]
