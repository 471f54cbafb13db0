"""Why a payload did not decode: each kind is one ``payload_*`` finding code."""

from __future__ import annotations


class PayloadError(ValueError):
    """A payload that cannot be decoded; ``code`` is its finding code."""

    code = "payload_body_mismatch"


class BodyMismatch(PayloadError):
    """The body does not decode with the schema its frame names (torn, or another format)."""

    code = "payload_body_mismatch"


class FrameTruncated(PayloadError):
    """The frame itself is cut short (fewer than five bytes, message indexes cut)."""

    code = "payload_frame_truncated"


class UnknownMagic(PayloadError):
    """Not a Confluent frame where one was expected."""

    code = "payload_unknown_magic"


class UnknownSchemaId(PayloadError):
    """The frame names an id no schema source knows."""

    code = "payload_unknown_schema_id"


class SchemaHardDeleted(PayloadError):
    """The frame names an id whose every version was hard-deleted from the registry."""

    code = "payload_schema_hard_deleted"


class ReferenceMissing(PayloadError):
    """The schema imports a subject version no source knows."""

    code = "payload_reference_missing"


class SchemaInvalid(PayloadError):
    """The schema text does not compile (hostile text, a reference cycle)."""

    code = "payload_schema_invalid"
