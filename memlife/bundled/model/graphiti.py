"""Graphiti's prompts (graphiti-core 0.31.2, `graphiti_core/prompts/`), answered by rule.
These are the calls `Graphiti.add_episode` (a message episode), `search` (the
`EDGE_HYBRID_SEARCH_RRF` recipe, no LLM), `remove_episode` and group deletion (no LLM)
make through `OpenAIGenericClient` (chat completions, `json_schema` structured output):

- `graphiti.extract-nodes` — `extract_nodes.extract_message` (and `extract_text` for a
  text episode), schema `ExtractedEntities`: the speaker of each "speaker: text" line first,
  as the prompt asks, then the value of each of its statements ("I work at Acme" → "Acme"),
  each once, of the default type 0.
- `graphiti.dedupe-nodes` — `dedupe_nodes.nodes`, schema `NodeResolutions`: an entity is a
  duplicate of the existing entity whose name is the same after normalization (accents,
  case and white space aside), else -1 ("when unsure"); its name is kept.
- `graphiti.extract-edges` — `extract_edges.edge`, schema `ExtractedEdges`: one edge per
  statement with a value, from the speaker to the value's entity; the fact is the statement
  word for word; valid from the REFERENCE_TIME (statements are in the present tense), never
  invalid. A statement whose speaker or value is not among the ENTITIES gives no edge (the
  prompt rejects such names).
- `graphiti.extract-timestamps` — `extract_edges.extract_timestamps`, schema
  `EdgeTimestamps`: valid at the REFERENCE TIME, no end.
- `graphiti.dedupe-edges` — `dedupe_edges.resolve_edge`, schema `EdgeDuplicate`: the
  EXISTING FACTS equal to the NEW FACT (after normalization) are its duplicates; the facts
  of either list that hold another value in the same slot are contradicted by it.
- `graphiti.summarize-entities` — `extract_nodes.extract_summaries_batch`, schema
  `SummarizedEntities` (only for summaries past 2,000 characters: below, Graphiti appends
  the new facts itself): the existing summary followed by the new facts about the entity.
- `graphiti.summarize-from-episodes` — `extract_nodes.extract_entity_summaries_from_episodes`,
  schema `SummarizedEntities` (how `remove_episode` rebuilds a surviving entity's summary):
  the existing summary, then the facts about the entity in the EPISODES in order, a later
  fact replacing an earlier one of the same slot ("current state over superseded state").
- `graphiti.rerank` — `OpenAIRerankerClient.rank` (the cross-encoder; not on the path of
  `Graphiti.search`): "True" when the passage shares a content word with the query, with
  the log probabilities the client reads.

Facts about an entity: every statement of a line the entity speaks, and every statement
that names the entity. A summary is its facts, one a line, as Graphiti writes them itself,
kept under the 1,000 characters the prompts ask for by leaving out the oldest.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from memlife.bundled.model import facts
from memlife.bundled.model.script import Answer, Chat, Rule
from memlife.bundled.reference.language import STOPWORDS, content_tokens, normalize, words

MAX_SUMMARY_CHARS = 1000  # graphiti_core.utils.text_utils.MAX_SUMMARY_CHARS

_EXTRACT_MESSAGE = "You are an entity extraction specialist for conversational messages."
_EXTRACT_TEXT = "You are an entity extraction specialist for unstructured text."
_DEDUPE_NODES = "You are an entity deduplication assistant."
_DEDUPE_NODES_BATCH = "Each of the above ENTITIES was extracted from the CURRENT MESSAGE."
_EXTRACT_EDGES = "You are an expert fact extractor that extracts fact triples from text."
_TIMESTAMPS = "You extract temporal bounds from facts."
_TIMESTAMPS_ONE = "Given a FACT and its REFERENCE TIME"
_DEDUPE_EDGES = "You are a fact deduplication assistant."
_SUMMARIES_BATCH = (
    "You are a helpful assistant that generates concise entity summaries from provided context."
)
_SUMMARIES_EPISODES = "You maintain detailed, information-dense entity memories from episode text."
_RERANK = "You are an expert tasked with determining whether the passage is relevant to the query"

# "speaker: text", the form of a message episode's lines (Graphiti's own convention).
_LINE = re.compile(r"^\s*([^:\n]{1,80}?)\s*:\s*(\S.*)$")
# concatenate_episodes' header of each episode when several are extracted at once.
_EPISODE_HEADER = re.compile(r"^\[(?:Episode \d+|CONTEXT EPISODE)\] \(timestamp: [^)]*\)\s*$")


# -- reading the prompts ---------------------------------------------------------------------


def section(text: str, tag: str) -> str:
    """The body of `<TAG>…</TAG>` in a prompt ("" when absent)."""
    match = re.search(rf"<{re.escape(tag)}>\n?(.*?)\n?\s*</{re.escape(tag)}>", text, re.DOTALL)
    return match.group(1).strip() if match else ""


def _json(text: str, default: Any) -> Any:
    """A JSON value of a prompt, or a Python literal (Graphiti formats some lists with
    str(), not json.dumps)."""
    if not text:
        return default
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return default


def _json_lines(text: str) -> list[Any]:
    """Each line of a section that is JSON on its own (MESSAGES: the previous episodes as a
    list, then the current content as a string)."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            value = _json(line, None)
            if value is not None:
                found.append(value)
    return found


def lines(content: str) -> list[tuple[str | None, str]]:
    """(speaker, text) of each line of an episode's content; a line without "speaker:" is
    text without a speaker."""
    found: list[tuple[str | None, str]] = []
    for line in content.splitlines():
        if not line.strip() or _EPISODE_HEADER.match(line.strip()):
            continue
        match = _LINE.match(line)
        found.append(
            (match.group(1).strip(), match.group(2).strip()) if match else (None, line.strip())
        )
    return found


def _contents(items: list[Any]) -> list[str]:
    """The episode texts of a MESSAGES or EPISODES section, oldest first."""
    texts: list[str] = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, list):
            texts.extend(str(ep.get("content", "")) for ep in item if isinstance(ep, dict))
        elif isinstance(item, dict):
            texts.append(str(item.get("content", "")))
    return texts


def _iso(reference: str) -> str | None:
    """An ISO 8601 time with a Z, from how the prompt printed it ("2025-01-01 12:00:00+00:00
    # comment")."""
    text = reference.split("#", 1)[0].strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _same(a: str, b: str) -> bool:
    return normalize(a).strip(" .") == normalize(b).strip(" .")


# -- facts about entities --------------------------------------------------------------------


def statements_of(content: str) -> list[tuple[str | None, str]]:
    """(speaker, fact) of every statement in an episode's content, in order."""
    return [(speaker, fact) for speaker, text in lines(content) for fact in facts.statements(text)]


def about(name: str, speaker: str | None, fact: str) -> bool:
    """Whether a fact is about the entity `name`: its speaker said it, or it names it."""
    if speaker is not None and _same(speaker, name):
        return True
    wanted = normalize(name)
    return bool(wanted) and wanted in normalize(fact)


def relation_type(fact: str) -> str:
    """SCREAMING_SNAKE_CASE of the fact's predicate: its content words before the value and
    the marker word ("Now I work at Acme" → WORK_AT, "Mi mascota se llama Bolt" →
    MASCOTA_LLAMA); RELATES_TO for a fact without a value."""
    value = facts.value(fact)
    head = words(fact[: fact.rfind(value)]) if value and value in fact else []
    if not head:
        return "RELATES_TO"
    kept = [w for w in head[:-1] if w not in STOPWORDS] + head[-1:]
    return "_".join(re.sub(r"[^a-z0-9]", "", w) for w in kept).upper()


def summary(existing: str, new_facts: list[str]) -> str:
    """The existing summary's lines and the new facts, each once, the newest kept when the
    whole would pass MAX_SUMMARY_CHARS."""
    kept: list[str] = []
    for line in [*existing.splitlines(), *new_facts]:
        line = line.strip()
        if line and not any(_same(line, k) for k in kept):
            kept.append(line)
    while kept and len("\n".join(kept)) > MAX_SUMMARY_CHARS:
        kept.pop(0)
    return "\n".join(kept)


def current(found: list[str]) -> list[str]:
    """Facts in order, each later fact replacing an earlier one of the same slot."""
    kept: list[str] = []
    for fact in found:
        kept = [k for k in kept if not facts.same_slot(k, fact) and not _same(k, fact)]
        kept.append(fact)
    return kept


# -- the rules --------------------------------------------------------------------------------


def _extract_nodes(chat: Chat) -> Answer:
    prompt = chat.user
    content = section(prompt, "CURRENT MESSAGE") or section(prompt, "TEXT")
    names: list[str] = []

    def add(name: str | None) -> None:
        if name and name.strip() and not any(_same(name, n) for n in names):
            names.append(name.strip())

    for speaker, text in lines(content):
        add(speaker)  # "Always extract the speaker ... as the first entity node"
        for fact in facts.statements(text):
            add(facts.value(fact))
    return Answer.json(
        {
            "extracted_entities": [
                {"name": name, "entity_type_id": 0, "episode_indices": [0]} for name in names
            ]
        }
    )


def _dedupe_nodes(chat: Chat) -> Answer:
    prompt = chat.user
    extracted = _json(section(prompt, "ENTITIES"), [])
    existing = _json(section(prompt, "EXISTING ENTITIES"), [])
    resolutions = []
    for entity in extracted:
        name = str(entity.get("name", ""))
        match = next((c for c in existing if _same(str(c.get("name", "")), name)), None)
        resolutions.append(
            {
                "id": entity.get("id"),
                "name": name,
                "duplicate_candidate_id": match.get("candidate_id", -1) if match else -1,
            }
        )
    return Answer.json({"entity_resolutions": resolutions})


def _extract_edges(chat: Chat) -> Answer:
    prompt = chat.user
    content = section(prompt, "CURRENT_MESSAGE")
    entities = [
        str(e.get("name", ""))
        for e in _json(section(prompt, "ENTITIES"), [])
        if isinstance(e, dict)
    ]
    valid_at = _iso(section(prompt, "REFERENCE_TIME"))

    def entity(name: str | None) -> str | None:
        return next((e for e in entities if name and _same(e, name)), None)

    edges = []
    for speaker, fact in statements_of(content):
        source, target = entity(speaker), entity(facts.value(fact))
        if source is None or target is None or _same(source, target):
            continue
        edges.append(
            {
                "source_entity_name": source,
                "target_entity_name": target,
                "relation_type": relation_type(fact),
                "fact": fact,
                "valid_at": valid_at,
                "invalid_at": None,
                "episode_indices": [0],
            }
        )
    return Answer.json({"edges": edges})


def _extract_timestamps(chat: Chat) -> Answer:
    return Answer.json({"valid_at": _iso(section(chat.user, "REFERENCE TIME")), "invalid_at": None})


def _dedupe_edges(chat: Chat) -> Answer:
    prompt = chat.user
    existing = _json(section(prompt, "EXISTING FACTS"), [])
    candidates = _json(section(prompt, "FACT INVALIDATION CANDIDATES"), [])
    new = section(prompt, "NEW FACT")
    duplicates = [int(e["idx"]) for e in existing if _same(str(e.get("fact", "")), new)]
    contradicted = [
        int(e["idx"])
        for e in [*existing, *candidates]
        if facts.same_slot(str(e.get("fact", "")), new) and not _same(str(e.get("fact", "")), new)
    ]
    return Answer.json({"duplicate_facts": duplicates, "contradicted_facts": contradicted})


def _summaries(chat: Chat, tag: str, combine: Callable[[str, list[str]], str]) -> Answer:
    prompt = chat.user
    episodes = _contents(_json_lines(section(prompt, tag)))
    found = [(speaker, fact) for content in episodes for speaker, fact in statements_of(content)]
    result = []
    for entity in _json(section(prompt, "ENTITIES"), []):
        name = str(entity.get("name", ""))
        existing = str(entity.get("summary") or "")
        text = combine(existing, [fact for speaker, fact in found if about(name, speaker, fact)])
        if text:  # "Only return summaries for entities that have meaningful information"
            result.append({"name": name, "summary": text})
    return Answer.json({"summaries": result})


def _summarize_entities(chat: Chat) -> Answer:
    return _summaries(chat, "MESSAGES", summary)


def _summarize_from_episodes(chat: Chat) -> Answer:
    return _summaries(
        chat,
        "EPISODES",
        lambda existing, found: summary("", current([*existing.splitlines(), *found])),
    )


def _rerank(chat: Chat) -> Answer:
    prompt = chat.user
    passage, query = section(prompt, "PASSAGE"), section(prompt, "QUERY")
    shared = content_tokens(query) & content_tokens(passage)
    share = len(shared) / max(len(content_tokens(query)), 1)
    # The client scores exp(logprob) of a "True" first token, 1 - exp(...) of "False".
    p_true = min(max(0.5 + share / 2 if shared else 0.1, 0.01), 0.99)
    odds = (("True", math.log(p_true)), ("False", math.log(1 - p_true)))
    ordered = odds if p_true >= 0.5 else odds[::-1]
    return Answer(content=ordered[0][0], top_logprobs=ordered)


def _system_starts(marker: str) -> Callable[[Chat], bool]:
    return lambda chat: chat.system.lstrip().startswith(marker)


RULES: tuple[Rule, ...] = (
    Rule(
        "graphiti.extract-nodes",
        lambda chat: _system_starts(_EXTRACT_MESSAGE)(chat) or _system_starts(_EXTRACT_TEXT)(chat),
        _extract_nodes,
        doc="extract_nodes.extract_message / extract_text",
    ),
    Rule(
        "graphiti.dedupe-nodes",
        lambda chat: _system_starts(_DEDUPE_NODES)(chat) and _DEDUPE_NODES_BATCH in chat.user,
        _dedupe_nodes,
        doc="dedupe_nodes.nodes",
    ),
    Rule(
        "graphiti.extract-edges",
        _system_starts(_EXTRACT_EDGES),
        _extract_edges,
        doc="extract_edges.edge",
    ),
    Rule(
        "graphiti.extract-timestamps",
        lambda chat: _system_starts(_TIMESTAMPS)(chat) and _TIMESTAMPS_ONE in chat.user,
        _extract_timestamps,
        doc="extract_edges.extract_timestamps",
    ),
    Rule(
        "graphiti.dedupe-edges",
        _system_starts(_DEDUPE_EDGES),
        _dedupe_edges,
        doc="dedupe_edges.resolve_edge",
    ),
    Rule(
        "graphiti.summarize-entities",
        _system_starts(_SUMMARIES_BATCH),
        _summarize_entities,
        doc="extract_nodes.extract_summaries_batch",
    ),
    Rule(
        "graphiti.summarize-from-episodes",
        _system_starts(_SUMMARIES_EPISODES),
        _summarize_from_episodes,
        doc="extract_nodes.extract_entity_summaries_from_episodes",
    ),
    Rule(
        "graphiti.rerank",
        _system_starts(_RERANK),
        _rerank,
        doc="cross_encoder.openai_reranker_client.OpenAIRerankerClient.rank",
    ),
)
