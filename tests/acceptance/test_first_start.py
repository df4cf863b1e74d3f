"""A daemon's first start on a new state dir says nothing alarming about the store it is creating."""

from __future__ import annotations

import pytest

from support import DEMO_UPSTREAM, toml_list

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]  # a daemon start and its upstream probe


def test_the_first_start_on_a_new_state_dir_logs_no_store_warning(start_daemon):
    daemon = start_daemon(f"[mcp.solo]\nargv = {toml_list(DEMO_UPSTREAM)}\nshared = false\n")
    # the catalogue of a shared = false upstream is looked up in the store before `ready`
    said = "".join(daemon.stderr_lines)
    assert "no kept catalogue" not in said and "not a Harness store" not in said, said
