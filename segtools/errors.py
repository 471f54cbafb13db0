"""The small exception hierarchy every segtools parser raises.

Each error carries the file and byte position at fault, because the one-line message an operator
reads at 3 a.m. must say *where* (docs/architecture.md §3:
``segtools: error: <path>: <what is wrong>``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from segtools.findings import Finding


class SegtoolsError(Exception):
    """Base class: something in the input could not be read as Kafka wrote it."""

    def __init__(self, message: str, *, path: str | None = None, position: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.position = position

    def with_path(self, path: str) -> SegtoolsError:
        """Attach the file name once it is known (parsers below the file layer do not know it)."""
        if self.path is None:
            self.path = path
        return self

    def __str__(self) -> str:
        where = f" at byte {self.position}" if self.position is not None else ""
        return f"{self.message}{where}"


class CorruptDataError(SegtoolsError):
    """Bytes that violate the format: bad length, bad varint, bad attribute, wrong CRC ..."""


class UnsupportedFormatError(SegtoolsError):
    """A magic, version or codec segtools does not know (newer Kafka, or not Kafka at all)."""


class DecompressionLimitError(CorruptDataError):
    """A compressed payload inflates past the configured cap (a bomb, or a lying header)."""


class VanishedError(SegtoolsError):
    """The file was listed but is gone: on a live broker, retention or the cleaner deleted it
    between the listing and the open."""


class NotAKafkaFileError(SegtoolsError):
    """The path is not a file type segtools reads (wrong suffix, directory, ...)."""


class NothingToReadError(SegtoolsError):
    """A tree in which no Kafka partition was found. When a directory of it could not be
    listed (a log dir at mode 000), that is the answer, with the directory's path: "no
    partitions here" would send an operator looking for data that is there and unreadable."""

    #: The listing's finding codes that explain an empty tree (``segtools.findings``): a
    #: directory that could not be listed, or a partition directory that is a link (named
    #: on its own, or with a file in it, and not followed: docs/security.md).
    UNLISTED = ("log_dir_unreadable", "partition_dir_unreadable", "symlink_not_followed")

    @classmethod
    def of(cls, listing: Iterable[Finding], paths: Sequence[str]) -> NothingToReadError:
        """The error for a tree whose listing found no partition; ``listing``: what listing
        it met (the log dirs' and loose paths' findings)."""
        listing = list(listing)
        unlisted = next((f for code in cls.UNLISTED for f in listing if f.code == code), None)
        if unlisted is not None:
            return cls(unlisted.message, path=unlisted.path)
        return cls("no Kafka partitions found here (expected log dirs, partition dirs or "
                   ".log segment files)", path=", ".join(paths))
