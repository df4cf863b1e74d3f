"""Who a call or a run belongs to: the five attribution fields, travelling as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Attribution:
    """The token owner's harness and its current run (all None for an unattributed caller).

    Events that carry attribution (``harness.spawned``, ``tool_call.completed``) take these fields
    by name: ``ToolCallCompleted(**attribution.fields(), ...)``.
    """

    harness: str | None = None
    run_id: str | None = None
    adapter: str | None = None
    model: str | None = None
    config_hash: str | None = None

    def fields(self) -> dict[str, Any]:
        """The fields by name, as events and call-log rows spell them (spelled out: ``asdict``
        deep-copies and costs a call on the hot path ~6 us)."""
        return {
            "harness": self.harness,
            "run_id": self.run_id,
            "adapter": self.adapter,
            "model": self.model,
            "config_hash": self.config_hash,
        }


UNATTRIBUTED = Attribution()
