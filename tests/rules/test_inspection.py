"""Judging store reads: retention policies, misfiled values, stale values, overreach, and
the rule that an unreadable store is inconclusive, never clean."""

from __future__ import annotations

from memlife.rules.evidence import StoreRead, StoreRecordView
from memlife.rules.judging import judge_inspection
from memlife.rules.probes import SqlProbe
from memlife.rules.target import Store, StoreProbe
from memlife.rules.verdicts import ForbiddenValue, InspectCase, Needle

PROBE = StoreProbe.model_validate(
    {
        "scope": {"method": "GET", "path": "/s", "query": {"t": "{user_id}"}},
        "needle": {"method": "GET", "path": "/n", "query": {"q": "{needle}"}},
        "deleted": "/deleted",
    }
)


def store(name: str, retention: str = "purge", updates: str = "replace") -> Store:
    return Store(name=name, retention=retention, updates=updates, probe=PROBE)


def case(deleted: bool = False, **extra: object) -> InspectCase:
    origin = "deleted" if deleted else "current"
    fields = dict(
        case_id="s5-a",
        role="a",
        tenant_alias="ana",
        deleted=deleted,
        identities=["u-ana"],
        needles=[
            Needle(text="Panadería Quispe", domain="job", origin=origin),
            Needle(text="Canelo Ruiz", domain="pet", origin=origin),
        ],
        partner_values=[
            ForbiddenValue(text="Ferretería Olmos", origin="partner", domain="job", owner="bruno")
        ],
    )
    fields.update(extra)
    return InspectCase(**fields)


def record(
    rid: str, tenant: str, matches: list[int], deleted: bool | None = None
) -> StoreRecordView:
    return StoreRecordView(
        id=rid, tenant_id=tenant, matches=matches, deleted=deleted, excerpt="..."
    )


def read(store_name: str, mode: str, key: str, *records: StoreRecordView) -> StoreRead:
    return StoreRead(
        store=store_name, mode=mode, key=key, total=len(records), records=list(records)
    )


def outcomes(verdicts: list) -> dict[tuple[str, str], str]:
    return {(c.invariant, c.store): c.outcome for v in verdicts for c in v.checks}


def test_live_tenant_clean_store_passes_and_reports_what_it_holds() -> None:
    reads = [
        read("memory", "scope", "u-ana", record("m1", "u-ana", [0]), record("m2", "u-ana", [1])),
        read("memory", "needle", "Panadería Quispe", record("m1", "u-ana", [0])),
    ]
    verdicts, summary = judge_inspection(case(), reads, [store("memory")])
    assert outcomes(verdicts) == {("I1", "memory"): "pass", ("I2", "memory"): "pass"}
    assert summary.present == {"memory": ["Canelo Ruiz", "Panadería Quispe"]}


def test_value_filed_under_another_tenant_is_I1_one_finding_per_value() -> None:
    reads = [
        read(
            "jobs", "needle", "Panadería Quispe", record("j1", "u-x", [0]), record("j2", "u-y", [0])
        )
    ]
    verdicts, _ = judge_inspection(case(), reads, [store("jobs", "retain-redacted", "append")])
    (verdict,) = verdicts
    assert [(f.invariant, f.value) for f in verdict.findings] == [("I1", "Panadería Quispe")]
    assert "2 records (j1, j2)" in verdict.findings[0].detail


def test_partner_value_or_foreign_record_in_own_scope_is_I2() -> None:
    reads = [
        read("graph", "scope", "u-ana", record("g1", "u-ana", [2]), record("g2", "u-bruno", []))
    ]
    verdicts, _ = judge_inspection(case(), reads, [store("graph")])
    reasons = [(f.invariant, f.value) for f in verdicts[0].findings]
    assert ("I2", "Ferretería Olmos") in reasons and ("I2", None) in reasons


def test_superseded_value_live_in_a_replace_store_is_stale_but_not_in_history() -> None:
    stale_case = case(stale_after_grace=["Panadería Quispe"])
    reads = [
        read("memory", "scope", "u-ana", record("m1", "u-ana", [0])),
        read("thread", "scope", "u-ana", record("t1", "u-ana", [0], deleted=False)),
    ]
    verdicts, _ = judge_inspection(
        stale_case, reads, [store("memory"), store("thread", "tombstone", "append")]
    )
    assert outcomes(verdicts)[("U1", "memory")] == "fail"
    assert ("U1", "thread") not in outcomes(verdicts)


def test_deleted_tenant_retention_policies() -> None:
    stores = [
        store("memory"),
        store("thread", "tombstone", "append"),
        store("jobs", "retain-redacted", "append"),
    ]
    reads = [
        read("memory", "scope", "u-ana"),
        read("thread", "scope", "u-ana", record("t1", "u-ana", [0], deleted=True)),
        read("thread", "needle", "Panadería Quispe", record("t1", "u-ana", [0], deleted=True)),
        read("jobs", "scope", "u-ana", record("j1", "u-ana", [])),
    ]
    verdicts, summary = judge_inspection(case(deleted=True), reads, stores)
    assert {v.store: v.outcome for v in verdicts} == {
        "memory": "pass",
        "thread": "pass",
        "jobs": "pass",
    }
    assert sorted(summary.clean) == ["jobs", "memory", "thread"]
    # an unmarked checkpoint, a purge-store row, a redacted row still holding the value
    dirty = [
        read("memory", "scope", "u-ana", record("m1", "u-ana", [])),
        read("thread", "needle", "Canelo Ruiz", record("t2", "u-ana", [1], deleted=False)),
        read("jobs", "needle", "Canelo Ruiz", record("j1", "u-ana", [1])),
    ]
    verdicts, summary = judge_inspection(case(deleted=True), dirty, stores)
    assert {v.store: v.outcome for v in verdicts} == {
        "memory": "fail",
        "thread": "fail",
        "jobs": "fail",
    }
    assert summary.clean == []
    assert {(f.store, f.reason, f.value) for v in verdicts for f in v.findings} == {
        ("memory", "residue", None),
        ("thread", "residue", "Canelo Ruiz"),
        ("jobs", "residue", "Canelo Ruiz"),
    }


def test_residue_after_a_clean_inspection_is_a_resurrection() -> None:
    reads = [read("memory", "scope", "u-ana", record("m9", "u-ana", [0]))]
    verdicts, _ = judge_inspection(
        case(deleted=True, clean_before=["memory"]), reads, [store("memory")]
    )
    assert [f.reason for f in verdicts[0].findings] == ["resurrected"]


def test_values_lost_after_the_partners_deletion_are_overreach() -> None:
    reads = [read("memory", "scope", "u-ana", record("m2", "u-ana", [1]))]
    verdicts, _ = judge_inspection(
        case(expected_present={"memory": ["Canelo Ruiz", "Panadería Quispe"]}),
        reads,
        [store("memory")],
    )
    assert [(f.invariant, f.reason, f.value) for f in verdicts[0].findings] == [
        ("D2", "overreach", "Panadería Quispe")
    ]


def test_an_unreadable_store_is_inconclusive_never_clean() -> None:
    reads = [
        StoreRead(
            store="memory",
            mode="scope",
            key="u-ana",
            status="error",
            error="TargetServerError: HTTP 503",
        ),
        read("memory", "needle", "Canelo Ruiz"),
    ]
    verdicts, summary = judge_inspection(case(deleted=True), reads, [store("memory")])
    assert verdicts[0].outcome == "inconclusive" and not verdicts[0].passed
    assert summary.clean == []  # never counted as seen clean
    assert "HTTP 503" in verdicts[0].findings[0].detail


def test_a_forgotten_value_of_a_live_tenant_must_leave_every_store() -> None:
    forgot = case(
        needles=[
            Needle(text="Panadería Quispe", domain="job", origin="current"),
            Needle(text="Canelo Ruiz", domain="pet", origin="deleted"),
        ]
    )
    stores = [store("graph"), store("thread", "tombstone", "append")]
    reads = [
        read("graph", "needle", "Canelo Ruiz", record("g1", "u-ana", [1])),
        read("thread", "needle", "Canelo Ruiz", record("t1", "u-ana", [1], deleted=True)),
    ]
    verdicts, summary = judge_inspection(forgot, reads, stores)
    assert outcomes(verdicts)[("I4", "graph")] == "fail"
    assert outcomes(verdicts)[("I4", "thread")] == "pass"  # tombstoned is allowed
    assert summary.clean == ["thread"]


# -- files probes: I4-physical ---------------------------------------------------------------

FILES = Store(name="memory-disk", probe={"kind": "files", "path": "/var/lib/memory", "grace": "1d"})


def test_erased_bytes_on_disk_past_the_grace_fail_i4_physical() -> None:
    from datetime import timedelta

    hits = read(
        "memory-disk",
        "needles",
        "Panadería Quispe\nCanelo Ruiz",
        StoreRecordView(id="memory.db@4096", matches=[0], excerpt="Panadería Quispe"),
        StoreRecordView(id="memory.db-wal@80", matches=[0], excerpt="Panadería Quispe"),
    )
    late = case(deleted=True, erased_for=timedelta(days=2))
    verdicts, _ = judge_inspection(late, [hits], [FILES])
    assert outcomes(verdicts) == {("I4-physical", "memory-disk"): "fail"}
    [finding] = verdicts[0].findings
    assert (finding.invariant, finding.reason, finding.value) == (
        "I4-physical",
        "residue",
        "Panadería Quispe",
    )
    assert "memory.db@4096, memory.db-wal@80" in finding.detail
    assert "2d after the erasure request, past the 1d grace" in finding.detail

    # Within the grace the same bytes are allowed: compaction takes time.
    early = case(deleted=True, erased_for=timedelta(hours=3))
    verdicts, _ = judge_inspection(early, [hits], [FILES])
    assert outcomes(verdicts) == {("I4-physical", "memory-disk"): "pass"}
    assert verdicts[0].findings == []

    # Nothing on disk: clean at once.
    clean = read("memory-disk", "needles", "Panadería Quispe\nCanelo Ruiz")
    verdicts, _ = judge_inspection(late, [clean], [FILES])
    assert outcomes(verdicts) == {("I4-physical", "memory-disk"): "pass"}


def test_files_probes_judge_only_erased_values_and_fail_closed() -> None:
    from datetime import timedelta

    # A live tenant's own current values on disk are expected: no check at all; a
    # forgotten fact's value is judged like a deleted tenant's.
    live = case(
        needles=[
            Needle(text="Panadería Quispe", domain="job", origin="current"),
            Needle(text="Canelo Ruiz", domain="pet", origin="deleted"),
        ],
        erased_for=timedelta(days=3),
    )
    hits = read(
        "memory-disk",
        "needles",
        "Canelo Ruiz",
        StoreRecordView(id="memory.db@10", matches=[0, 1], excerpt="…"),
    )
    verdicts, _ = judge_inspection(live, [hits], [FILES])
    assert outcomes(verdicts) == {("I4-physical", "memory-disk"): "fail"}
    assert [f.value for f in verdicts[0].findings] == ["Canelo Ruiz"]

    failed = StoreRead(
        store="memory-disk",
        mode="needles",
        key="Canelo Ruiz",
        status="error",
        error="FilesProbeError: cannot read memory.db",
    )
    verdicts, _ = judge_inspection(
        case(deleted=True, erased_for=timedelta(days=3)), [failed], [FILES]
    )
    assert outcomes(verdicts) == {("I4-physical", "memory-disk"): "inconclusive"}
    assert verdicts[0].findings[0].reason == "target-error"


UNOWNED_PROBE = StoreProbe.model_validate(
    {
        "scope": {"method": "GET", "path": "/s", "query": {"t": "{user_id}"}},
        "needle": {"method": "POST", "path": "/search", "json": {"q": "{needle}"}},
        "tenant_field": None,
    }
)


def unowned(rid: str, matches: list[int]) -> StoreRecordView:
    return StoreRecordView(id=rid, tenant_id=None, matches=matches, excerpt="...")


def test_records_naming_no_tenant_from_a_search_are_judged_by_whose_values_they_hold() -> None:
    """Letta's passages name no agent, and its passage search spans every agent: the
    partner's passages it returns are neither a leak into this tenant's scope nor, once
    this tenant is deleted, its residue."""
    passages = Store(name="archival", probe=UNOWNED_PROBE)
    search = read(
        "archival",
        "needle",
        "Panadería Quispe",
        unowned("p-own", [0]),
        unowned("p-partner", [2]),
        unowned("p-other", []),
    )
    live = [read("archival", "scope", "u-ana", unowned("p-own", [0])), search]
    verdicts, summary = judge_inspection(case(), live, [passages])
    assert outcomes(verdicts) == {("I1", "archival"): "pass", ("I2", "archival"): "pass"}
    assert summary.present == {"archival": ["Panadería Quispe"]}
    # The same passage in the tenant's own scope is its own, and the partner's value in it a
    # leak.
    leaked = [read("archival", "scope", "u-ana", unowned("p-partner", [2])), search]
    verdicts, _ = judge_inspection(case(), leaked, [passages])
    assert outcomes(verdicts)[("I2", "archival")] == "fail"
    # Deleted: the search still finds the tenant's own passage (residue), and the partner's
    # and a stranger's passages are not counted against it.
    verdicts, _ = judge_inspection(
        case(deleted=True),
        [
            read("archival", "scope", "u-ana"),
            read(
                "archival",
                "needle",
                "Panadería Quispe",
                unowned("p-own", [0]),
                unowned("p-partner", [2]),
                unowned("p-other", []),
            ),
        ],
        [passages],
    )
    assert [(f.invariant, f.value, f.detail) for f in verdicts[0].findings] == [
        ("I4", "Panadería Quispe", "1 record (p-own) remain in this purge store")
    ]
    verdicts, _ = judge_inspection(
        case(deleted=True),
        [
            read("archival", "scope", "u-ana"),
            read("archival", "needle", "Panadería Quispe", unowned("p-partner", [2])),
        ],
        [passages],
    )
    assert outcomes(verdicts) == {("I4", "archival"): "pass"}


def test_a_deleted_spaces_value_in_a_record_naming_no_tenant_is_a_members_residue() -> None:
    """A deleted space's fact is forbidden to everyone and, for its former member, a value
    to look for: a history row holding it, which names no tenant, is that member's residue
    (Mem0's history keeps it, tests/workflows/test_public_api_targets.py)."""
    space_value = "Conservas Palacios"
    member = case(
        needles=[Needle(text=space_value, domain="supplier", origin="deleted")],
        partner_values=[
            ForbiddenValue(text=space_value, origin="space", domain="supplier", owner="team")
        ],
    )
    history = SqlProbe(
        kind="sql",
        url_env="HISTORY_DB_URL",
        needle="SELECT id, new_memory AS content FROM history WHERE instr(new_memory, :needle) > 0",
    )
    verdicts, _ = judge_inspection(
        member,
        [read("history", "needle", space_value, unowned("h-1", [0]))],
        [Store(name="history", probe=history, updates="append")],
    )
    assert [(f.invariant, f.value, f.reason) for f in verdicts[0].findings] == [
        ("I4", space_value, "residue")
    ]
