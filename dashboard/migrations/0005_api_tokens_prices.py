"""API tokens and the model price table, seeded with public list prices.

Prices are USD per million tokens, standard (non-batch) tier, prompts below any long-context
threshold. Cache writes of providers that do not bill them separately (OpenAI, DeepSeek, Gemini
implicit caching) are priced as uncached input, which is how those providers bill them.

Where the figures were read, on 2026-12-02:
- Anthropic: https://platform.claude.com/docs/en/about-claude/pricing (and its zh-CN copy, the
  same table), the "Model pricing" table with its 5m/1h cache-write and cache-hit columns.
- OpenAI: the official page https://developers.openai.com/api/docs/pricing, cross-checked against
  github/docs data/tables/copilot/models-and-pricing.yml (GPT-5 mini, GPT-4.1) and the
  openai_responses Hex package's copy of platform.openai.com/docs/pricing (GPT-4.1, GPT-4o, o-series).
- DeepSeek: https://api-docs.deepseek.com/quick_start/pricing (deepseek-chat and deepseek-reasoner
  both serve DeepSeek-V3.2: cache miss 0.28, cache hit 0.028, output 0.42).
- Gemini: https://ai.google.dev/gemini-api/docs/pricing (2.5 family, prompts up to 200k tokens).
Admins correct any of these on the Prices page; the page shows each row's source and date.
"""

import datetime
from decimal import Decimal

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

READ_ON = datetime.date(2026, 12, 2)
ANTHROPIC = "https://platform.claude.com/docs/en/about-claude/pricing"
OPENAI = "https://developers.openai.com/api/docs/pricing"
DEEPSEEK = "https://api-docs.deepseek.com/quick_start/pricing"
GEMINI = "https://ai.google.dev/gemini-api/docs/pricing"

# pattern, provider, input, cache write 5m, cache write 1h, cache read, output, source
SEED = [
    ("claude-opus-4", "anthropic", "15", "18.75", "30", "1.50", "75", ANTHROPIC),
    ("claude-opus-4-1", "anthropic", "15", "18.75", "30", "1.50", "75", ANTHROPIC),
    ("claude-opus-4-5", "anthropic", "5", "6.25", "10", "0.50", "25", ANTHROPIC),
    ("claude-opus-4-6", "anthropic", "5", "6.25", "10", "0.50", "25", ANTHROPIC),
    ("claude-opus-4-7", "anthropic", "5", "6.25", "10", "0.50", "25", ANTHROPIC),
    ("claude-opus-4-8", "anthropic", "5", "6.25", "10", "0.50", "25", ANTHROPIC),
    ("claude-sonnet-4", "anthropic", "3", "3.75", "6", "0.30", "15", ANTHROPIC),
    ("claude-sonnet-4-5", "anthropic", "3", "3.75", "6", "0.30", "15", ANTHROPIC),
    ("claude-sonnet-4-6", "anthropic", "3", "3.75", "6", "0.30", "15", ANTHROPIC),
    ("claude-3-7-sonnet", "anthropic", "3", "3.75", "6", "0.30", "15", ANTHROPIC),
    ("claude-haiku-4-5", "anthropic", "1", "1.25", "2", "0.10", "5", ANTHROPIC),
    ("claude-3-5-haiku", "anthropic", "0.80", "1", "1.6", "0.08", "4", ANTHROPIC),
    ("claude-3-haiku", "anthropic", "0.25", "0.30", "0.50", "0.03", "1.25", ANTHROPIC),
    ("gpt-5", "openai", "1.25", "1.25", "1.25", "0.125", "10", OPENAI),
    ("gpt-5-mini", "openai", "0.25", "0.25", "0.25", "0.025", "2", OPENAI),
    ("gpt-5-nano", "openai", "0.05", "0.05", "0.05", "0.005", "0.40", OPENAI),
    ("gpt-4.1", "openai", "2", "2", "2", "0.50", "8", OPENAI),
    ("gpt-4.1-mini", "openai", "0.40", "0.40", "0.40", "0.10", "1.60", OPENAI),
    ("gpt-4.1-nano", "openai", "0.10", "0.10", "0.10", "0.025", "0.40", OPENAI),
    ("gpt-4o", "openai", "2.50", "2.50", "2.50", "1.25", "10", OPENAI),
    ("gpt-4o-mini", "openai", "0.15", "0.15", "0.15", "0.075", "0.60", OPENAI),
    ("o1", "openai", "15", "15", "15", "7.50", "60", OPENAI),
    ("o3", "openai", "2", "2", "2", "0.50", "8", OPENAI),
    ("o3-mini", "openai", "1.10", "1.10", "1.10", "0.55", "4.40", OPENAI),
    ("o4-mini", "openai", "1.10", "1.10", "1.10", "0.275", "4.40", OPENAI),
    ("deepseek-chat", "deepseek", "0.28", "0.28", "0.28", "0.028", "0.42", DEEPSEEK),
    ("deepseek-reasoner", "deepseek", "0.28", "0.28", "0.28", "0.028", "0.42", DEEPSEEK),
    ("gemini-2.5-pro", "gemini", "1.25", "1.25", "1.25", "0.125", "10", GEMINI),
    ("gemini-2.5-flash", "gemini", "0.30", "0.30", "0.30", "0.03", "2.50", GEMINI),
    ("gemini-2.5-flash-lite", "gemini", "0.10", "0.10", "0.10", "0.01", "0.40", GEMINI),
]


def seed_prices(apps, schema_editor):  # type: ignore[no-untyped-def]
    ModelPrice = apps.get_model("dashboard", "ModelPrice")
    for pattern, provider, price_in, write_5m, write_1h, read, price_out, url in SEED:
        ModelPrice.objects.get_or_create(
            pattern=pattern,
            defaults={
                "provider": provider,
                "input": Decimal(price_in),
                "cache_write_5m": Decimal(write_5m),
                "cache_write_1h": Decimal(write_1h),
                "cache_read": Decimal(read),
                "output": Decimal(price_out),
                "source_url": url,
                "read_on": READ_ON,
            },
        )


def unseed_prices(apps, schema_editor):  # type: ignore[no-untyped-def]
    patterns = [row[0] for row in SEED]
    apps.get_model("dashboard", "ModelPrice").objects.filter(pattern__in=patterns, updated_by=None).delete()


def _per_million(help_text):  # type: ignore[no-untyped-def]
    return models.DecimalField(
        decimal_places=6,
        help_text=help_text,
        max_digits=12,
        validators=[django.core.validators.MinValueValidator(0)],
    )


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0003_projections"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ModelPrice",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("pattern", models.CharField(max_length=120, unique=True)),
                ("provider", models.CharField(blank=True, max_length=40)),
                ("input", _per_million("Uncached input tokens.")),
                ("output", _per_million("Output tokens, reasoning included.")),
                ("cache_write_5m", _per_million("Cache writes with the default (5-minute) lifetime.")),
                ("cache_write_1h", _per_million("Cache writes with the 1-hour lifetime.")),
                ("cache_read", _per_million("Cache reads (hits).")),
                (
                    "source_url",
                    models.URLField(
                        blank=True, help_text="The page the price was read from.", max_length=500
                    ),
                ),
                ("read_on", models.DateField(help_text="The day the price was read from that page.")),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "updated_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"ordering": ["provider", "pattern"]},
        ),
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "name",
                    models.CharField(help_text="What holds the token, e.g. the host's name.", max_length=100),
                ),
                (
                    "prefix",
                    models.CharField(
                        help_text="The first characters of the secret, to find it.", max_length=16
                    ),
                ),
                ("hash", models.CharField(help_text="Hex SHA-256 of the whole secret.", max_length=64)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "source",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_tokens",
                        to="dashboard.source",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
                "indexes": [models.Index(fields=["prefix"], name="api_token_prefix")],
            },
        ),
        migrations.RunPython(seed_prices, unseed_prices),
    ]
