"""Graphiti's prompts as graphiti-core 0.31.2 sent them (request bodies captured from
`OpenAIGenericClient` and `OpenAIRerankerClient` during add_episode, remove_episode and a
rank, trimmed to what a model reads: tests/fixtures/model/graphiti/), answered by the
scripted model's rules (memlife/bundled/model/graphiti.py). Each answer must satisfy the
JSON schema the request itself carries, as Graphiti parses it into its pydantic model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from memlife.bundled.model import graphiti, serve
from memlife.bundled.model.script import Chat, UnknownPrompt, respond

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "model" / "graphiti"
KINDS = {
    path.stem: f"graphiti.{path.stem.removesuffix('-es')}"
    for path in sorted(FIXTURES.glob("*.json"))
}


def _body(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def _chat(body: dict[str, Any]) -> Chat:
    return Chat.from_request(body, caller="AsyncOpenAI/Python graphiti-core fixture")


def _answer(name: str, body: dict[str, Any] | None = None) -> Any:
    body = body if body is not None else _body(name)
    kind, answer = respond(_chat(body), graphiti.RULES)
    assert kind == KINDS[name]
    return json.loads(answer.content or "") if body.get("response_format") else answer


def _edited(name: str, old: str, new: str) -> dict[str, Any]:
    """The fixture with one piece of its user prompt changed (a case the run did not meet)."""
    body = _body(name)
    user = body["messages"][-1]
    assert old in user["content"]
    user["content"] = user["content"].replace(old, new)
    return body


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_captured_prompt_has_one_rule_and_a_valid_deterministic_answer(name: str) -> None:
    body = _body(name)
    kind, answer = respond(_chat(body), graphiti.RULES)  # several rules claiming it: an error
    assert kind == KINDS[name]
    assert respond(_chat(body), graphiti.RULES) == (kind, answer)  # same input, same output
    assert respond(_chat(body), serve.RULES) == (kind, answer)  # no other stack's rule claims it
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    if schema is not None:
        jsonschema.validate(json.loads(answer.content or ""), schema)


def test_entities_are_the_speaker_then_each_statements_value() -> None:
    assert _answer("extract-nodes") == {
        "extracted_entities": [
            {"name": "user", "entity_type_id": 0, "episode_indices": [0]},
            {"name": "Librería Egaña Fuentes", "entity_type_id": 0, "episode_indices": [0]},
        ]
    }
    names = [e["name"] for e in _answer("extract-nodes-es")["extracted_entities"]]
    assert names == ["user", "Clínica Domínguez Ocampo"]


def test_an_edge_is_the_statement_word_for_word_from_the_speaker_to_its_value() -> None:
    assert _answer("extract-edges") == {
        "edges": [
            {
                "source_entity_name": "user",
                "target_entity_name": "Librería Egaña Fuentes",
                "relation_type": "WORK_AT",
                "fact": "Now I work at Librería Egaña Fuentes",
                "valid_at": "2026-01-01T11:00:00Z",
                "invalid_at": None,
                "episode_indices": [0],
            }
        ]
    }
    [edge] = _answer("extract-edges-es")["edges"]
    assert (edge["target_entity_name"], edge["fact"], edge["relation_type"]) == (
        "Bolt Sandoval",
        "Mi mascota se llama Bolt Sandoval",
        "MASCOTA_LLAMA",
    )


def test_no_edge_to_a_value_the_entities_do_not_list() -> None:
    body = _edited("extract-edges", '"name": "Librería Egaña Fuentes"', '"name": "Egaña"')
    assert _answer("extract-edges", body) == {"edges": []}


def test_an_entity_is_a_duplicate_only_of_the_same_name() -> None:
    assert _answer("dedupe-nodes") == {
        "entity_resolutions": [{"id": 0, "name": "Ana Toledo", "duplicate_candidate_id": -1}]
    }
    body = _edited(
        "dedupe-nodes",
        '"candidate_id": 1, "name": "Thor Fuentes Ocampo"',
        '"candidate_id": 1, "name": "ANA  toledo"',
    )
    assert _answer("dedupe-nodes", body)["entity_resolutions"][0]["duplicate_candidate_id"] == 1


def test_a_new_value_in_the_same_slot_contradicts_the_old_fact() -> None:
    # "Now I work at Librería…" against the invalidation candidates (the old employer, the
    # pet, the friend): only the old employer is contradicted.
    assert _answer("dedupe-edges") == {"duplicate_facts": [], "contradicted_facts": [0]}


def test_the_same_fact_again_is_a_duplicate_not_a_contradiction() -> None:
    body = _body("dedupe-edges")
    user = body["messages"][-1]
    head, _, rest = user["content"].partition("<EXISTING FACTS>")
    _, _, tail = rest.partition("</FACT INVALIDATION CANDIDATES>")
    user["content"] = (
        head + "<EXISTING FACTS>\n[{'idx': 0, 'fact': 'now I work at LIBRERÍA Egaña Fuentes'}]"
        "\n</EXISTING FACTS>\n\n<FACT INVALIDATION CANDIDATES>\n[{'idx': 1, 'fact': 'I work "
        "at Ravenscroft Elmhirst Upholstery'}]\n</FACT INVALIDATION CANDIDATES>" + tail
    )
    assert _answer("dedupe-edges", body) == {"duplicate_facts": [0], "contradicted_facts": [1]}


def test_a_fact_without_dates_is_valid_from_its_reference_time() -> None:
    assert _answer("extract-timestamps") == {"valid_at": "2026-01-01T09:00:00Z", "invalid_at": None}


def test_a_long_summary_gets_the_new_facts_appended() -> None:
    assert _answer("summarize-entities") == {
        "summaries": [
            {
                "name": "user",
                "summary": (
                    "I live on 12 Quarry Lane\nThe name of my pet is Thor Fuentes Ocampo\n"
                    "I work at Ravenscroft Elmhirst Upholstery"
                ),
            }
        ]
    }


def test_a_rebuilt_summary_holds_the_remaining_episodes_current_facts() -> None:
    # remove_episode rebuilt "user" from the episodes left after the pet's was removed; the
    # later employer replaces the earlier one.
    assert _answer("summarize-from-episodes") == {
        "summaries": [
            {
                "name": "user",
                "summary": (
                    "I live on 12 Quarry Lane\nMy best friend is Ana Toledo\n"
                    "Now I work at Librería Egaña Fuentes"
                ),
            }
        ]
    }


def test_the_reranker_reads_true_for_a_passage_that_answers_the_query() -> None:
    answer = _answer("rerank")
    assert answer.content == "True" and answer.top_logprobs[0][0] == "True"
    unrelated = _edited("rerank", "I work at Acme", "My pet is Rex")
    assert _answer("rerank", unrelated).content == "False"


def test_a_summary_keeps_the_newest_facts_under_the_prompts_limit() -> None:
    many = [f"I visited Harbour Number {n} in Quayside" for n in range(60)]
    text = graphiti.summary("", many)
    assert len(text) <= graphiti.MAX_SUMMARY_CHARS
    assert text.endswith(many[-1]) and many[0] not in text.splitlines()


def test_a_graphiti_prompt_without_a_rule_is_an_error_naming_the_caller() -> None:
    # dedupe_nodes.node (one entity at a time) is not on the target's paths: no rule guesses.
    body = _edited(
        "dedupe-nodes",
        "Each of the above ENTITIES was extracted from the CURRENT MESSAGE.",
        "Compare the NEW ENTITY.",
    )
    with pytest.raises(UnknownPrompt, match="graphiti-core fixture"):
        respond(_chat(body), graphiti.RULES)
