"""Synthetic phone numbers in a fictional range. Pure.

NANP reserves 555-0100 through 555-0199 in every area code for fiction; with the 792
geographic-style area codes (NXX, not N11) that is 79,200 numbers. A run takes a
contiguous block at an offset derived from its id, so numbers are unique within a run
(up to 79,200 tenants) and differ between runs.
"""

from __future__ import annotations

import hashlib

_AREA_CODES = [
    code
    for code in range(200, 1000)
    if code % 100 != 11  # N11 codes are service codes
]
CAPACITY = len(_AREA_CODES) * 100


def synthetic_phone(run_id: str, tenant_index: int, *, aligned: bool = False) -> str:
    """The run's phone for one tenant. `aligned` starts the run's block on an even slot,
    so tenants 2k and 2k+1 differ in their last digit only (colliding identities)."""
    if not 0 <= tenant_index < CAPACITY:
        raise ValueError(f"tenant index {tenant_index} outside the fictional range capacity")
    offset = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big") % CAPACITY
    if aligned:
        offset -= offset % 2  # CAPACITY is even: the block wraps onto even slots too
    slot = (offset + tenant_index) % CAPACITY
    area = _AREA_CODES[slot // 100]
    return f"+1{area}55501{slot % 100:02d}"


def is_fictional(phone: str) -> bool:
    return len(phone) == 12 and phone.startswith("+1") and phone[5:10] == "55501"
