"""A price for every model family the provider rules know (projections/providers/rules.py), so a
session on DeepSeek V4 or a Claude 5 model is priced like one on Sonnet 4 rather than left out.

Prices are USD per million tokens, standard (non-batch) tier. Rows an admin already has are kept
as they are; rows this migration adds and nobody edited are removed again when it is reversed.

Where the figures were read, on 2026-12-04:
- Anthropic: https://platform.claude.com/docs/en/about-claude/pricing, the "Model pricing" table
  (Fable 5.1 and Mythos 5.1 read at $0.25, Fable 5 and Mythos 5 at $1, Opus 5 at $0.50), and the
  model pages under /docs/en/models/<id>/overview for Opus 5.5 ($4 / $20, writes $5 and $8, reads
  $0.20: 0.05x) and Sonnet 5 ($2 / $10, writes $2.50 and $4, reads $0.20). Sonnet 5.5 shares
  Sonnet 5's prices but for its reads, cut to $0.10 (0.05x) on 2026-10-07. Claude 3.x: Sonnet 3.5
  as Sonnet 3.7, Opus 3 as Opus 4.
- OpenAI: https://developers.openai.com/api/docs/pricing (GPT-5.5 $5 / cached $0.50 / $30, GPT-5.4
  $2.50 / $0.25 / $15 and its mini and nano, GPT-5.1 as GPT-5, GPT-5.2 $1.75 / $0.175 / $14). Cache
  writes are free before the GPT-5.6 family, so they are priced as uncached input.
- DeepSeek: https://api-docs.deepseek.com/quick_start/pricing. Since 2026-08-16 DeepSeek bills a
  peak rate (01:00-04:00 and 06:00-10:00 UTC on weekdays) and half of it off-peak; a price row has
  no time of day, so these are the peak rates, an upper bound. deepseek-flash (V4.1 Flash) $0.30 /
  hit $0.006 / $1.20; the legacy name deepseek-v4-flash is served by it at its price; deepseek-v4-pro
  $1.32 / hit $0.044 / $3.96. No write fee: writes are priced as a cache miss.
- Gemini: https://ai.google.dev/gemini-api/docs/pricing (2.0 Flash, 3 Pro and 3 Flash, prompts up
  to 200k tokens).

Families left without a price because no published figure was found: Claude Mythos Preview and
GPT-5.6 and later (tests/dashboard/test_price_seed.py names them); their sessions say "no price for
MODEL" with a link to add one.
"""

import datetime
from decimal import Decimal

from django.db import migrations

READ_ON = datetime.date(2026, 12, 4)
ANTHROPIC = "https://platform.claude.com/docs/en/about-claude/pricing"
OPENAI = "https://developers.openai.com/api/docs/pricing"
DEEPSEEK = "https://api-docs.deepseek.com/quick_start/pricing"
GEMINI = "https://ai.google.dev/gemini-api/docs/pricing"

# pattern, provider, input, cache write 5m, cache write 1h, cache read, output, source
SEED = [
    ("claude-fable-5-1", "anthropic", "10", "12.50", "20", "0.25", "50", ANTHROPIC),
    ("claude-mythos-5-1", "anthropic", "10", "12.50", "20", "0.25", "50", ANTHROPIC),
    ("claude-fable-5", "anthropic", "10", "12.50", "20", "1", "50", ANTHROPIC),
    ("claude-mythos-5", "anthropic", "10", "12.50", "20", "1", "50", ANTHROPIC),
    ("claude-opus-5-5", "anthropic", "4", "5", "8", "0.20", "20", ANTHROPIC),
    ("claude-opus-5", "anthropic", "5", "6.25", "10", "0.50", "25", ANTHROPIC),
    ("claude-sonnet-5-5", "anthropic", "2", "2.50", "4", "0.10", "10", ANTHROPIC),
    ("claude-sonnet-5", "anthropic", "2", "2.50", "4", "0.20", "10", ANTHROPIC),
    ("claude-3-5-sonnet", "anthropic", "3", "3.75", "6", "0.30", "15", ANTHROPIC),
    ("claude-3-opus", "anthropic", "15", "18.75", "30", "1.50", "75", ANTHROPIC),
    ("gpt-5.5", "openai", "5", "5", "5", "0.50", "30", OPENAI),
    ("gpt-5.4", "openai", "2.50", "2.50", "2.50", "0.25", "15", OPENAI),
    ("gpt-5.4-mini", "openai", "0.75", "0.75", "0.75", "0.075", "4.50", OPENAI),
    ("gpt-5.4-nano", "openai", "0.20", "0.20", "0.20", "0.02", "1.25", OPENAI),
    ("gpt-5.2", "openai", "1.75", "1.75", "1.75", "0.175", "14", OPENAI),
    ("gpt-5.1", "openai", "1.25", "1.25", "1.25", "0.125", "10", OPENAI),
    ("deepseek-flash", "deepseek", "0.30", "0.30", "0.30", "0.006", "1.20", DEEPSEEK),
    ("deepseek-v4-flash", "deepseek", "0.30", "0.30", "0.30", "0.006", "1.20", DEEPSEEK),
    ("deepseek-v4-pro", "deepseek", "1.32", "1.32", "1.32", "0.044", "3.96", DEEPSEEK),
    ("gemini-2.0-flash", "gemini", "0.10", "0.10", "0.10", "0.025", "0.40", GEMINI),
    ("gemini-3-pro", "gemini", "2", "2", "2", "0.20", "12", GEMINI),
    ("gemini-3-flash", "gemini", "0.50", "0.50", "0.50", "0.05", "3", GEMINI),
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
    apps.get_model("dashboard", "ModelPrice").objects.filter(
        pattern__in=patterns, updated_by=None, read_on=READ_ON
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0042_request_miss_cost"),
    ]

    operations = [
        migrations.RunPython(seed_prices, unseed_prices),
    ]
