"""A request's re-written tokens are now the session cost's rule, request by request, so the
overview's ranking and the session page give one figure.

Rows analysed before keep the figure of the old rule (writes inside a prefix any earlier request had
written, by our token estimate) until ``manage.py refresh_request_figures`` figures them again, as
after any release that changes the request figures; a new analysis of a session does it too.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0029_session_cost_ledger"),
    ]

    operations = [
        migrations.AlterField(
            model_name="requestanalysis",
            name="rewritten_tokens",
            field=models.BigIntegerField(
                default=0,
                help_text="Cache writes of tokens the previous request of the lineage had cached (the session cost's re-written tokens, request by request); figured with wasted_tokens.",
            ),
        ),
    ]
