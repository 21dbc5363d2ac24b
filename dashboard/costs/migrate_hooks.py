"""What ``migrate`` does once the schema is current, beyond the migrations themselves."""

from __future__ import annotations

from typing import Any

from django.apps import apps as current_apps

APP = "dashboard"


def make_missing_cost_ledgers(
    *, verbosity: int = 1, stdout: Any = None, plan: Any = None, apps: Any = None, **_: Any
) -> None:
    """Give every session stored before cost ledgers existed its ledger, and every session stored
    before sessions kept their cost that cost (``post_migrate``).

    After the migrations rather than in one: the ledger is made by today's code, which reads today's
    tables, so it runs only when ``migrate`` left every model of the app as the code has it (not
    after a migration backwards, nor after ``flush``, which sends the same signal with empty tables).
    """
    if plan is None or apps is None or any(backwards for _migration, backwards in plan):
        return
    if not _schema_is_current(apps):
        return
    # Loaded here, on migrate, rather than with the app: other commands never need the cost rules.
    from dashboard.costs.session_costs import ledgers_make_missing, sessions_price_unpriced

    made = ledgers_make_missing()
    if made and verbosity and stdout is not None:
        stdout.write(f"  Made the cost ledgers of {made} sessions stored before ledgers existed.\n")
    priced = sessions_price_unpriced()
    if priced and verbosity and stdout is not None:
        stdout.write(f"  Priced {priced} sessions stored before sessions kept their cost.\n")


def _schema_is_current(migrated: Any) -> bool:
    """Whether the state the migrations left (``migrated``, their apps registry) has every model of
    the app with the columns the code's models have."""
    for model in current_apps.get_app_config(APP).get_models():
        try:
            historical = migrated.get_model(APP, model.__name__)
        except LookupError:
            return False
        if _columns(historical) != _columns(model):
            return False
    return True


def _columns(model: Any) -> set[str]:
    return {field.column for field in model._meta.concrete_fields}
