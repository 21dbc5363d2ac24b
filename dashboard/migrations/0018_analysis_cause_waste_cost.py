from django.db import migrations, models

BATCH = 500


def causes_from_stored_analyses(apps, schema_editor):
    """Give every stored analysis the cause its JSON already names, so the requests list filters on it.

    Wasted tokens and cost need each session's requests in order and the price table:
    ``manage.py refresh_request_figures`` fills them (and a new analysis of a session does).
    """
    RequestAnalysis = apps.get_model("dashboard", "RequestAnalysis")
    pending = []
    rows = RequestAnalysis.objects.exclude(data__first_change=None).values_list(
        "pk", "data__first_change__cause"
    )
    for pk, cause in rows.iterator():
        if isinstance(cause, str) and cause:
            pending.append(RequestAnalysis(pk=pk, cause=cause[:40]))
        if len(pending) == BATCH:
            RequestAnalysis.objects.bulk_update(pending, ["cause"])
            pending = []
    RequestAnalysis.objects.bulk_update(pending, ["cause"])


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0017_request_chain"),
    ]

    operations = [
        migrations.AddField(
            model_name="requestanalysis",
            name="cause",
            field=models.CharField(
                blank=True,
                help_text="The cause of the first change from the previous request; empty when nothing changed.",
                max_length=40,
            ),
        ),
        migrations.AddField(
            model_name="requestanalysis",
            name="cost",
            field=models.DecimalField(
                blank=True,
                decimal_places=8,
                help_text="What the request's reported usage cost in USD; null when no price matches its model.",
                max_digits=18,
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="requestanalysis",
            name="wasted_tokens",
            field=models.BigIntegerField(
                blank=True,
                help_text="Tokens the previous request of the lineage left cached that this one processed "
                "again; null until figured (see dashboard.services.request_figures).",
                null=True,
            ),
        ),
        migrations.AddIndex(
            model_name="requestanalysis",
            index=models.Index(fields=["cause"], name="analysis_cause"),
        ),
        migrations.AddIndex(
            model_name="requestanalysis",
            index=models.Index(fields=["wasted_tokens"], name="analysis_wasted"),
        ),
        migrations.AddIndex(
            model_name="requestanalysis",
            index=models.Index(fields=["cost"], name="analysis_cost"),
        ),
        migrations.RunPython(causes_from_stored_analyses, migrations.RunPython.noop),
    ]
