"""memlife's custom search attributes: what makes runs findable in the Temporal Web UI and
with `temporal workflow list --query 'MemlifeVerdict="fail"'`.

Safe to import in workflow code (temporalio.common only).
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

SCENARIO = SearchAttributeKey.for_keyword("MemlifeScenario")
TARGET = SearchAttributeKey.for_keyword("MemlifeTarget")
RUN = SearchAttributeKey.for_keyword("MemlifeRun")
PHASE = SearchAttributeKey.for_keyword("MemlifePhase")
VERDICT = SearchAttributeKey.for_keyword("MemlifeVerdict")
PAIR = SearchAttributeKey.for_int("MemlifePair")
TENANT = SearchAttributeKey.for_keyword_list("MemlifeTenant")

ALL = (SCENARIO, TARGET, RUN, PHASE, VERDICT, PAIR, TENANT)

# name -> type as `temporal server start-dev --search-attribute` and
# `temporal operator search-attribute create --type` spell it.
_TYPE_NAMES = {"KEYWORD": "Keyword", "INT": "Int", "KEYWORD_LIST": "KeywordList"}
REGISTRATION: dict[str, str] = {key.name: _TYPE_NAMES[key.indexed_value_type.name] for key in ALL}

# Verdicts as they move: running → pass | fail | inconclusive | cancelled.
RUNNING, PASS, FAIL, INCONCLUSIVE, CANCELLED = (
    "running",
    "pass",
    "fail",
    "inconclusive",
    "cancelled",
)


def start_attributes(
    *, scenario: str, target: str, run: str | None = None, phase: str = "starting"
) -> TypedSearchAttributes:
    """The attributes a run starts with (set by the client or by a schedule action)."""
    pairs = [
        SearchAttributePair(SCENARIO, scenario),
        SearchAttributePair(TARGET, target),
        SearchAttributePair(PHASE, phase),
        SearchAttributePair(VERDICT, RUNNING),
    ]
    if run:
        pairs.append(SearchAttributePair(RUN, run))
    return TypedSearchAttributes(pairs)


def create_commands(temporal: str = "temporal") -> list[str]:
    """The commands that register the attributes on a cluster (README, error messages);
    `temporal` spells the Temporal CLI."""
    return [
        f"{temporal} operator search-attribute create --name {name} --type {kind}"
        for name, kind in REGISTRATION.items()
    ]
