"""The receipt's bookkeeping: clean streaks, resurrection, fail-closed verdicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memlife.bundled.reference.target_file import reference_target
from memlife.reports.receipt import receipt_markdown
from memlife.rules import erasure
from memlife.rules.erasure import DeletionCheckInput
from memlife.rules.evidence import Reply

T0 = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)


def check(**changes: object) -> DeletionCheckInput:
    base = DeletionCheckInput(
        check_id="c1",
        target=reference_target("http://127.0.0.1:1"),
        user_id="u-1",
        phone="+34600000001",
        values=["verde jade", "Astilleros Norte"],
        questions=["¿Qué sabes de mí?"],
        request=True,
    )
    return base.model_copy(update=changes)


def test_a_store_is_clean_from_the_start_of_its_current_clean_streak() -> None:
    receipt = erasure.new_receipt(check(), T0)
    receipt = receipt.model_copy(update={"requested_at": T0})
    receipt = erasure.absorb(receipt, {"memory": ("residue", ["2 records"])}, T0)
    receipt = erasure.absorb(receipt, {"memory": ("clean", [])}, T0 + timedelta(minutes=30))
    receipt = erasure.absorb(receipt, {"memory": ("clean", [])}, T0 + timedelta(minutes=45))
    memory = next(s for s in receipt.stores if s.store == "memory")
    assert memory.clean_since == T0 + timedelta(minutes=30)
    assert memory.time_to_forget_s == 1800
    assert memory.rounds == 3
    # Back again: no longer clean, and the time-to-forget is withdrawn.
    receipt = erasure.absorb(
        receipt, {"memory": ("residue", ["1 record"])}, T0 + timedelta(hours=1)
    )
    memory = next(s for s in receipt.stores if s.store == "memory")
    assert (memory.status, memory.clean_since, memory.time_to_forget_s) == ("residue", None, None)


def test_residue_fails_unread_is_inconclusive_and_only_all_clean_passes() -> None:
    receipt = erasure.new_receipt(check(), T0)
    names = [s.store for s in receipt.stores]
    clean = {name: ("clean", []) for name in names}
    assert erasure.finish(erasure.absorb(receipt, clean, T0), T0).verdict == "pass"
    unread = {**clean, "graph": ("unreadable", ["timeout"])}
    assert erasure.finish(erasure.absorb(receipt, unread, T0), T0).verdict == "inconclusive"
    dirty = {**unread, "summaries": ("residue", ["value #1: 1 record remain"])}
    finished = erasure.finish(erasure.absorb(receipt, dirty, T0), T0)
    assert finished.verdict == "fail"
    assert any(reason.startswith("summaries:") for reason in finished.reasons)
    # A store never read at all is not clean either.
    assert erasure.finish(receipt, T0).verdict == "inconclusive"


def test_the_channel_forgetting_the_tenant_is_clean_but_other_errors_are_not() -> None:
    gone = Reply(
        index=0, status="target-error", http_status=404, error="unknown user", wall_time=T0
    )
    assert erasure.answer_outcome(check(), [gone]) == ("clean", [])
    broken = gone.model_copy(update={"http_status": 503})
    assert erasure.answer_outcome(check(), [broken])[0] == "unreadable"
    leaking = Reply(index=0, reply="Tu color es el VERDE JADE.", wall_time=T0)
    status, found = erasure.answer_outcome(check(), [leaking])
    assert status == "residue" and "value #1" in found[0]
    assert "verde" not in found[0].lower()


def test_values_are_named_by_position_and_digest_never_in_clear() -> None:
    receipt = erasure.new_receipt(check(), T0)
    text = receipt_markdown(receipt) + receipt.model_dump_json()
    assert "verde jade" not in text.lower() and "astilleros" not in text.lower()
    assert "value #2 (sha256 " in text
    assert erasure.value_label(0, "Verde  Jade") == erasure.value_label(0, "verde jade")
