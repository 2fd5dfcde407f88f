"""CPython's cycle collector, tuned while a worker serves. A collection holds the
interpreter lock, so every target slot waits for it: objects that live as long as the
process are frozen out of it, and the young generation is collected less often, so that
a step's short-lived objects mostly die before they are traced. The figures behind both
are in docs/scale.md, "Garbage collection"."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

# Allocations between young-generation collections (CPython's default is 700). Each such
# collection took about 10 ms at this size on the nightly; larger ones stall the loop longer.
YOUNG_GENERATION = 10_000

_lock = threading.Lock()
_serving = 0  # workers serving in this process (tests run several)
_restore = gc.get_threshold()  # what the first worker to serve found


@contextlib.contextmanager
def serving() -> Iterator[None]:
    """For the block: what exists now is frozen out of collections, and the young
    generation is collected every YOUNG_GENERATION allocations. The first block to enter
    tunes, the last to leave restores the thresholds and unfreezes, so workers that
    overlap in one process leave it as they found it."""
    global _serving, _restore
    with _lock:
        if _serving == 0:
            _restore = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(YOUNG_GENERATION, *_restore[1:])
        _serving += 1
    try:
        yield
    finally:
        with _lock:
            _serving -= 1
            if _serving == 0:
                gc.set_threshold(*_restore)
                gc.unfreeze()
