"""CPython's cycle collector, tuned while a worker serves (docs/scale.md, "Garbage
collection").

A worker's event loop sends every target request; a collection holds the interpreter lock,
so while it runs every target slot waits. On the 100-pair nightly with the defaults, the
collector ran about 4,000 times in a two-minute run and took 11-13 s of it, and each full
collection stalled the loop for 200-350 ms. Two reasons:

- **What imports leave.** About 125,000 objects (modules, classes, pydantic's validators)
  live as long as the process, and a full collection traced them all again: 170 ms for
  them alone. Frozen, the collector no longer looks at them.
- **A young generation of 700 objects.** A step's requests, answers and records live for
  milliseconds to seconds; collected every 700 allocations, many were traced, survived,
  and moved on to be traced again in the older generations, each move counting towards
  the next full collection. With 10,000, most die before their first collection.

Measured side by side (three runs each, interleaved): the collector's time fell to 3.3 to
3.8 s, its longest pause to 0.12 to 0.14 s, and the rate rose by about 8%.
"""

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
_restore: tuple[int, int, int] = (700, 10, 10)


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
