"""Coalesced writes: one write per transport per input burst; immediate writes outside one."""

from __future__ import annotations

from harness.gateway.wire.outbox import Outbox


class Recorder:
    def __init__(self, closing: bool = False):
        self.writes: list[bytes] = []
        self.closing = closing

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closing


def test_outside_an_input_callback_a_write_goes_out_at_once():
    box, t = Outbox(), Recorder()
    box.write(t, b"a")
    assert t.writes == [b"a"]


def test_writes_during_a_burst_leave_in_one_write_per_transport_in_order():
    box, a, b = Outbox(), Recorder(), Recorder()
    with box:
        box.write(a, b"1")
        with box:  # nested callbacks flush only when the outermost returns
            box.write(b, b"x")
            box.write(a, b"2")
        assert a.writes == [] and b.writes == []
    assert a.writes == [b"12"] and b.writes == [b"x"]


def test_a_transport_closed_meanwhile_gets_nothing():
    box, t = Outbox(), Recorder()
    with box:
        box.write(t, b"late")
        t.closing = True
    assert t.writes == []


def test_work_handed_over_during_a_burst_runs_after_its_writes_went_out_in_order():
    box, t = Outbox(), Recorder()
    seen: list[tuple[str, list[bytes]]] = []
    with box:
        box.write(t, b"answer")
        box.after(lambda name: seen.append((name, list(t.writes))), "first")
        with box:
            box.after(lambda name: seen.append((name, list(t.writes))), "second")
        assert seen == []
    assert seen == [("first", [b"answer"]), ("second", [b"answer"])]


def test_work_handed_over_outside_a_burst_runs_at_once():
    box, seen = Outbox(), []
    box.after(seen.append, 1)
    assert seen == [1]


def test_one_failing_piece_of_work_does_not_cost_the_others_theirs(caplog):
    box, seen = Outbox(), []

    def fails() -> None:
        raise RuntimeError("boom")

    with box:
        box.after(fails)
        box.after(seen.append, "ran")
    assert seen == ["ran"]
    assert "deferred work failed" in caplog.text
