"""The reference target's database: its tables (one group per store), the full-text
indexes that serve needle searches, and the text helpers every part shares."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memlife.bundled.reference import language

STORES: dict[str, str] = {
    "thread": "thread checkpoints",
    "memory": "long-term vector memory",
    "graph": "graph evidence",
    "jobs": "job and operations projections",
    "summaries": "tenant summaries",
    "cache": "response cache",
}


# Simulated usage, priced like a small hosted model (USD per million tokens): the reference
# target reports what a real one would, so cost per probe can be measured end to end.
PRICE_PER_MILLION = {"prompt": 0.15, "completion": 0.60}
SESSION_IDLE = timedelta(hours=1)
NIGHTLY_HOUR = 2
DELETION_DELAY = timedelta(minutes=30)
PREMATURE_PURGE_DELAY = timedelta(hours=2)
CACHE_TTL = timedelta(hours=6)
# The tenant keys of records that belong to no tenant: rebuilt without their key (the
# reindex-drops-tenant fault), and the global memory (the global-promotion fault).
NO_TENANT = ""
GLOBAL_TENANT = "*"

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    user_id TEXT PRIMARY KEY, phone TEXT NOT NULL, status TEXT NOT NULL,
    created_at TEXT NOT NULL, deleted_at TEXT, namespace TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS users_phone ON users(phone, status);
CREATE INDEX IF NOT EXISTS users_namespace ON users(namespace);
CREATE TABLE IF NOT EXISTS thread_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, norm TEXT NOT NULL, created_at TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS thread_tenant ON thread_messages(tenant_id);
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL,
    value TEXT NOT NULL, norm TEXT NOT NULL, vector TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_tenant ON memories(tenant_id);
CREATE TABLE IF NOT EXISTS graph_nodes (
    node_key TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, label TEXT NOT NULL,
    predicate TEXT NOT NULL, value TEXT NOT NULL, evidence TEXT NOT NULL, norm TEXT NOT NULL,
    updated_at TEXT NOT NULL, seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS graph_nodes_tenant ON graph_nodes(tenant_id);
CREATE TABLE IF NOT EXISTS graph_edges (
    src TEXT NOT NULL, dst TEXT NOT NULL, rel TEXT NOT NULL, tenant_id TEXT NOT NULL,
    PRIMARY KEY (src, dst, rel)
);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
    input TEXT NOT NULL, output TEXT NOT NULL, norm TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_tenant ON jobs(tenant_id);
CREATE TABLE IF NOT EXISTS summaries (
    tenant_id TEXT PRIMARY KEY, content TEXT NOT NULL, norm TEXT NOT NULL,
    updated_at TEXT NOT NULL, source TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cache (
    tenant_id TEXT NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL,
    context TEXT NOT NULL, norm TEXT NOT NULL, cached_at TEXT NOT NULL,
    expires_at TEXT NOT NULL, run TEXT NOT NULL DEFAULT '', PRIMARY KEY (tenant_id, question)
);
CREATE TABLE IF NOT EXISTS deletions (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, status TEXT NOT NULL,
    requested_at TEXT NOT NULL, purge_due TEXT NOT NULL, completed_at TEXT,
    reported_completed_at TEXT, run TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS activity (
    tenant_id TEXT PRIMARY KEY, last_message_at TEXT NOT NULL, summarized_at TEXT,
    run TEXT NOT NULL DEFAULT ''
);
-- A session is summarized once it has been idle long enough: only unsummarized ones are
-- looked at on each request, of the request's run.
CREATE INDEX IF NOT EXISTS activity_unsummarized_run ON activity(run, last_message_at)
    WHERE summarized_at IS NULL;
-- Tenants whose checkpoints or memories changed since the last nightly rebuild: the only
-- ones a rebuild can change (it is idempotent), so the only ones it redoes.
CREATE TABLE IF NOT EXISTS nightly_dirty (
    tenant_id TEXT PRIMARY KEY, run TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS nightly_dirty_run ON nightly_dirty(run);
-- Lookups made on every request or every deletion: without them each is a scan of a table
-- that grows with the number of tenants (quadratic over a run of thousands of pairs).
CREATE INDEX IF NOT EXISTS deletions_pending_run ON deletions(run, purge_due)
    WHERE completed_at IS NULL;
CREATE INDEX IF NOT EXISTS deletions_tenant ON deletions(tenant_id, requested_at);
CREATE INDEX IF NOT EXISTS cache_expiry_run ON cache(run, expires_at);
CREATE INDEX IF NOT EXISTS graph_edges_tenant ON graph_edges(tenant_id);
-- Statements waiting for the ingestion worker (asynchronous ingestion, ingestion.py).
CREATE TABLE IF NOT EXISTS ingest_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, message TEXT NOT NULL,
    norm TEXT NOT NULL, due TEXT NOT NULL, run TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS ingest_queue_run ON ingest_queue(run, due);
CREATE INDEX IF NOT EXISTS ingest_queue_tenant ON ingest_queue(tenant_id);
-- Shared spaces (spaces.py): what is said inside one is filed under its space_id.
CREATE TABLE IF NOT EXISTS spaces (
    space_id TEXT PRIMARY KEY, name TEXT NOT NULL, owner TEXT NOT NULL, status TEXT NOT NULL,
    created_at TEXT NOT NULL, run TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS space_members (
    space_id TEXT NOT NULL, tenant_id TEXT NOT NULL, status TEXT NOT NULL,
    PRIMARY KEY (space_id, tenant_id)
);
CREATE INDEX IF NOT EXISTS space_members_tenant ON space_members(tenant_id);
-- One clock per run: 'now' for requests that name no run, 'now:<run>' for each run.
CREATE TABLE IF NOT EXISTS clock (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

# The tables behind each store, searched by needle across all tenants.
STORE_TABLES = {
    "thread": "thread_messages",
    "memory": "memories",
    "graph": "graph_nodes",
    "jobs": "jobs",
    "summaries": "summaries",
    "cache": "cache",
}
# A needle search is a substring search over every tenant's rows: a full scan grows with
# the store, and a ten-thousand-pair run would spend its life scanning. Like the indexes a
# real store has, full-text indexes find the candidate rows and the substring test on them
# keeps the answer exact. Triggers keep them in step with every write.
# - A word index (FTS5 unicode61) serves needles of three or more words, as every canary
#   value is: the needle's inner words appear whole in any row that holds it, and its last
#   word begins a word there, so the phrase of them (last word as a prefix) is a superset.
#   Its posting lists are those of rare words, 10-20x cheaper than the trigram phrase.
# - A trigram index serves shorter needles, which may begin and end mid-word.
FULL_TEXT_INDEXES = {"search": "trigram", "words": "unicode61"}
SEARCH_INDEX = "".join(
    f"""
CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(
    norm, content='{table}', content_rowid='rowid', tokenize='{tokenizer}');
CREATE TRIGGER IF NOT EXISTS {fts}_insert AFTER INSERT ON {table} BEGIN
    INSERT INTO {fts}(rowid, norm) VALUES (new.rowid, new.norm);
END;
CREATE TRIGGER IF NOT EXISTS {fts}_delete AFTER DELETE ON {table} BEGIN
    INSERT INTO {fts}({fts}, rowid, norm) VALUES ('delete', old.rowid, old.norm);
END;
CREATE TRIGGER IF NOT EXISTS {fts}_update AFTER UPDATE OF norm ON {table} BEGIN
    INSERT INTO {fts}({fts}, rowid, norm) VALUES ('delete', old.rowid, old.norm);
    INSERT INTO {fts}(rowid, norm) VALUES (new.rowid, new.norm);
END;
"""
    for table in STORE_TABLES.values()
    for index, tokenizer in FULL_TEXT_INDEXES.items()
    for fts in (f"{table}_{index}",)
)
_TRIGRAM = 3
# unicode61's token characters (letters, digits), for the ASCII text normalization leaves.
_WORD = re.compile(r"[a-z0-9]+")
_WORD_INDEX_MIN_WORDS = 3


def match_query(needle: str) -> tuple[str, str] | None:
    """Which full-text index narrows the search for a normalized needle, and its query."""
    words = _WORD.findall(needle) if needle.isascii() else []
    if len(words) >= _WORD_INDEX_MIN_WORDS:  # the first word may end another: left out
        return "words", '"' + " ".join(words[1:]) + '" *'
    if len(needle) >= _TRIGRAM:
        return "search", '"' + needle.replace('"', '""') + '"'
    return None


# Tables whose rows are background work, owned by the run that caused it; databases from
# before runs had clocks of their own gain the column (their work belongs to no run: '').
RUN_OWNED_TABLES = ("deletions", "activity", "nightly_dirty", "cache")
# Their indexes from then, which the run-scoped ones replace.
_SUPERSEDED_INDEXES = ("deletions_pending", "activity_unsummarized", "cache_expiry")


def run_clock_name(run: str) -> str:
    """The `clock` row of a run (docs/simulated-targets.md)."""
    return f"now:{run}" if run else "now"


def iso(moment: datetime) -> str:
    """Always to the microsecond, so that stored times compare correctly as text."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def norm(text: str) -> str:
    return language.normalize(text)


def open_database(db_path: str | Path) -> sqlite3.Connection:
    """The database at `db_path`, its schema created or brought up to date."""
    Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(db_path), check_same_thread=False, isolation_level=None)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA busy_timeout=5000")
    # WAL with synchronous=NORMAL: still atomic and never corrupt, without an fsync per
    # turn (a power cut may forget the last turns; a reference target can afford it).
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA recursive_triggers=ON")  # REPLACE's deletes reindex too
    indexed = {
        index
        for index in FULL_TEXT_INDEXES
        if db.execute("SELECT 1 FROM sqlite_master WHERE name=?", (f"jobs_{index}",)).fetchone()
    }
    tracked = (
        db.execute("SELECT 1 FROM sqlite_master WHERE name='nightly_dirty'").fetchone() is not None
    )
    for table, column in [*((t, "run") for t in RUN_OWNED_TABLES), ("users", "namespace")]:
        columns = {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}
        if columns and column not in columns:  # an existing table from before
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")
    db.executescript(SCHEMA + SEARCH_INDEX)
    for index in _SUPERSEDED_INDEXES:
        db.execute(f"DROP INDEX IF EXISTS {index}")
    if not tracked:  # a database from before the tracking: every tenant may need it
        db.execute(
            "INSERT OR IGNORE INTO nightly_dirty(tenant_id) "
            "SELECT DISTINCT tenant_id FROM thread_messages"
        )
        db.execute("UPDATE activity SET summarized_at=NULL WHERE summarized_at < last_message_at")
    for index in set(FULL_TEXT_INDEXES) - indexed:  # a database from before it
        for table in STORE_TABLES.values():
            db.execute(f"INSERT INTO {table}_{index}({table}_{index}) VALUES ('rebuild')")
    return db
