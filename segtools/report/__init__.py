"""The incident report: one self-contained HTML page over a tree (``segtools report``).

A face, like the command line: :mod:`segtools.report.model` runs the library's analyses (the
same functions every command calls, through :mod:`segtools.api`) and turns their results into
one JSON-able document, summarised to stay small on large trees;
:mod:`segtools.report.page` renders it with an auto-escaping template, inlines the vendored
chart library (:mod:`segtools.report.assets`) and embeds the document as inert JSON. Nothing
here decides a Kafka rule; it only chooses what to show and how much.
"""
