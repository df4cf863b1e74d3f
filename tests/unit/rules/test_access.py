"""Who a control-socket caller is and what it may do (M2): ancestry only takes rights away."""

from __future__ import annotations

import pytest

from harness.events.attribution import Attribution
from harness.rules.access import (
    COMMAND_TIERS,
    NotPermitted,
    PeerOrigin,
    check,
    control_caller,
    session_token,
)
from harness.rules.routing import Identity


def _identity(name: str, allow: set[str]) -> Identity:
    return Identity(Attribution(harness=name, run_id="r"), "0" * 32, "p", frozenset(allow))


TOKENS = {"tok-reader": _identity("reader", {"read"}), "tok-writer": _identity("writer", {"read", "write"})}
OUTSIDE = PeerOrigin("outside", 10, 1000)
IN_READER = PeerOrigin("harness", 11, 1000, "reader")
IN_DAEMON = PeerOrigin("daemon", 12, 1000)
UNKNOWN = PeerOrigin("unknown", 13, 1000)


def test_outside_the_daemons_tree_with_no_token_is_the_operator_who_may_do_everything():
    caller = control_caller(OUTSIDE, None, TOKENS)
    assert caller.operator
    for command in COMMAND_TIERS:
        check(caller, command)


@pytest.mark.parametrize(
    ("origin", "token", "harness", "allow"),
    [
        (OUTSIDE, "tok-writer", "writer", {"read", "write"}),  # a token from outside: that harness
        (OUTSIDE, "tok-reader", "reader", {"read"}),
        (OUTSIDE, "tok-gone", None, set()),  # a wrong or expired token: no one
        (IN_READER, None, "reader", {"read"}),  # inside a harness's tree: that harness
        (IN_READER, "tok-reader", "reader", {"read"}),
        (IN_READER, "tok-writer", None, set()),  # a sibling's stolen token: no one
        (IN_DAEMON, None, None, set()),  # an upstream, an orphan the daemon adopted
        (IN_DAEMON, "tok-writer", None, set()),
        (UNKNOWN, None, None, set()),
        (UNKNOWN, "tok-writer", None, set()),
    ],
)
def test_every_other_caller_gets_at_most_its_harnesss_mcp_allow(origin, token, harness, allow):
    caller = control_caller(origin, token, TOKENS)
    assert (caller.operator, caller.harness, caller.allow) == (False, harness, frozenset(allow))


@pytest.mark.parametrize("command", ["restart", "stop", "start"])
def test_write_commands_need_write_and_say_who_the_caller_was(command):
    with pytest.raises(NotPermitted, match=rf'^not_permitted: `{command}` needs mcp_allow "write"; .*reader'):
        check(control_caller(IN_READER, None, TOKENS), command)
    check(control_caller(OUTSIDE, "tok-writer", TOKENS), command)


def test_reload_is_the_operators_alone_even_for_a_harness_allowed_write():
    with pytest.raises(NotPermitted, match="reserved to the operator"):
        check(control_caller(OUTSIDE, "tok-writer", TOKENS), "reload")


@pytest.mark.parametrize("command", ["list", "status", "describe", "logs"])
def test_read_commands_are_open_to_a_harness_allowed_read(command):
    check(control_caller(IN_READER, None, TOKENS), command)


@pytest.mark.parametrize("command", ["list", "status", "describe", "logs"])
@pytest.mark.parametrize(("origin", "token"), [(IN_DAEMON, None), (UNKNOWN, None), (OUTSIDE, "tok-gone")])
def test_a_caller_with_no_harness_identity_may_run_no_command_not_even_a_read(origin, token, command):
    with pytest.raises(NotPermitted, match=rf"^not_permitted: `{command}` .* has no harness identity$"):
        check(control_caller(origin, token, TOKENS), command)


def test_a_harness_allowed_nothing_may_not_even_list():
    tokens = {"tok-mute": _identity("mute", set())}
    with pytest.raises(NotPermitted):
        check(control_caller(PeerOrigin("harness", 5, 1000, "mute"), None, tokens), "list")


@pytest.mark.parametrize(
    ("origin", "token", "usable"),
    [
        (OUTSIDE, "tok-writer", "tok-writer"),  # identity is the token alone
        (OUTSIDE, None, None),
        (IN_READER, "tok-reader", "tok-reader"),
        (IN_READER, None, None),  # no token: unattributed, as before
        (IN_READER, "tok-writer", None),  # a sibling's token: refused
        (IN_DAEMON, "tok-writer", None),
        (UNKNOWN, "tok-writer", None),
        (PeerOrigin("unverified"), "tok-writer", "tok-writer"),
    ],
)
def test_a_session_keeps_its_token_only_if_its_process_may_hold_it(origin, token, usable):
    assert session_token(origin, token, TOKENS) == usable
