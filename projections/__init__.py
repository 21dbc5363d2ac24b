"""Cachescope's engine: importers, folds and cache analysis as plain Python, with no framework."""
