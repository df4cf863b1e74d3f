"""The status page's layout (its browser test: tests/acceptance/test_status_page.py)."""

from __future__ import annotations

from harness.gateway.evidence.status_page import render

STATUS = {
    "pid": 7,
    "version": "0.1.0",
    "sessions": 2,
    "upstreams": {
        "up": {"state": "up", "pid": 11, "tools": 6, "in_flight": 1, "waiting": 0, "breaker": "closed"},
        "gone": {"state": "failed", "pid": None, "tools": 0, "in_flight": 0, "waiting": 0, "breaker": "open"},
    },
    "harnesses": {"<script>alert(1)</script>": "running"},
    "sessions_per_harness": {"<script>alert(1)</script>": 1, "": 1},
}


def test_every_value_is_escaped_so_a_hostile_name_cannot_script_the_page():
    page = render(
        STATUS, [{"harness": "<b>x</b>", "upstream": "up", "tool": "t", "outcome": "ok"}], {}
    ).decode()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_control_and_bidi_characters_from_an_upstream_never_reach_the_page():
    calls = [
        {"harness": "a", "upstream": "names", "tool": "esc\x1b]0;PWNED\x07\x1b[31mred", "outcome": "ok"},
        {"harness": "a", "upstream": "names", "tool": "rtl\u202eelif_daer", "outcome": "ok"},
    ]
    page = render({**STATUS, "upstreams": {"ev\x1bil": STATUS["upstreams"]["up"]}}, calls, {}).decode()
    assert "\x1b" not in page and "\x07" not in page and "\u202e" not in page
    assert "names__esc]0;PWNED[31mred" in page and "names__rtlelif_daer" in page
    assert 'data-upstream="evil"' in page


def test_an_upstream_not_up_is_shown_down_with_its_state_and_the_page_reloads_itself():
    page = render(STATUS, [], {"": 812.0}).decode()
    assert "<meta http-equiv='refresh' content='1'>" in page
    assert '<td class="up">up</td>' in page and '<td class="down">down (failed)</td>' in page
    assert '<td class="bad">open</td>' in page
    assert 'data-harness="(unattributed)"' in page and "812" in page


def test_calls_are_listed_newest_first():
    calls = [
        {"ts": "2026-12-02T10:00:00.001Z", "harness": "a", "upstream": "u", "tool": "first", "outcome": "ok"},
        {
            "ts": "2026-12-02T10:00:00.002Z",
            "harness": "a",
            "upstream": "u",
            "tool": "second",
            "outcome": "denied",
        },
    ]
    page = render(STATUS, calls, {}).decode()
    assert page.index("u__second") < page.index("u__first")
    assert '<td class="bad">denied</td>' in page


def test_a_project_file_not_approved_is_named_with_the_command_that_approves_it():
    file = "/work/<i>proj</i>/harness.toml"
    page = render({**STATUS, "unapproved_projects": [file]}, [], {}).decode()
    assert "<i>" not in page
    assert "project file /work/&lt;i&gt;proj&lt;/i&gt;/harness.toml is not approved" in page
    assert "harness project allow /work/&lt;i&gt;proj&lt;/i&gt;" in page
    assert "not approved" not in render(STATUS, [], {}).decode()


def test_a_stalled_call_log_is_shown_in_red_with_its_reason():
    stalled = {
        "state": "stalled",
        "since": "2026-12-05T07:00:00Z",
        "reason": "disk full (database or disk is full)",
        "waiting": 1200,
        "dropped": 0,
        "recovered": None,
    }
    page = render({**STATUS, "call_log": stalled}, [], {}).decode()
    assert (
        '<p class="bad" id="call-log">call log: stalled since 2026-12-05T07:00:00Z: the store is disk full'
        in page
    )
    writing = {**stalled, "state": "writing", "since": None, "waiting": 0}
    assert (
        '<p class="ok" id="call-log">call log: writing'
        in render({**STATUS, "call_log": writing}, [], {}).decode()
    )
