"""A Schema Registry on 127.0.0.1 serving a history's schemas: the GET resources segtools
asks (``/schemas/ids/{id}``, ``/schemas/ids/{id}/versions``,
``/subjects/{subject}/versions/{version}``), every request heard with its Authorization
header, so a test can check what was asked, how often and with which credentials."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from segtools.payloads.schemas import Schemas


@dataclass
class Served:
    """The registry's URL, and each request it heard: method, path, Authorization header."""

    url: str
    heard: list[tuple[str, str, str | None]] = field(default_factory=list)


def _answer(history: Schemas, path: list[str]):
    """The registry's JSON for a request path (split at its slashes), None for a 404."""
    if path[:2] == ["schemas", "ids"] and len(path) == 3:
        v = history.by_id(int(path[2]))
        return None if v is None else {"schema": v.schema, "schemaType": v.schema_type,
                                       "references": [r.to_json() for r in v.references]}
    if path[:2] == ["schemas", "ids"]:
        return [{"subject": v.subject, "version": v.version}
                for v in history.registrations(int(path[2]))]
    if path[0] == "subjects":
        v = history.by_subject_version(path[1], int(path[3]))
        return None if v is None else {"id": v.id, "schema": v.schema,
                                       "schemaType": v.schema_type,
                                       "references": [r.to_json() for r in v.references]}
    return None


@contextlib.contextmanager
def serving(history: Schemas) -> Iterator[Served]:
    """The registry, running for the ``with`` block (on a port the system picks)."""
    served = Served("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            served.heard.append(("GET", self.path, self.headers.get("Authorization")))
            body = _answer(history, self.path.split("?")[0].strip("/").split("/"))
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
