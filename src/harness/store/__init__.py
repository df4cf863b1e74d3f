"""The APSW append-only event log: schema, appends, read-only connections."""

from harness.store.log import (
    append,
    append_raw,
    append_values,
    envelopes_at,
    envelopes_for,
    event_values,
    last_position,
    read_rows,
    to_envelope,
)
from harness.store.schema import (
    SCHEMA_VERSION,
    StoreError,
    open_for_writing,
    open_read_only,
    transaction,
    tune_for_writer,
)

__all__ = [
    "SCHEMA_VERSION",
    "StoreError",
    "append",
    "append_raw",
    "append_values",
    "envelopes_at",
    "envelopes_for",
    "event_values",
    "last_position",
    "open_for_writing",
    "open_read_only",
    "read_rows",
    "to_envelope",
    "transaction",
    "tune_for_writer",
]
