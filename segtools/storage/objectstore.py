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
import weakref
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from functools import partial
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from segtools.decode.buffers import BufferPool
from segtools.decode.source import BufferSource
from segtools.decode.walk import first_nonzero
from segtools.errors import SegtoolsError
from segtools.storage import gentle
from segtools.storage.extents import Extents
from segtools.storage.located import Entry, ListedLocation, ObjectChangedError

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
REQUEST_TIMEOUT = 20.0
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
_OWN = ("concurrency", "block_size", "block_bytes", "seek_bytes", "small_file_bytes",
        "max_attempts")
_SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
               "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_STORAGE_KEY",
               "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_SECRET")


#: Option names whose values are secrets whatever their length; options named in _PLAIN are
#: shown (an endpoint or a region in an error line is what a user needs to see).
_SECRET_NAME = re.compile(r"(?i)key|secret|token|password|credential|sas|signature")
_PLAIN = frozenset(("endpoint_override", "endpoint_url", "region", "region_name", "scheme",
                    "profile", "profile_name", "tmp_dir"))


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
            kw.update(_profile_credentials(str(v)))
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


def _profile_credentials(profile: str) -> dict[str, Any]:
    """A named profile of the shared AWS files, resolved by botocore's own chain (keys,
    ``credential_process``, assume-role, SSO) into the keyword arguments of the file system:
    pyarrow's S3 only reads a profile named in the environment, and a process-wide variable
    would hand one location's profile to every other."""
    import botocore.exceptions
    import botocore.session
    try:
        session = botocore.session.Session(profile=profile)
        found = session.get_credentials()
        region = session.get_config_variable("region")
    except botocore.exceptions.BotoCoreError as e:
        raise ValueError(f"profile {profile!r}: {e}") from None
    if found is None:
        raise ValueError(f"profile {profile!r} gives no credentials")
    frozen = found.get_frozen_credentials()
    kw: dict[str, Any] = {"access_key": frozen.access_key, "secret_key": frozen.secret_key}
    if frozen.token:
        kw["session_token"] = frozen.token
    if region:
        kw["region"] = region
    return kw


def _endpoint(options: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``endpoint_url`` (``http://127.0.0.1:4443``) as (scheme, host[:port])."""
    url = options.get("endpoint_url") or options.get("endpoint_override")
    if not url:
        return None, None
    scheme, sep, rest = str(url).partition("://")
    return (scheme, rest.strip("/")) if sep else (None, scheme.strip("/"))


def _truth(value: Any) -> bool:
    return value.lower() in ("1", "true", "yes") if isinstance(value, str) else bool(value)


def _gcs_filesystem(options: Mapping[str, Any]):
    """pyarrow's GCS client; ``endpoint_url`` for an emulator, seconds as plain numbers."""
    from datetime import timedelta

    from pyarrow import fs as pafs
    kw = {k: v for k, v in options.items()
          if k not in _OWN and k not in ("endpoint_url", "endpoint_override")}
    scheme, host = _endpoint(options)
    if host:
        kw["endpoint_override"] = host
        kw.setdefault("scheme", scheme or "https")
    if "anonymous" in kw:
        kw["anonymous"] = _truth(kw["anonymous"])
    limit = kw.get("retry_time_limit", REQUEST_TIMEOUT)
    kw["retry_time_limit"] = (limit if isinstance(limit, timedelta)
                              else timedelta(seconds=float(limit)))
    return pafs.GcsFileSystem(**kw)


_AZURE_SCHEMES = ("abfs", "abfss", "az")

def _azure_filesystem(netloc: str, options: Mapping[str, Any]):
    """pyarrow's Azure client. The account comes from the URI
    (``abfs://container@account.dfs.core.windows.net``) or ``account_name``; one
    ``endpoint_url`` (an emulator, a private endpoint) stands for both the blob and the dfs
    authority and scheme, which are the same service there."""
    from pyarrow import fs as pafs
    kw = {k: v for k, v in options.items()
          if k not in _OWN and k not in ("endpoint_url", "endpoint_override")}
    if "@" in netloc and "account_name" not in kw:
        kw["account_name"] = netloc.rsplit("@", 1)[1].split(".", 1)[0]
    scheme, host = _endpoint(options)
    if host:
        for service in ("blob", "dfs"):
            kw.setdefault(f"{service}_storage_authority", host)
            kw.setdefault(f"{service}_storage_scheme", scheme or "https")
    if "account_name" not in kw:
        raise ValueError("no storage account: name it in the URI "
                         "(abfs://container@account.dfs.core.windows.net/...) or give the "
                         "account_name option")
    return pafs.AzureFileSystem(**kw)


def _filesystem(scheme: str, netloc: str, query: str, options: dict[str, Any]):
    """The file system for a scheme: pyarrow's own where it has one, fsspec's otherwise."""
    from pyarrow import fs as pafs
    own = {k: v for k, v in options.items() if k not in _OWN}
    if scheme in ("s3", "s3a"):
        return _s3_filesystem(netloc, query, options)
    if scheme in ("gs", "gcs") and hasattr(pafs, "GcsFileSystem"):
        return _gcs_filesystem(options)
    if scheme in _AZURE_SCHEMES and hasattr(pafs, "AzureFileSystem"):
        return _azure_filesystem(netloc, options)
    if scheme == "hdfs" and not own:
        return pafs.FileSystem.from_uri(f"hdfs://{netloc}")[0]
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec is a dependency
        raise SegtoolsError(f"no file system for {scheme}:// URIs",
                            path=f"{scheme}://{netloc}") from None
    return pafs.PyFileSystem(pafs.FSSpecHandler(fsspec.filesystem(scheme, **own)))


@dataclass(frozen=True, slots=True)
class RangeSizes:
    """How an object is cut into requests. Location options (``block_bytes``,
    ``seek_bytes``, ``small_file_bytes``; ``block_size`` is the older name of the first), so
    a store with other costs can be tuned and a test can make every size a few KiB and reach
    every stitching path with small objects."""

    block_bytes: int = BLOCK_BYTES
    seek_bytes: int = SEEK_BYTES
    small_file_bytes: int = SMALL_FILE

    @classmethod
    def from_options(cls, options: Mapping[str, Any], path: str) -> RangeSizes:
        def whole(name: str, default: int, least: int) -> int:
            text = options.get(name, default)
            try:
                value = int(text)
            except (TypeError, ValueError):
                value = least - 1
            if value < least:
                raise SegtoolsError(f"storage option {name} must be a whole number of bytes "
                                    f"of at least {least}", path=path)
            return value

        block = whole("block_bytes", whole("block_size", BLOCK_BYTES, 1), 1)
        return cls(block_bytes=block, seek_bytes=whole("seek_bytes", SEEK_BYTES, 1),
                   small_file_bytes=whole("small_file_bytes", SMALL_FILE, 0))


class ObjectStoreLocation(ListedLocation):
    """One bucket (or container) of an object store, listed lazily by the prefixes asked."""

    kind = "object"
    #: Each store's client keeps process-wide state that a fork copies mid-use: the Azure
    #: SDK one connection pool for the whole process (``CurlConnectionPool``, with a cleanup
    #: thread; a forked worker reads the parent's answers and pyarrow aborts it: ``terminate
    #: ... stoi``), pyarrow's S3 and GCS clients locks that a download thread may hold at the
    #: fork (gdb showed a worker waiting on one). Quiescing the range threads before a fork
    #: (:func:`_quiesce`) made the hang rarer, not impossible. So
    #: :func:`segtools.fanout.ordered` does not fork a run that holds such a location open.
    shares_connections = True

    def __init__(self, uri: str, options: Mapping[str, Any]):
        parts = urlsplit(uri)
        self.scheme = parts.scheme
        if self.scheme in _AZURE_SCHEMES:  # abfs://container@account.dfs.core.windows.net
            self.bucket = parts.netloc.split("@", 1)[0]
            self.shown = parts.netloc
        else:  # s3://bucket (credentials before an "@" are never shown)
            self.bucket = self.shown = parts.netloc.rsplit("@", 1)[-1]
        super().__init__(uri, options)
        self.concurrency = int(options.get("concurrency", 8))
        self.ranges = RangeSizes.from_options(options, self.display("/"))
        self._netloc, self._query = parts.netloc, parts.query
        self._listed: set[str] = set()
        self._missing: set[str] = set()
        self._consumed: dict[str, None] = {}  # small files read at least once, oldest first
        self._own_clients()
        os.register_at_fork(before=partial(_quiesce, weakref.ref(self)))

    def _own_clients(self) -> None:
        """The store's client, the range threads and the downloads in flight, for this
        process. A worker forked while downloads run inherits neither the threads nor the
        client's connections in a usable state (a thread does not survive a fork, and a
        lock it held stays held in the child), so a forked copy of a location starts over
        with its own: the answer to "is it safe to fork now?" is that it no longer matters."""
        self._pid = os.getpid()
        try:
            self._fs = _filesystem(self.scheme, self._netloc, self._query, dict(self.options))
        except TypeError as e:  # a storage option its client does not take (a typo)
            found = re.search(r"unexpected keyword argument '([^']+)'", str(e))
            name = found.group(1) if found else None
            raise SegtoolsError(
                f"unknown storage option {name!r} for {self.scheme}:// (see docs/locations.md "
                "for the options each store takes)" if name else
                f"cannot open the store: {_describe(e, self.options)}",
                path=self.display("/")) from None
        except (OSError, ValueError, ImportError) as e:
            raise SegtoolsError(f"cannot open the store: {_describe(e, self.options)}",
                                path=self.display("/")) from None
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._small: dict[str, Future] = {}
        self._small_bytes = 0

    def quiesce(self) -> None:
        """Before this process forks: ranges not started are cancelled (whoever wants them
        fetches them again), those being downloaded are finished, and the range threads
        end. pyarrow's S3 client takes a process-wide lock for each request; a thread in the
        middle of one when the process forks leaves that lock held in the child for good, and
        the child's first request (even on a new client) then waits forever. Measured with
        ``tests/locations/fork_runs.py`` on moto's server: with fresh clients in the workers
        but no quiescing, 3 of 5 batches of runs hung there (pyarrow's
        ``ClientBuilder::BuildClient``, a write lock); with it, none."""
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None

    @property
    def forked(self) -> bool:
        """Whether this is a forked process's copy of a location opened by its parent."""
        return self._pid != os.getpid()

    @property
    def fs(self):
        if self.forked:
            self._own_clients()
        return self._fs

    def display(self, key: str) -> str:
        return f"{self.scheme}://{self.shown}{'' if key == '/' else key}"

    def store_path(self, key: str) -> str:
        return self.bucket + ("" if key == "/" else key)

    def error(self, key: str, e: BaseException, what: str) -> SegtoolsError:
        return SegtoolsError(f"{what}: {_describe(e, self.options)}", path=self.display(key))

    @property
    def pool(self) -> ThreadPoolExecutor:
        if self.forked:
            self._own_clients()
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
            if info.type != pafs.FileType.File:
                # asked of a prefix that is no object, pyarrow's Azure client answers
                # NotFound when a longer name sorts first ("t/tiered-x/..." before
                # "t/tiered/..."): the listing below the prefix is what decides
                found = self.fs.get_file_info(pafs.FileSelector(
                    self.store_path(key), recursive=True, allow_not_found=True))
                if found and info.type == pafs.FileType.NotFound:
                    info = pafs.FileInfo(self.store_path(key), pafs.FileType.Directory)
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
        if size > self.ranges.small_file_bytes or key in self._small:
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
        if self.forked:
            self._own_clients()
        got = self._small.get(key)
        if got is None:
            return None
        if got.cancelled():  # cancelled before a fork: read it as any other file
            del self._small[key]
            self._small_bytes -= entry.size
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
            f = self.fs.open_input_file(self.store_path(key))
        except (OSError, ValueError) as e:
            raise self.error(key, e, "cannot open") from None
        self._note_etag(key, f)
        return f

    def _note_etag(self, key: str, f) -> None:
        """The object's version tag as the run first opened it: ``pyarrow.fs`` lists no
        ETag, but opening an object asks the store for its metadata (S3's ``HeadObject``),
        which carries one; a store that gives none leaves it None."""
        entry = self.entries.get(key)
        if entry is None or entry.etag is not None:
            return
        try:
            tag = f.metadata().get("ETag")
        except (OSError, ValueError, AttributeError):
            return
        if tag:
            self.entries[key] = replace(entry, etag=tag.decode("utf-8", "replace").strip('"'))

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
            return BufferSource(small)
        f = self.open_file(key)
        if (size := f.size()) != entry.size:
            f.close()
            raise ObjectChangedError(
                f"replaced since it was listed (size {entry.size} -> {size}): not read, "
                "so no answer mixes two objects", path=self.display(key))
        return RangeSource(self, key, entry, f)

    def close(self) -> None:
        if self._pool is not None and not self.forked:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _quiesce(location: weakref.ref[ObjectStoreLocation]) -> None:
    found = location()
    if found is not None and not found.forked:
        found.quiesce()


def _read_at(loc: ObjectStoreLocation, key: str, f, lo: int, hi: int) -> bytes:
    if hi <= lo:  # no request: GCS answers a range of nothing with HTTP 416 (an empty object)
        return b""
    try:
        return f.read_at(hi - lo, lo)
    except (OSError, ValueError) as e:
        raise SegtoolsError(f"read failed at byte {lo}: {_describe(e, loc.options)}",
                            path=loc.display(key), position=lo) from None


class RangeSource:
    """The walk's :class:`~segtools.decode.source.Source` over an object: byte ranges, fetched
    concurrently ahead of a sequential walk and read singly for a seek.

    Every range asked of the store goes into one :class:`~segtools.storage.extents.Extents`
    and covers only bytes no held range covers, so a window is stitched from disjoint ranges
    found by position: no byte is ever taken from a range that was fetched for another place.
    Ranges are immutable arrays, so a window inside one range is a view of it (no copy, safe
    to keep); a window across ranges is copied. Memory is bounded by the ranges in flight
    ahead of the walk and two blocks kept behind it."""

    chunk_per_window = True

    def __init__(self, loc: ObjectStoreLocation, key: str, entry: Entry, f):
        self.loc, self.key, self.entry, self.file = loc, key, entry, f
        self.path = loc.display(key)
        self.size = entry.size
        self.buffers = BufferPool(CHUNK_BUFFER)
        self.block = loc.ranges.block_bytes
        self.seek = loc.ranges.seek_bytes
        self.stride = STRIDE
        self._held: Extents[Future | np.ndarray] = Extents()
        self._pid = os.getpid()
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

    def _ask(self, lo: int, hi: int, *, ahead: bool) -> None:
        """Fetch the bytes of ``[lo, hi)`` not held yet, in ranges of at most one block cut
        at block boundaries; ahead of the walk on the pool, otherwise now."""
        hi = min(hi, self.size)
        for a, b in self._held.gaps(lo, hi):
            while a < b:
                end = min(b, a - a % self.block + self.block)
                self.requested += end - a
                got = self.loc.pool.submit(self._fetch, a, end) if ahead else self._fetch(a, end)
                self._held.add(a, end, got)
                a = end

    def _bytes_at(self, pos: int) -> tuple[int, int, np.ndarray] | None:
        found = self._held.holding(pos)
        if found is None:
            return None
        start, end, got = found
        if isinstance(got, Future):
            # a range cancelled before a fork is fetched now instead
            got = self._fetch(start, end) if got.cancelled() else got.result()
            self._held.replace(start, got)
        return start, end, got

    def _span(self, lo: int, hi: int) -> list[tuple[int, np.ndarray]]:
        """The held ranges covering ``[lo, hi)``, in order, fetching what is missing."""
        if self._sequential:
            first = lo - lo % self.block
            self._held.drop((first - self.block, self.size))  # two blocks kept behind
            self._ask(first, first + (READAHEAD_BLOCKS + 1) * self.block, ahead=True)
            self._ask(lo, hi, ahead=True)
        else:
            self._ask(lo, max(hi, lo + self.seek), ahead=False)
        out, pos = [], lo
        while pos < hi:
            found = self._bytes_at(pos)
            if found is None:
                break
            start, end, data = found
            if start + len(data) > pos:
                out.append((start, data))
            if start + len(data) < end:
                break  # the object ended early: the walk sees a short window
            pos = end
        return out

    def _own_file(self) -> None:
        """In a forked worker: the parent's open file and its ranges in flight are not this
        process's (see :meth:`ObjectStoreLocation._own_clients`); the bytes already held
        are, and are kept."""
        self._pid = os.getpid()
        self.file = self.loc.open_file(self.key)
        for start, _, got in list(self._held):
            if isinstance(got, Future):
                self._held.drop_one(start)

    def window(self, lo: int, hi: int, *, keep: bool = False) -> tuple[np.ndarray, int, int]:
        hi = min(hi, self.size)
        if lo >= hi:
            return np.zeros(0, np.uint8), lo, lo
        if self._pid != os.getpid():
            self._own_file()
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
        if not parts:
            return np.zeros(0, np.uint8), lo, lo
        if len(parts) == 1:
            start, data = parts[0]
            return data, start, max(min(hi, start + len(data)), lo)
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
        """Ranges not started are cancelled; those being read are waited for (the file they
        read must outlive them), their bytes or errors dropped."""
        mine = self._pid == os.getpid()
        for got in self._held.clear():
            if mine and isinstance(got, Future) and not got.cancel():
                wait([got])
        self.buffers.clear()
        self.file.close()
