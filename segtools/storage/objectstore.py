"""Log dirs in object storage: ``pyarrow.fs`` per URI scheme, ``fsspec`` for the rest.

Objects are immutable once written, so none of the live-broker rules apply; what replaces them
is the cost model of a store: a request costs tens of milliseconds whatever its size. Hence
one recursive listing per directory asked for (paged by the store, never a request per file),
large byte-range reads fetched concurrently ahead of the batch walk, and small reads for a
seek: the first window at a new position is one :data:`SEEK_BYTES` range, readahead starts
only once the walk goes on sequentially.

An object replaced while it is read (its size or modification time no longer the listing's)
raises :class:`~segtools.storage.location.ObjectChangedError` (a finding where a segment is
read) rather than mixing two objects' bytes. Credentials come from each store's own chain
(``AWS_*`` variables, profiles, instance roles) or from explicit storage options; neither
ever reaches a message: errors are scrubbed of every option value and secret variable.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from segtools.decode.buffers import BufferPool
from segtools.decode.walk import first_nonzero
from segtools.errors import SegtoolsError
from segtools.storage import gentle
from segtools.storage.location import Entry, Location, ObjectChangedError

#: Readahead range per request: object stores serve 8-16 MiB ranges at full speed.
BLOCK_BYTES = 8 * 1024 * 1024
#: Ranges in flight ahead of the walk (memory: this many blocks plus two behind).
READAHEAD_BLOCKS = 6
#: The first read at a new position (an index seek): one small range, not a segment.
SEEK_BYTES = 1024 * 1024
#: Window the walk asks for per call.
STRIDE = 1024 * 1024
#: Seconds: every request has a deadline, so a dead endpoint ends a run instead of hanging it.
CONNECT_TIMEOUT = 10.0
REQUEST_TIMEOUT = 60.0
#: Attempts per request (503 SlowDown and dropped connections are retried with backoff).
MAX_ATTEMPTS = 5
CHUNK_BUFFER = 16 * 1024 * 1024
#: Files up to this size are fetched together, concurrently, as soon as their directory is
#: read (checkpoints, indexes, snapshots, small segments): a tree of many small files then
#: costs a few round trips, not two per file in a row.
SMALL_FILE = 256 * 1024
#: Bound on the bytes of small files held at once (those already read are dropped first).
SMALL_FILES_TOTAL = 64 * 1024 * 1024

#: Option names users know from boto3/fsspec, mapped to pyarrow's S3FileSystem names.
_S3_ALIASES = {"endpoint_url": "endpoint_override", "key": "access_key",
               "aws_access_key_id": "access_key", "secret": "secret_key",
               "aws_secret_access_key": "secret_key", "token": "session_token",
               "aws_session_token": "session_token", "region_name": "region"}
#: segtools' own options (not passed to the file system).
_OWN = ("concurrency", "block_size", "max_attempts")
_SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
               "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_STORAGE_KEY",
               "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_SECRET")


#: Option names whose values are secrets whatever their length; options named in _PLAIN are
#: shown (an endpoint or a region in an error line is what a user needs to see).
_SECRET_NAME = re.compile(r"(?i)key|secret|token|password|credential|sas|signature")
_PLAIN = frozenset(("endpoint_override", "endpoint_url", "region", "region_name", "scheme",
                    "profile", "profile_name", "tmp_dir"))


def split_uri(text: str) -> tuple[str, str]:
    """``s3://bucket/a/b/`` -> ``("s3://bucket", "/a/b")``; credentials in the URI's user part
    stay in the root (the location moves them into its options and never shows them)."""
    parts = urlsplit(text)
    key = "/" + "/".join(p for p in unquote(parts.path).split("/") if p and p != ".")
    root = f"{parts.scheme}://{parts.netloc}"
    if parts.query:
        root += f"?{parts.query}"
    return root, key


def scrub(message: str, options: Mapping[str, Any]) -> str:
    """A message with every option value and credential variable replaced by ``***``."""
    secrets = [str(v) for k, v in options.items() if isinstance(v, str) and v
               and (_SECRET_NAME.search(k) or (len(v) >= 8 and k not in _PLAIN))]
    secrets += [os.environ[n] for n in _SECRET_ENV if os.environ.get(n)]
    for s in sorted(set(secrets), key=len, reverse=True):
        if len(s) >= 4:
            message = message.replace(s, "***")
    message = re.sub(r"(?i)(signature|credential|x-amz-security-token)=[^&\s]+", r"\1=***",
                     message)
    return " ".join(message.split())  # one line


def _describe(error: BaseException, options: Mapping[str, Any]) -> str:
    text = str(error) or type(error).__name__
    lowered = text.lower()
    for needle, plain in (("slowdown", "the store throttles requests (HTTP 503 SlowDown) and "
                                        "the retries ran out"),
                          ("http status 503", "the store throttles requests (HTTP 503) and "
                                              "the retries ran out"),
                          ("nosuchbucket", "no such bucket"),
                          ("bucket does not exist", "no such bucket"),
                          ("access_denied", "access denied (check the credentials)"),
                          ("accessdenied", "access denied (check the credentials)"),
                          ("invalidaccesskeyid", "credentials refused by the store"),
                          ("signaturedoesnotmatch", "credentials refused by the store"),
                          ("curlcode: 7", "cannot connect to the endpoint"),
                          ("couldn't connect", "cannot connect to the endpoint"),
                          ("timeout", "the store did not answer in time")):
        if needle in lowered:
            return f"{plain}: {scrub(text, options)}"
    return scrub(text, options)


def _s3_filesystem(netloc: str, query: str, options: dict[str, Any]):
    from pyarrow import fs as pafs
    kw: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT, "request_timeout": REQUEST_TIMEOUT}
    if "@" in netloc:  # s3://KEY:SECRET@bucket: credentials written into the URI
        user = netloc.rsplit("@", 1)[0]
        access, _, secret = user.partition(":")
        kw.update(access_key=unquote(access), secret_key=unquote(secret))
    for item in filter(None, query.split("&")):
        k, _, v = item.partition("=")
        kw[_S3_ALIASES.get(k, k)] = unquote(v)
    for k, v in options.items():
        if k in ("profile", "profile_name"):
            # the SDK's chain reads the profile named by AWS_PROFILE when it is built
            os.environ["AWS_PROFILE"] = str(v)
        elif k not in _OWN:
            kw[_S3_ALIASES.get(k, k)] = v
    endpoint = kw.get("endpoint_override") or os.environ.get("AWS_ENDPOINT_URL_S3") \
        or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        scheme, sep, rest = str(endpoint).partition("://")
        if sep:
            kw.setdefault("scheme", scheme)
            endpoint = rest
        kw["endpoint_override"] = endpoint.rstrip("/")
    if isinstance(kw.get("anonymous"), str):
        kw["anonymous"] = kw["anonymous"].lower() in ("1", "true", "yes")
    for name in ("connect_timeout", "request_timeout"):
        kw[name] = float(kw[name])
    kw.setdefault("region", os.environ.get("AWS_REGION")
                  or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")
    kw["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(
        max_attempts=int(options.get("max_attempts", MAX_ATTEMPTS)))
    return pafs.S3FileSystem(**kw)


def _filesystem(scheme: str, netloc: str, query: str, options: dict[str, Any]):
    """The file system for a scheme: pyarrow's own where it has one, fsspec's otherwise."""
    from pyarrow import fs as pafs
    own = {k: v for k, v in options.items() if k not in _OWN}
    if scheme in ("s3", "s3a"):
        return _s3_filesystem(netloc, query, options)
    if scheme in ("gs", "gcs") and hasattr(pafs, "GcsFileSystem"):
        own.setdefault("retry_time_limit", REQUEST_TIMEOUT)
        return pafs.GcsFileSystem(**own)
    if scheme in ("abfs", "abfss", "az") and hasattr(pafs, "AzureFileSystem") and own:
        return pafs.AzureFileSystem(**own)
    if scheme == "hdfs" and not own:
        return pafs.FileSystem.from_uri(f"hdfs://{netloc}")[0]
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec is a dependency
        raise SegtoolsError(f"no file system for {scheme}:// URIs",
                            path=f"{scheme}://{netloc}") from None
    return pafs.PyFileSystem(pafs.FSSpecHandler(fsspec.filesystem(scheme, **own)))


class ObjectStoreLocation(Location):
    """One bucket (or container) of an object store, listed lazily by the prefixes asked."""

    kind = "object"

    def __init__(self, uri: str, options: Mapping[str, Any]):
        parts = urlsplit(uri)
        self.scheme = parts.scheme
        self.bucket = parts.netloc.rsplit("@", 1)[-1]
        super().__init__(uri, options)
        self.concurrency = int(options.get("concurrency", 8))
        self.block = int(options.get("block_size", BLOCK_BYTES))
        try:
            self.fs = _filesystem(self.scheme, parts.netloc, parts.query, dict(options))
        except (OSError, ValueError, TypeError, ImportError) as e:
            raise SegtoolsError(f"cannot open the store: {_describe(e, self.options)}",
                                path=self.display("/")) from None
        self._listed: set[str] = set()
        self._missing: set[str] = set()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._small: dict[str, Future] = {}
        self._small_bytes = 0
        self._consumed: dict[str, None] = {}  # small files read at least once, oldest first

    def display(self, key: str) -> str:
        return f"{self.scheme}://{self.bucket}{'' if key == '/' else key}"

    def store_path(self, key: str) -> str:
        return self.bucket + ("" if key == "/" else key)

    def error(self, key: str, e: BaseException, what: str) -> SegtoolsError:
        return SegtoolsError(f"{what}: {_describe(e, self.options)}", path=self.display(key))

    @property
    def pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.concurrency,
                                                thread_name_prefix="segtools-range")
            return self._pool

    # -- listing ---------------------------------------------------------------------------

    def _covered(self, key: str) -> bool:
        if key in self._missing:
            return True
        k = key
        while True:
            if k in self._listed:
                return True
            if k == "/":
                return False
            k = k.rsplit("/", 1)[0] or "/"

    def ensure_listed(self, key: str) -> None:
        if self._covered(key):
            return
        from pyarrow import fs as pafs
        try:
            info = self.fs.get_file_info(self.store_path(key))
            if info.type == pafs.FileType.Directory:
                found = self.fs.get_file_info(pafs.FileSelector(
                    self.store_path(key), recursive=True, allow_not_found=True))
            else:
                found = [info]
        except (OSError, ValueError) as e:
            raise self.error(key, e, "cannot list") from None
        if info.type == pafs.FileType.NotFound:
            self._missing.add(key)
            self.entries.pop(key, None) if key != "/" else None
            return
        if info.type == pafs.FileType.Directory:
            self._add(Entry(key, True))
            self._listed.add(key)
        for fi in found:
            child = "/" + fi.path[len(self.bucket):].strip("/")
            if fi.type == pafs.FileType.Directory:
                self._add(Entry(child, True))
            elif fi.type == pafs.FileType.File:
                self._add(Entry(child, False, fi.size or 0, fi.mtime_ns))

    def children(self, key: str) -> list[Entry]:
        """A directory's entries; its small files start downloading together now, since a
        directory is listed to be read (a partition's checkpoints, indexes, segments)."""
        found = super().children(key)
        for e in found:
            if not e.is_dir:
                self._prefetch(e.key, e.size)
        return found

    def _prefetch(self, key: str, size: int) -> None:
        if size > SMALL_FILE or key in self._small:
            return
        while self._small_bytes + size > SMALL_FILES_TOTAL and self._consumed:
            old = next(iter(self._consumed))  # the oldest small file already read goes first
            del self._consumed[old]
            got = self._small.pop(old, None)
            if got is not None:
                self._small_bytes -= self.entries[old].size
        if self._small_bytes + size > SMALL_FILES_TOTAL:
            return
        self._small_bytes += size
        self._small[key] = self.pool.submit(self._read_whole, key, size)

    def _read_whole(self, key: str, size: int) -> bytes:
        f = self.open_file(key)
        try:
            return _read_at(self, key, f, 0, max(size, f.size()))
        finally:
            f.close()

    def small_file(self, key: str, entry: Entry) -> bytes | None:
        """A small file fetched when its directory was listed, or None. One response of one
        object version, checked against the listing's size."""
        got = self._small.get(key)
        if got is None:
            return None
        self._consumed.setdefault(key)
        data = got.result()
        if len(data) != entry.size:
            raise ObjectChangedError(
                f"replaced since it was listed (size {entry.size} -> {len(data)}): not read, "
                "so no answer mixes two objects", path=self.display(key))
        return data

    # -- reading ---------------------------------------------------------------------------

    def open_file(self, key: str):
        try:
            return self.fs.open_input_file(self.store_path(key))
        except (OSError, ValueError) as e:
            raise self.error(key, e, "cannot open") from None

    def read_range(self, key: str, lo: int, hi: int) -> bytes:
        e = self.entries.get(key)
        small = self.small_file(key, e) if e is not None else None
        if small is not None:
            return small[lo:hi]
        f = self.open_file(key)
        try:
            return _read_at(self, key, f, lo, hi)
        finally:
            f.close()

    def check_unchanged(self, key: str, entry: Entry) -> None:
        try:
            info = self.fs.get_file_info(self.store_path(key))
        except (OSError, ValueError) as e:
            raise self.error(key, e, "cannot check the object") from None
        now = (info.size, info.mtime_ns)
        if now != (entry.size, entry.mtime_ns):
            raise ObjectChangedError(
                f"replaced since it was listed (size {entry.size} -> {info.size}, modified "
                f"{entry.mtime_ns} -> {info.mtime_ns} ns): not read further, so no answer "
                "mixes two objects", path=self.display(key))

    def source(self, key: str, entry: Entry):
        """The object's ranges; its size is checked against the listing at open (the open
        asks the store for it anyway), its modification time once its last range is read."""
        small = self.small_file(key, entry)
        if small is not None:
            from segtools.decode.source import BufferSource
            return BufferSource(small)
        f = self.open_file(key)
        if (size := f.size()) != entry.size:
            f.close()
            raise ObjectChangedError(
                f"replaced since it was listed (size {entry.size} -> {size}): not read, "
                "so no answer mixes two objects", path=self.display(key))
        return RangeSource(self, key, entry, f)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _read_at(loc: ObjectStoreLocation, key: str, f, lo: int, hi: int) -> bytes:
    try:
        return f.read_at(hi - lo, lo)
    except (OSError, ValueError) as e:
        raise SegtoolsError(f"read failed at byte {lo}: {_describe(e, loc.options)}",
                            path=loc.display(key), position=lo) from None


class RangeSource:
    """The walk's :class:`~segtools.decode.source.Source` over an object: byte ranges, fetched
    concurrently ahead of a sequential walk and read singly for a seek.

    Ranges are fetched into immutable blocks, so a window inside one block is a view of it
    (no copy, safe to keep); a window across blocks is copied. Memory is bounded by the
    blocks in flight and the two kept behind the walk."""

    stride = STRIDE
    chunk_per_window = True

    def __init__(self, loc: ObjectStoreLocation, key: str, entry: Entry, f):
        self.loc, self.key, self.entry, self.file = loc, key, entry, f
        self.path = loc.display(key)
        self.size = entry.size
        self.buffers = BufferPool(CHUNK_BUFFER)
        self.block = loc.block
        self._blocks: dict[int, Future | np.ndarray] = {}  # block start -> bytes
        self._last_end = -1
        self._sequential = False
        self._checked_end = False
        self.requested = 0  # bytes asked of the store (the benchmark reports it)
        self.requests = 0
        self._rate = gentle.current().rate  # read here: the fetches run on the pool's threads

    def _fetch(self, lo: int, hi: int) -> np.ndarray:
        self.requests += 1
        if self._rate is not None:
            self._rate.take(hi - lo)
        data = _read_at(self.loc, self.key, self.file, lo, hi)
        return np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8)

    def _schedule(self, start: int, end: int) -> None:
        if start not in self._blocks and start < self.size:
            self.requested += end - start
            self._blocks[start] = self.loc.pool.submit(self._fetch, start, end)

    def _block(self, start: int) -> np.ndarray:
        got = self._blocks[start]
        if isinstance(got, Future):
            got = got.result()
            self._blocks[start] = got
        return got

    def _span(self, lo: int, hi: int) -> list[tuple[int, np.ndarray]]:
        """The blocks covering ``[lo, hi)``, fetching what is missing."""
        if self._sequential:
            first = lo - lo % self.block
            for k in range(READAHEAD_BLOCKS + 1):
                s = first + k * self.block
                self._schedule(s, min(self.size, s + self.block))
            for s in [s for s in self._blocks if s + self.block <= first - self.block]:
                del self._blocks[s]  # two blocks are kept behind the walk
        out, pos = [], lo
        while pos < hi:
            held = next((s for s in self._blocks if s <= pos < s + self._extent(s)), None)
            if held is None:
                end = hi if self._sequential else max(hi, min(self.size, pos + SEEK_BYTES))
                if self._sequential:
                    end = min(self.size, pos - pos % self.block + self.block)
                    held = pos - pos % self.block
                    self._schedule(held, end)
                else:
                    held = pos
                    self.requested += end - pos
                    self._blocks[pos] = self._fetch(pos, end)
            data = self._block(held)
            out.append((held, data))
            if len(data) == 0 or held + len(data) <= pos:
                break  # the object ended early: the walk sees a short window
            pos = held + len(data)
        return out

    def _extent(self, start: int) -> int:
        got = self._blocks[start]
        if isinstance(got, Future):
            return self.block if start % self.block == 0 else SEEK_BYTES
        return len(got)

    def window(self, lo: int, hi: int, *, keep: bool = False) -> tuple[np.ndarray, int, int]:
        hi = min(hi, self.size)
        if lo >= hi:
            return np.zeros(0, np.uint8), lo, lo
        self._sequential = self._sequential or (self._last_end >= 0 and
                                                self._last_end - self.block <= lo
                                                <= self._last_end + self.block)
        if not keep:
            self._last_end = hi
        parts = self._span(lo, hi)
        if not self._checked_end and hi >= self.size:
            # the end of the object: is it still the one listed? (one range is one response
            # of one object version: only a read of several ranges could mix two)
            self._checked_end = True
            if self.requests > 1:
                self.loc.check_unchanged(self.key, self.entry)
        if len(parts) == 1:
            start, data = parts[0]
            avail = min(hi, start + len(data))
            return data, start, max(avail, lo)
        start = parts[0][0]
        joined = np.concatenate([d for _, d in parts])
        avail = min(hi, start + len(joined))
        return joined[lo - start:avail - start], lo, max(avail, lo)

    def release(self, upto: int) -> None:
        return None

    def zero_from(self, lo: int, hi: int) -> int | None:
        pos, hi = lo, min(hi, self.size)
        while pos < hi:
            data, base, avail = self.window(pos, min(hi, pos + self.block), keep=True)
            if avail <= pos:
                return None
            found = first_nonzero(data, pos - base, avail - base)
            if found >= 0:
                return base + int(found)
            pos = avail
        return None

    def close(self) -> None:
        for got in self._blocks.values():
            if isinstance(got, Future):
                got.cancel()
        self._blocks.clear()
        self.buffers.clear()
        self.file.close()
