"""The daemon's start-up heap is frozen out of the collector, and refrozen after a reload so that
what the old configuration held is still collected."""

from __future__ import annotations

import gc
import weakref

from harness.gateway.heap import resettle_heap, settle_heap


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_a_cycle_frozen_at_start_and_dropped_later_is_collected_after_a_reload():
    try:
        held = Node()
        gone = weakref.ref(held)
        settle_heap()
        assert gc.get_freeze_count() > 0
        del held
        gc.collect()
        assert gone() is not None  # frozen: the collector does not see it
        resettle_heap()
        assert gone() is None
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_heap_never_frozen_is_left_alone():
    gc.unfreeze()
    resettle_heap()
    assert gc.get_freeze_count() == 0
