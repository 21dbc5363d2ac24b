"""What every reader shares: bounded streaming JSON lines (plain or zstd-framed), timestamps, the
limits every door shares, storable JSON, and the numbering of the events a reader emits.

May import: the standard library and the log model at the top of ``projections``.
"""
