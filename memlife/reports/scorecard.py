"""The scorecard every report format is drawn from: the artifact's summary, matrix and
findings, the rates with bootstrap 95% intervals over pairs, findings grouped (leaks,
residues, the rest), and redaction of phone numbers and tenant ids. Pure."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from memlife.rules.statistics import bootstrap_rate
from memlife.rules.verdicts import INVARIANTS

RATES = {"recall": "recall", "update": "U1", "deletion": "I4", "response isolation": "I3"}
LEAK_REASONS = ("leaked", "overreach")
RESIDUE_REASONS = ("residue", "resurrected")


# -- redaction -----------------------------------------------------------------------------


def redact(artifact: dict[str, Any]) -> dict[str, Any]:
    """A copy with every run tenant's phone number and tenant id replaced by a label."""
    replacements: dict[str, str] = {}
    for tenant in artifact.get("tenants", []):
        label = f"p{tenant['pair']}{tenant['role']}"
        if tenant.get("phone"):
            replacements[str(tenant["phone"])] = f"phone[{label}]"
        if tenant.get("user_id"):
            replacements[str(tenant["user_id"])] = f"tenant[{label}]"
    ordered = sorted(replacements.items(), key=lambda item: -len(item[0]))

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            for secret, label in ordered:
                if secret in value:
                    value = value.replace(secret, label)
            return value
        if isinstance(value, list):
            return [scrub(item) for item in value]
        if isinstance(value, dict):
            return {key: scrub(item) for key, item in value.items()}
        return value

    redacted = scrub(copy.deepcopy(artifact))
    redacted.setdefault("meta", {})["redacted"] = True
    return redacted


# -- the scorecard -------------------------------------------------------------------------


def _rate_inputs(pairs: list[dict[str, Any]], invariant: str) -> list[tuple[int, int]]:
    inputs = []
    for pair in pairs:
        tally = pair.get("by_invariant", {}).get(invariant)
        if tally:
            decided = tally["checked"] - tally["inconclusive"]
            inputs.append((decided - tally["failed"], decided))
    return inputs


def _adjudicated_inputs(pairs: list[dict[str, Any]], adjudications: list[dict[str, Any]],
                        invariant: str) -> list[tuple[int, int]]:
    """The exact-match units, with each reviewed check's outcome replaced by the
    reviewer's: a pass the reviewer overturned counts as a failure, and the reverse."""
    shift: dict[int, int] = {}
    for entry in adjudications:
        exact, decided = entry["exact"].get(invariant), entry["adjudicated"].get(invariant)
        if exact is None or decided is None or exact == decided:
            continue
        shift[entry["pair"]] = shift.get(entry["pair"], 0) + (1 if decided == "pass" else -1)
    inputs = []
    for pair in pairs:
        tally = pair.get("by_invariant", {}).get(invariant)
        if tally:
            decided_total = tally["checked"] - tally["inconclusive"]
            passed = decided_total - tally["failed"] + shift.get(pair["pair"], 0)
            inputs.append((passed, decided_total))
    return inputs


def scorecard(artifact: dict[str, Any]) -> dict[str, Any]:
    """What every format shows: verdict, rates with 95% intervals over pairs, the matrix,
    every leak and every residue on its own, latency and the timeline."""
    failures = artifact.get("failures", [])
    rates = {name: {"invariant": invariant,
                    **bootstrap_rate(_rate_inputs(artifact.get("pairs", []),
                                                  invariant)).as_dict()}
             for name, invariant in RATES.items()}
    latencies = [o["latency_ms"] for o in artifact.get("observations", [])
                 if o["kind"] == "probe" and o["status"] == "ok" and o["latency_ms"] is not None]
    adjudications = artifact.get("adjudications", [])
    adjudicated_rates = {
        name: {"invariant": invariant, **bootstrap_rate(_adjudicated_inputs(
            artifact.get("pairs", []), adjudications, invariant)).as_dict()}
        for name, invariant in RATES.items()} if adjudications else {}
    return {
        "report_version": 1,
        "meta": artifact["meta"],
        "summary": artifact["summary"],
        "rates": rates,
        "adjudicated_rates": adjudicated_rates,
        "adjudications": adjudications,
        "stages": artifact.get("stages", []),
        "matrix": artifact.get("matrix", {}),
        "latency_ms": {**artifact.get("latency_ms", {}), "samples": latencies},
        "deletions": artifact.get("deletions", []),
        "leaks": [f for f in failures if f["reason"] in LEAK_REASONS],
        "residues": [f for f in failures if f["reason"] in RESIDUE_REASONS],
        "other_failures": [f for f in failures
                           if f["reason"] not in LEAK_REASONS + RESIDUE_REASONS],
        "inconclusive": artifact.get("inconclusive", []),
        "timeline": artifact.get("timeline", []),
        "tenants": [{k: t.get(k) for k in ("pair", "role", "alias", "phone", "user_id")}
                    for t in artifact.get("tenants", [])],
        "cases": artifact.get("cases", []),
    }


# -- shared bits ---------------------------------------------------------------------------


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def interval(rate: dict[str, Any]) -> str:
    if rate["rate"] is None:
        return "not checked"
    text = f"{pct(rate['rate'])} [{pct(rate['ci95_low'])}, {pct(rate['ci95_high'])}]"
    return f"{text} ({rate['successes']}/{rate['trials']} over {rate['pairs']} pair(s))"


def verdict_word(card: dict[str, Any]) -> str:
    return "PASS" if card["summary"]["passed"] else "FAIL"


def invariant_order(matrix: dict[str, Any]) -> list[str]:
    order = {name: index for index, name in enumerate(INVARIANTS)}
    return sorted(matrix, key=lambda name: order.get(name, 99))


def cell_state(cell: dict[str, int]) -> str:
    return "fail" if cell["failed"] else "inconclusive" if cell["inconclusive"] else "pass"


def matrix_rows(card: dict[str, Any], stages: list[str]) -> Iterator[
        tuple[str, str, list[dict[str, int] | None]]]:
    """(invariant, store, the cell of each stage or None), invariants in their order."""
    for invariant in invariant_order(card["matrix"]):
        for store, cells in sorted(card["matrix"][invariant].items()):
            yield invariant, store, [cells.get(stage) for stage in stages]


def ratio(cell: dict[str, int]) -> str:
    """passed/checked"""
    return f"{cell['checked'] - cell['failed'] - cell['inconclusive']}/{cell['checked']}"


def used_stages(card: dict[str, Any]) -> list[str]:
    matrix = card["matrix"]
    return [stage for stage in card["stages"]
            if any(stage in cells for stores in matrix.values() for cells in stores.values())]


def finding_line(f: dict[str, Any]) -> str:
    value = f["evidence"].get("value")
    return (f"{f['invariant']} {f['reason']} · stage {f['stage']} · {f['tenant']} (pair "
            f"{f['pair']}) · {f['store']}" + (f" · value `{value}`" if value else "")
            + (f" — {f['evidence']['detail']}" if f["evidence"].get("detail") else ""))


def changes(entry: dict[str, Any]) -> str:
    return ", ".join(f"{check}: {entry['exact'].get(check)} → {outcome}"
                     for check, outcome in entry["adjudicated"].items())
