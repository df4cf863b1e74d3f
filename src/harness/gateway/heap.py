"""The daemon's heap: what start made is frozen out of the collector's way, and thawed after a reload."""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Collect once, then move what is alive into the permanent generation: what start made
    (modules, config, catalogues, the SDK's types) lives as long as the daemon, and a full collection
    walking it costs ~40 ms on a 2-core VM, a pause that every call in flight would wait out. Only
    objects made later are collected from now on."""
    gc.collect()
    gc.freeze()


def resettle_heap() -> None:
    """After a reload: what the old configuration held may be garbage now, reference cycles included,
    which frozen objects never are collected as. Unfreeze, collect all, freeze again (one full
    collection, a pause of tens of ms; a reload is rare). Nothing to do if the heap was never frozen."""
    if gc.get_freeze_count():
        gc.unfreeze()
        settle_heap()
