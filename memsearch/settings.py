"""Every ``MEMSEARCH_*`` setting in one place: argument, then environment variable, then default.

Each setting is a :class:`Setting` in :data:`SETTINGS`, typed and validated. One rule holds for
every variable: unset or empty means the default. A bad value, from an argument or from the
environment, raises :class:`~memsearch.errors.InvalidArgument` naming where it came from and
what it accepts; nothing is ever written back to the environment.

    >>> from memsearch import settings
    >>> settings.get("debounce_ms")          # $MEMSEARCH_DEBOUNCE_MS, else 300
    300
    >>> settings.get("debounce_ms", 120)     # an argument wins
    120

Adding a setting: add a row to :data:`SETTINGS` and a line to the table of docs/settings.md
(a test checks that every setting is documented there).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

from .errors import InvalidArgument

__all__ = ["Setting", "Rule", "SETTINGS", "get", "parsed", "check_all", "env_name", "describe", "cache_dir", "whole",
           "over"]

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class Setting(NamedTuple):
    """One setting: its variable, default, parser and the words for its documentation. A named tuple, not a dataclass:
    the daemon's client imports it, and dataclasses (with inspect) cost it about 10 ms of CPU."""

    name: str
    env: str
    default: Any
    parse: Callable[[Any], Any]
    accepts: str
    meaning: str
    default_text: str = ""


class Rule(NamedTuple):
    """What a value that is no setting accepts (``validate --window``): its parser and the words for messages."""

    parse: Callable[[Any], Any]
    accepts: str


def whole(lo: int, hi: int | None = None) -> Callable[[Any], int]:
    """A parser of whole numbers from ``lo`` (to ``hi``): ``ValueError`` outside."""
    def parse(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError
        number = int(str(value).strip()) if isinstance(value, str) else value
        if not isinstance(number, int) or number < lo or (hi is not None and number > hi):
            raise ValueError
        return number
    return parse


def _choice(*choices: str, upper: bool = False) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip()
        text = text.upper() if upper else text
        if text not in choices:
            raise ValueError
        return text
    return parse


def over(lo: float, hi: float) -> Callable[[Any], float]:
    """A parser of numbers more than ``lo`` and at most ``hi``: ``ValueError`` outside."""
    def parse(value: Any) -> float:
        if isinstance(value, bool):
            raise ValueError
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
        if not lo < number <= hi:
            raise ValueError
        return number
    return parse


def _text(value: Any) -> str:
    text = str(value).strip()
    if not text:
        raise ValueError
    return text


def _path(value: Any) -> Path:
    return Path(_text(value) if isinstance(value, str) else value).expanduser()


def _file(value: Any) -> Path:
    """The path of a file that exists (a registry read over a process's life: checked before a service inherits it)."""
    path = _path(value)
    if not path.is_file():
        raise ValueError
    return path


def _db(value: Any) -> Path | str:
    """A directory path, or an object-store URI (``s3://bucket/prefix``) kept as text."""
    text = _text(os.fspath(value) if isinstance(value, os.PathLike) else value)
    return text if "://" in text else Path(text).expanduser()


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError


def _names(value: Any) -> tuple[str, ...]:
    """A comma-separated list (or a sequence); ``none`` is the empty list."""
    if isinstance(value, str):
        if value.strip().lower() == "none":
            return ()
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, os.PathLike):
        return (os.fspath(value),)
    return tuple(str(item) for item in value)


def _inner_dirs(value: Any) -> tuple[str, ...]:
    """:func:`_names` of folders inside the root: an absolute path, ``.`` or one leading out (``..``) is refused."""
    from pathlib import PurePosixPath

    names = _names(value)
    for name in names:  # the rule of memory.tree.foreign_dirs, which an argument goes through
        text = str(PurePosixPath(name.strip().replace(os.sep, "/")))
        if text in ("", ".") or text.startswith(("/", "..")) or "/../" in f"/{text}/":
            raise ValueError
    return names


_ROWS = [
    Setting("db", "MEMSEARCH_DB", None, _db, "a directory path, or s3://bucket/prefix (s3+ddb:// too)",
            "Where the index lives.", "`ROOT/.memsearch`"),
    Setting("state_dir", "MEMSEARCH_STATE_DIR", None, _path, "a directory path",
            "This machine's state for remote (s3://) indexes: writer lock, daemon state.",
            "`$XDG_STATE_HOME/memsearch`, else `~/.local/state/memsearch`"),
    Setting("s3_endpoint", "AWS_ENDPOINT_URL", None, _text, "a URL such as http://127.0.0.1:8333",
            "The S3 endpoint of remote indexes (any S3-compatible store).", "AWS's own endpoint"),
    Setting("s3_access_key", "AWS_ACCESS_KEY_ID", None, _text, "an access key id",
            "The S3 access key of remote indexes.", "the AWS credential chain"),
    Setting("s3_secret_key", "AWS_SECRET_ACCESS_KEY", None, _text, "a secret access key",
            "The S3 secret key of remote indexes.", "the AWS credential chain"),
    Setting("s3_session_token", "AWS_SESSION_TOKEN", None, _text, "a session token",
            "The S3 session token of temporary credentials.", "none"),
    Setting("s3_region", "AWS_DEFAULT_REGION", None, _text, "a region name such as us-east-1",
            "The S3 region of remote indexes.", "`us-east-1`"),
    Setting("s3_allow_http", "AWS_ALLOW_HTTP", False, _flag, "true or false",
            "Allow a plain-HTTP S3 endpoint (a local store)."),
    Setting("ddb_endpoint", "AWS_ENDPOINT_URL_DYNAMODB", None, _text, "a URL such as http://127.0.0.1:5000",
            "The DynamoDB endpoint of `s3+ddb://` indexes (LanceDB's commit store).", "AWS's own endpoint"),
    Setting("model", "MEMSEARCH_MODEL", None, _text, "a model name from models.toml or a local model directory",
            "The embedding model.", "the registry's default (`all-MiniLM-L6-v2`)"),
    Setting("models", "MEMSEARCH_MODELS", None, _file, "the path of a models.toml file",
            "Another model registry instead of the bundled `models.toml`.", "the bundled registry"),
    Setting("device", "MEMSEARCH_DEVICE", None, _text, "a torch device such as cpu, cuda or cuda:1",
            "Where the model runs.", "CUDA when available, else CPU"),
    Setting("backend", "MEMSEARCH_BACKEND", "auto", _choice("auto", "onnx", "torch"), "auto, onnx or torch",
            "What runs the model: ONNX Runtime or torch (sentence-transformers). `auto`: ONNX Runtime for a local "
            "model on the CPU, torch for a hub model or a GPU device."),
    Setting("quantize", "MEMSEARCH_QUANTIZE", "none", _choice("none", "int8"), "none or int8",
            "ONNX Runtime only: `int8` runs a dynamically quantized copy of the model (faster, other vectors: "
            "an index needs `--rebuild`, recall in benchmarks/README.md)."),
    Setting("cache", "MEMSEARCH_CACHE", None, _path, "a directory path",
            "Where derived files live (the model exported to ONNX, per model fingerprint).",
            "`$XDG_CACHE_HOME/memsearch`, else `~/.cache/memsearch`"),
    Setting("batch_size", "MEMSEARCH_BATCH_SIZE", 32, whole(1, 65536), "a whole number from 1 to 65536",
            "Texts per model call when indexing."),
    Setting("batch_chunks", "MEMSEARCH_BATCH_CHUNKS", 512, whole(1, 10_000_000), "a whole number of chunks, at least 1",
            "Chunks embedded and committed per store write when indexing; a file with more chunks streams over several writes."),
    Setting("text_first_files", "MEMSEARCH_TEXT_FIRST_FILES", 64, whole(0, 10_000_000),
            "a whole number of files (0: never)",
            "New files in one sync from which their text is written first, keyword-searchable (hits say `partial`) "
            "before it is embedded; the first sync of a tree never indexed does so whatever its size; 0 embeds as "
            "it writes."),
    Setting("max_file_mb", "MEMSEARCH_MAX_FILE_MB", 10, whole(1, 100_000), "a whole number of megabytes, at least 1",
            "Markdown files larger than this are not indexed (a warning names them). Memory no longer grows with a "
            "file's size; this bounds time: 10 MB is about 19,000 chunks, some 20 minutes of embedding on 2 busy CPU cores."),
    Setting("fusion", "MEMSEARCH_FUSION", "convex", _choice("convex", "rrf"), "convex or rrf",
            "How hybrid search fuses the keyword and vector rankings."),
    Setting("keyword", "MEMSEARCH_KEYWORD", "memory", _choice("memory", "lancedb"), "memory or lancedb",
            "What runs BM25 keyword search: `memory`, a copy of the table version's terms held in the process "
            "(rebuilt when the table changes), or `lancedb`, LanceDB's full-text index (same analysis and scoring)."),
    Setting("encoding", "MEMSEARCH_ENCODING", "cl100k_base", _text, "a tiktoken encoding name",
            "The tokenizer for token counts and budgets."),
    Setting("foreign", "MEMSEARCH_FOREIGN", ("skills",), _inner_dirs, "comma-separated paths relative to the root, or none",
            "Directories governed by another format, skipped whole.", "`skills`"),
    Setting("core_budget", "MEMSEARCH_CORE_BUDGET", 30_000, whole(1), "a whole number of tokens, at least 1",
            "Token budget of core memory: `validate` warns past it, and a memory write that would pass it is refused."),
    Setting("max_depth", "MEMSEARCH_MAX_DEPTH", 32, whole(1, 1000), "a whole number of folders from 1 to 1000",
            "Deepest folder a memory write may put a file in (folders below the root); a deeper path is refused."),
    Setting("max_new_dirs", "MEMSEARCH_MAX_NEW_DIRS", 8, whole(1, 1000), "a whole number of folders from 1 to 1000",
            "Most new folders one memory write (create, rename) may make, each with its MEMORY.md; more is refused."),
    Setting("debounce_ms", "MEMSEARCH_DEBOUNCE_MS", 300, whole(1, 60_000), "a whole number of milliseconds from 1 to 60000",
            "Longest wait to group file events before the service (or a `watch` daemon) syncs."),
    Setting("client_timeout", "MEMSEARCH_CLIENT_TIMEOUT", 3.0, over(0.0, 600.0), "seconds, more than 0 and at most 600",
            "How long a client waits for the service's answer before working in-process (one line on stderr)."),
    Setting("hook_timeout", "MEMSEARCH_HOOK_TIMEOUT", 8.0, over(0.0, 600.0), "seconds, more than 0 and at most 600",
            "The longest a Claude Code hook of memsearch runs: past it, it adds nothing to the session and exits 0. "
            "`claude-code install` gives Claude Code's own `timeout` 2 s more (read when it writes the hooks). Less 1 s, "
            "also how long `memsearch serve` waits for the service it started before a search says it is starting."),
    Setting("autostart", "MEMSEARCH_AUTOSTART", True, _flag, "true or false",
            "When a search finds nothing serving a local index this user may write, start this user's memsearch service "
            "in the background for the calls that follow (this call is answered in-process). `--no-daemon` turns it off for one command. "
            "`read`, `ls`, `core`, `status` and `validate` need no model and never start one."),
    Setting("idle_exit", "MEMSEARCH_IDLE_EXIT", 1800, whole(0, 10_000_000), "a whole number of seconds, 0 for never",
            "The memsearch service unloads a root no client asked anything about for this long, and exits when no "
            "root is left (`memsearch watch` started by hand keeps running unless given `--idle-exit`)."),
    Setting("follow_s", "MEMSEARCH_FOLLOW_S", 0.5, over(0.0, 60.0), "seconds, more than 0 and at most 60",
            "How often a read replica (`serve --read-only`) asks the store for a newer committed version of its index; "
            "a commit is searchable there within about this long plus the time to load the new version."),
    Setting("lease_ttl", "MEMSEARCH_LEASE_TTL", 30.0, over(0.0, 3600.0), "seconds, more than 0 and at most 3600",
            "Length of the writer lease of an s3:// index: renewed every third of it; a writer that stops renewing "
            "(killed, cut off) frees the index this long after its last renewal, and stops committing itself once "
            "less than a sixth of it is left."),
    Setting("max_open", "MEMSEARCH_MAX_OPEN", 16, whole(1, 100_000), "a whole number of indexes, at least 1",
            "Indexes one process keeps open (`memsearch.search`, `serve`, `serve --roots`), least recently used closed first."),
    Setting("open_mb", "MEMSEARCH_OPEN_MB", 1024, whole(1, 10_000_000), "a whole number of megabytes, at least 1",
            "Estimated memory the open indexes of one process may hold (in-memory vectors and rows); past it the least "
            "recently used are closed. The index in use always stays open."),
    Setting("memory_root", "MEMSEARCH_MEMORY_ROOT", Path("~/.memsearch/memory"), _path, "a directory path",
            "The memory root of the Claude Code plugin (its `memory_root` option wins); created as valid Agent Memory "
            "on first use. An absolute path, or one starting with `~`: the plugin refuses a relative one.",
            "`~/.memsearch/memory`"),
    Setting("log_sessions", "MEMSEARCH_LOG_SESSIONS", False, _flag, "true or false",
            "Whether the Claude Code plugin keeps each session in its memory root (its `log_sessions` option wins); "
            "a project install opts in with `--log-sessions` instead."),
    Setting("log_level", "MEMSEARCH_LOG_LEVEL", "WARNING", _choice(*LOG_LEVELS, upper=True), ", ".join(LOG_LEVELS),
            "Log level of `memsearch serve` (on stderr)."),
    Setting("locomo", "MEMSEARCH_LOCOMO", None, _path, "the path of locomo10.json",
            "The LoCoMo data set for the benchmarks.", "`../shared/data/locomo10.json`"),
    Setting("bench_embedder", "MEMSEARCH_BENCH_EMBEDDER", "model", _choice("model", "hash"), "model or hash",
            "The benchmarks' embedder: `hash` is a fast stand-in for smoke tests (numbers meaningless)."),
    Setting("peers_dir", "MEMSEARCH_PEERS_DIR", None, _path, "a directory path",
            "Where the benchmarks keep the peers' virtual environments.", "`bench-results/peers` in the clone"),
]

#: Every setting, by name.
SETTINGS: dict[str, Setting] = {row.name: row for row in _ROWS}


def _setting(name: str) -> Setting:
    try:
        return SETTINGS[name]
    except KeyError:
        raise InvalidArgument(f"unknown setting {name!r}: choose one of {', '.join(SETTINGS)}") from None


def env_name(name: str) -> str:
    """The environment variable of setting ``name``."""
    return _setting(name).env


def get(name: str, value: Any = None, *, environ: Mapping[str, str] | None = None, label: str | None = None) -> Any:
    """Setting ``name``: ``value`` if not None, else its variable if set and not empty, else its default.

    ``label`` names the argument in error messages (default: the setting's name).
    """
    setting = _setting(name)
    if value is not None:
        return parsed(value, setting, label or name)
    raw = (os.environ if environ is None else environ).get(setting.env, "")
    if not raw.strip():
        return setting.default
    try:
        return setting.parse(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{setting.env}={raw!r} is not valid: {setting.name} accepts {setting.accepts}") from None


def parsed(value: Any, rule: Setting | Rule, label: str) -> Any:
    """``value`` parsed by ``rule`` (a :class:`Setting` or a :class:`Rule`), or :class:`InvalidArgument` naming it
    ``label`` (an option as the user typed it, a keyword argument): ``--budget -5 is not valid: --budget accepts ...``."""
    try:
        return rule.parse(value)
    except (TypeError, ValueError):
        # a whole number the CLI parsed as a float is shown as typed: --share 2, not 2.0
        typed = int(value) if isinstance(value, float) and value.is_integer() else value
        raise InvalidArgument(f"{label} {typed!r} is not valid: {label} accepts {rule.accepts}") from None


def check_all(environ: Mapping[str, str] | None = None) -> None:
    """Parse every setting the environment sets: :class:`InvalidArgument` for the first bad value. Checked before
    a process inherits this environment (the service, which reads them over its life and would refuse it there,
    out of the user's sight)."""
    for name in SETTINGS:
        get(name, environ=environ)


def cache_dir(value: Any = None, *, environ: Mapping[str, str] | None = None) -> Path:
    """The ``cache`` setting, defaulting to ``$XDG_CACHE_HOME/memsearch`` (``~/.cache/memsearch``)."""
    found = get("cache", value, environ=environ)
    if found is not None:
        return found
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME", "").strip()
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "memsearch"


def describe() -> list[dict[str, str]]:
    """One row per setting for documentation: variable, meaning, default."""
    rows = []
    for s in _ROWS:
        default = s.default_text or (f"`{s.default}`" if not isinstance(s.default, tuple) else ", ".join(s.default))
        rows.append({"variable": s.env, "meaning": s.meaning, "accepts": s.accepts, "default": default})
    return rows
