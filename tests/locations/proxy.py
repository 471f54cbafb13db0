"""A faulty network between segtools and the S3 server: a small HTTP proxy on 127.0.0.1.

It forwards every request to the real server and, as a test asks, answers some with
HTTP 503 SlowDown (a throttled store) or cuts a response off halfway (a dropped connection).
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message></Error>")


class FaultyProxy:
    """``throttle``: how many requests get 503 SlowDown first; ``drop``: how many ranged GETs
    are cut off after half their body. ``-1``: every one."""

    def __init__(self, upstream: str, *, throttle: int = 0, drop: int = 0):
        target = urlsplit(upstream)
        self.host, self.port_up = target.hostname, target.port
        self.throttle, self.drop = throttle, drop
        self.seen = {"throttled": 0, "dropped": 0, "forwarded": 0}
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                return None

            def _any(self) -> None:
                proxy.handle(self)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _take(self, name: str, limit: int) -> bool:
        with self._lock:
            if limit < 0 or self.seen[name] < limit:
                self.seen[name] += 1
                return True
            return False

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        if self._take("throttled", self.throttle):
            h.send_response(503)
            h.send_header("Content-Type", "application/xml")
            h.send_header("Content-Length", str(len(SLOW_DOWN)))
            h.end_headers()
            if h.command != "HEAD":
                h.wfile.write(SLOW_DOWN)
            return
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        conn = http.client.HTTPConnection(self.host, self.port_up, timeout=30)
        headers = {k: v for k, v in h.headers.items() if k.lower() != "host"}
        headers["Host"] = f"{self.host}:{self.port_up}"
        conn.request(h.command, h.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        with self._lock:
            self.seen["forwarded"] += 1
        cut = (h.command == "GET" and "Range" in h.headers and len(data) > 1
               and self._take("dropped", self.drop))
        h.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                h.send_header(k, v)
        h.send_header("Content-Length", resp.getheader("Content-Length") if h.command == "HEAD"
                      else str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data[: len(data) // 2] if cut else data)
        if cut:
            h.wfile.flush()
            h.close_connection = True
            h.connection.close()
