"""Fetching rows from log dirs: the read path every face shares (Python API, Spark, report).

It mirrors a consumer's fetch, on files: choose partitions and offset or time bounds
(:mod:`.plan`, the broker's offset- and time-index lookups), then read the batches in each
byte range, keeping what a consumer would be given (control batches, aborted transactions,
``read_committed``) and building Arrow columns straight from the compiled kernels' output
(:mod:`.rows`, :mod:`.arrow`). Rows come at three levels (records, batches, segments) whose
columns are declared once, in :mod:`.columns`.
"""
