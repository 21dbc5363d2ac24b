"""Partial indexes for a re-fold run page's lists of divergences and errors: a run over a fleet has a
result per session and only a few of them diverge or fail. Each index holds only those rows."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0027_warning_groups"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="foldrunresult",
            index=models.Index(
                condition=models.Q(("divergent_seq__isnull", False)),
                fields=["run", "session"],
                name="fold_result_diverged",
            ),
        ),
        migrations.AddIndex(
            model_name="foldrunresult",
            index=models.Index(
                condition=models.Q(("status", "error")), fields=["run", "session"], name="fold_result_errored"
            ),
        ),
    ]
