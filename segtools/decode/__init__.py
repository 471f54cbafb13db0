"""Decoding a log's bytes: the batch walk, record kernels, legacy messages, salvage.

The compiled kernels (``*.pyx``) do the per-batch and per-record work; the Python modules beside
them choose windows, turn the kernels' stop codes into findings, and keep the public shapes.
"""
