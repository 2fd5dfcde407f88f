"""CPython's cycle collector, tuned while a worker serves. A collection holds the
interpreter lock, so every target slot waits for it: objects that live as long as the
process are frozen out of it, and the young generation is collected less often, so that
a step's short-lived objects mostly die before they are traced. The figures behind both
are in docs/scale.md, "Garbage collection".

And glibc's malloc arenas, limited for a worker process before its threads start
(`limit_malloc_arenas`): docs/scale.md, "Memory"."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import sys
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


# glibc gives a thread that allocates while others hold the existing arenas an arena of its
# own, up to eight per core, and each keeps what its threads freed. A worker's threads
# (the SDK core's, workflow activations', sync activities') hold about a tenth of its
# memory that way; two arenas cost it no measurable speed (docs/scale.md, "Memory").
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's <malloc.h>


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Limit this process to `arenas` malloc arenas; call it before threads start, since a
    thread keeps the arena it first used. Whether the limit applies: only with glibc, and
    not where MALLOC_ARENA_MAX is set (the operator's own choice, which glibc has read)."""
    if "MALLOC_ARENA_MAX" in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library to ask, or one without mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, arenas))
