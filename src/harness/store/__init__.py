"""The APSW append-only event log: schema, appends, read-only connections."""

from harness.store.log import append, append_raw, envelopes_for, last_position, read_rows, to_envelope
from harness.store.schema import SCHEMA_VERSION, StoreError, open_for_writing, open_read_only

__all__ = [
    "SCHEMA_VERSION",
    "StoreError",
    "append",
    "append_raw",
    "envelopes_for",
    "last_position",
    "open_for_writing",
    "open_read_only",
    "read_rows",
    "to_envelope",
]
