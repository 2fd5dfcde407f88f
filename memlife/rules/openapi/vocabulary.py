"""The words and field names the guesses look for, and how names are compared: by their
letters and digits only, case aside (`userId`, `user_id` and `USER-ID` are one name)."""

from __future__ import annotations

import re

SAY_VERBS = frozenset(
    "add create send post ingest remember store write insert chat converse".split()
)
SAY_NOUNS = frozenset(
    "memory memories message messages episode episodes chat conversation conversations "
    "preview turn turns interaction interactions".split()
)
CONVERSATIONAL = frozenset(
    "send chat converse conversation preview reply respond completion".split()
)
SEARCH_WORDS = frozenset("search query ask retrieve recall find lookup".split())
SPACE_WORDS = frozenset("graph graphs group groups block blocks space spaces shared entity".split())
TENANT_NOUNS = frozenset(
    "user users tenant tenants customer customers account accounts agent agents thread "
    "threads session sessions".split()
)
STATUS_WORDS = frozenset("status deletion deletions task tasks job jobs operation".split())
FORGET_WORDS = frozenset("forget erase redact unlearn".split())
MEMORY_NOUNS = frozenset(
    "memory memories passage passages archival fact facts record records".split()
)

MESSAGE_FIELDS = ("message", "content", "text", "input", "prompt", "utterance", "data")
QUERY_FIELDS = ("query", "question", "q", "search", "text", "message", "input", "prompt")
PHONE_FIELDS = ("phone", "phone_number", "phonenumber", "msisdn", "mobile")
USER_FIELDS = ("user_id", "userid", "user", "tenant_id", "tenantid", "customer_id", "uid")
NAME_FIELDS = ("name", "first_name", "firstname", "username", "display_name", "label")
VALUE_FIELDS = ("value", "fact", "memory", "text", "content")
LIMIT_FIELDS = ("limit", "top_k", "page_size", "size", "per_page")

REPLY_FIELDS = ("reply", "answer", "response", "output", "text", "context")
RECORD_LISTS = ("results", "items", "memories", "messages")
# In an untyped answer: the records whose text answers (a message list without the user's own
# messages echoed back).
ANSWER_LISTS = "results || items || memories || messages[?role != 'user']"
RECORD_TEXT = ("memory", "fact", "content", "text")
ID_FIELDS = ("id", "uuid")
STATUS_FIELDS = ("status", "state")
DONE_VALUES = ["completed", "succeeded", "done", "deleted", "success"]


def words_in(text: str) -> set[str]:
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text or "")
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w}


def normalized(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def singular(noun: str) -> str:
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


def name_matches(name: str, names: tuple[str, ...]) -> bool:
    return normalized(name) in {normalized(n) for n in names}
