"""Use cases that touch the database: ingest, summaries, folds, analyses."""
