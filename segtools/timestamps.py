"""Moments in time as Kafka stores them: epoch milliseconds.

Every face takes a time the way its users write one (the CLI's ``--at 2024-05-01T14:02``, a
notebook's ``datetime``, Spark's ``startingTimestamp`` in ms) and the library works in
milliseconds since the epoch, the unit of every timestamp in a record batch.
"""

from __future__ import annotations

from datetime import UTC, datetime

#: Milliseconds in a day (``--forecast DAYS``, a picture's day axis).
DAY_MS = 86_400_000


def to_millis(value: int | float | str | datetime) -> int:
    """Epoch milliseconds from ms (int/float or a string of digits), an ISO-8601 string or a
    ``datetime``. Naive times are UTC, as Kafka's timestamps are."""
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, datetime):
        moment = value
    else:
        text = str(value).strip()
        if text.lstrip("-").isdigit():
            return int(text)
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"not epoch milliseconds or ISO-8601: {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
