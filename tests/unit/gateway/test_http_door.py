"""The HTTP endpoint's door: which token a connection's peer may present, by where it sits, and what
an unidentified peer gets with and without ``listen_unidentified_peers = "allow"``."""

from __future__ import annotations

import pytest

from harness.events.attribution import Attribution
from harness.gateway.downstream.http_door import HttpDoor
from harness.gateway.downstream.http_wire import HttpRefusal
from harness.gateway.downstream.tcp_peers import TcpPeers
from harness.rules.access import PeerOrigin
from harness.rules.routing import Identity

TOKENS = {
    "tok-a": Identity(Attribution(harness="a", run_id="r"), "0" * 32, "p", frozenset({"read", "write"})),
    "tok-b": Identity(Attribution(harness="b", run_id="r"), "0" * 32, "p", frozenset({"read"})),
}


def _door(allow: bool = False) -> HttpDoor:
    return HttpDoor(lambda: TOKENS, dict, allow_unidentified=allow, peers=TcpPeers(supported=False))


@pytest.mark.parametrize(
    ("origin", "token", "allowed"),
    [
        (PeerOrigin("harness", 10, 0, "a"), "tok-a", True),
        (PeerOrigin("harness", 11, 0, "b"), "tok-a", False),
        (PeerOrigin("outside", 12, 0), "tok-a", True),
        (PeerOrigin("daemon", 13, 0), "tok-b", False),
        (PeerOrigin("unknown", 14, 0), "tok-b", False),
    ],
)
def test_a_peer_may_present_only_the_tokens_its_place_in_the_tree_allows(origin, token, allowed):
    door = _door()
    if allowed:
        door.check_token(origin, token)
    else:
        with pytest.raises(HttpRefusal) as refused:
            door.check_token(origin, token)
        assert refused.value.status == 403 and origin.describe() in refused.value.reason


def test_an_unidentified_peer_is_refused_a_token_unless_the_operator_allows_it():
    refusing, allowing = _door(), _door(allow=True)
    assert refusing.origin(None).kind == "unknown" and allowing.origin(None).kind == "unverified"
    with pytest.raises(HttpRefusal) as refused:
        refusing.check_token(refusing.origin(None), "tok-a")
    assert "listen_unidentified_peers" in refused.value.reason
    allowing.check_token(allowing.origin(None), "tok-a")
