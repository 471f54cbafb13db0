"""The SQL face: segtools' own reads registered as views of an embedded engine (DuckDB).

``pushdown`` reads the query's plan for what a view must hold (topics, partitions, offsets,
times, columns), ``views`` turns that into the library's selection, and ``engine`` runs the
query with bounded memory and temporary files. The room has no reader of its own: every row
comes from :meth:`segtools.api.LogDirs.to_arrow` or an analysis the other faces print.
"""
