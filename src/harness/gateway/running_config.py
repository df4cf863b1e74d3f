"""The one holder of the running configuration: every part of the daemon reads it here.

A reload switches it in one assignment (:meth:`ConfigHolder.switch`); what is derived from the
configuration once per switch (the secret values held for upstreams, the project files not approved)
is switched with it, so no reader sees a new configuration beside old derived facts. The policy
actor keeps its own copy because it folds catalogues and tokens against it on its thread: the
reload tells it the new one right after the switch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.config import Config
from harness.gateway.evidence.known_secrets import KnownSecrets
from harness.vocabulary import ArgsMode


@dataclass(frozen=True)
class RunningConfig:
    """One configuration and the facts derived from it."""

    config: Config
    unapproved: tuple[Path, ...]
    """Project files whose upstreams do not run: not approved as they are now."""
    known: KnownSecrets
    """The secret values the daemon holds for upstreams."""

    @property
    def args_mode(self) -> ArgsMode:
        """How call arguments are kept (``[mcp] call_log_args``)."""
        return self.config.mcp.call_log_args


class ConfigHolder:
    """Holds the :class:`RunningConfig`; only :meth:`switch` replaces it (readers on any thread)."""

    __slots__ = ("current",)

    def __init__(self, config: Config, unapproved: tuple[Path, ...] = ()) -> None:
        self.current = RunningConfig(config, unapproved, KnownSecrets.of(config))

    @property
    def config(self) -> Config:
        """The running configuration."""
        return self.current.config

    def switch(self, config: Config, unapproved: tuple[Path, ...]) -> Config:
        """Make ``config`` the running one; the configuration it replaced."""
        old = self.current.config
        self.current = RunningConfig(config, unapproved, KnownSecrets.of(config))
        return old
