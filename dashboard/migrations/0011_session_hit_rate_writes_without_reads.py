"""Give the stored sessions the hit rate of the one rule (``projections.hit_rate``).

The summaries used to leave the hit rate null when no request reported a cache read, even when
writes were reported. By the rule, a provider that reports writes but no reads read nothing from the
cache: the rate is 0 when anything was prompted. Those sessions are the only ones whose figure the
rule changes, so only they are updated. Reversing leaves the figures as the rule gives them.
"""

from django.db import migrations
from django.db.models import Q, Sum


def writes_without_reads_read_nothing(apps, schema_editor):  # type: ignore[no-untyped-def]
    Request = apps.get_model("dashboard", "Request")
    Session = apps.get_model("dashboard", "Session")
    sessions = (
        Request.objects.filter(session__hit_rate__isnull=True)
        .values("session_id")
        .annotate(
            read=Sum("cache_read_tokens"),
            uncached=Sum("uncached_input_tokens"),
            write_5m=Sum("cache_write_5m_tokens"),
            write_1h=Sum("cache_write_1h_tokens"),
        )
        .filter(read__isnull=True)
        .filter(Q(write_5m__isnull=False) | Q(write_1h__isnull=False))
        .filter(Q(uncached__gt=0) | Q(write_5m__gt=0) | Q(write_1h__gt=0))
        .values("session_id")
    )
    Session.objects.filter(pk__in=sessions).update(hit_rate=0.0)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0010_request_context_figures"),
    ]

    operations = [
        migrations.RunPython(writes_without_reads_read_nothing, migrations.RunPython.noop),
    ]
