"""Sessions kept as memory: a Claude Code session's prompts, touched files and final answers, as the spec's collapsed logs.

The ``session-log`` hook (``memsearch claude-code install --log-sessions``, or the plugin's ``log_sessions``
option) runs on Stop, SessionEnd and PreCompact with the hook's JSON on stdin
(https://code.claude.com/docs/en/hooks: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``; Stop
may add ``last_assistant_message``). It reads the session's transcript (JSON lines: ``{"type": "user" |
"assistant", "message": {"content": ...}, "timestamp", "cwd", "gitBranch", "isSidechain", "isMeta"}``) and
keeps it as one section of ``ROOT/<repository>/<YYYY-MM-DD>.md``: the user's prompts, the assistant's final
answer to each, the files the session changed and read, each cut to a budget, secrets masked
(:mod:`memsearch.harness.secrets`). Stop fires after every turn, so the section of a session is rewritten in
place, found by its ``<!-- memsearch:session ID -->`` marker: one section per session, never a duplicate.
The log writes only into files of its own (:func:`is_session_log`): where the day's name is a note of the user's,
it writes ``<YYYY-MM-DD>-sessions.md`` beside it (:func:`day_log`); a repository named like a directory of another
format (``skills``) gets the folder ``skills-sessions`` (:func:`repository_name`).
The folder gets a ``MEMORY.md`` saying what it holds; a folder of the user's gets a paragraph saying so added to its
own, once (:func:`folder_note`). Writes go through the memory tool's write path
(:func:`memsearch.harness.edit.open_editor`: inside the root, atomic, the tree kept valid) and the daemon is
asked to index them (one is started when none serves), so the next prompt's recall finds the log. No model call.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from .secrets import mask

__all__ = ["Turn", "Session", "SECTION_BYTES", "PROMPT_CHARS", "ANSWER_CHARS", "MAX_FILES", "SUFFIX", "read_transcript",
           "repository_name", "render_section", "is_session_log", "day_log", "merge_day", "folder_index", "folder_note",
           "record", "record_hook"]

#: The most UTF-8 bytes one session's section may take (about 1,500 tokens of English): the first prompt and the
#: latest turns are kept, the turns between them left out with a count.
SECTION_BYTES = 6000
#: The most characters kept of one prompt and of one final answer (whitespace collapsed to one line).
PROMPT_CHARS = 500
ANSWER_CHARS = 700
#: The most files listed as changed, and as read, per session.
MAX_FILES = 30
#: The longest a hook waits for another hook writing the same folder's log (seconds; within the hook's bound).
LOCK_WAIT_S = 5.0
#: The longest the hook waits for the daemon to index the log (seconds): past it the hook returns, and the daemon
#: indexes the log anyway (it has the request, and the file event). On a loaded machine a sync took 4-5 s
#: (docs/benchmarks.md, "The session log"), which a SessionEnd at exit need not wait for.
SYNC_WAIT_S = 1.0
#: Tools whose ``file_path`` (``notebook_path``) a session changed, and the one that reads.
WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
READ_TOOLS = ("Read",)
#: User entries that are Claude Code's own, not a prompt (local command output, caveats, interruptions).
_NOT_PROMPTS = ("<local-command-stdout>", "<local-command-stderr>", "Caveat:", "[Request interrupted")
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>.*?(?:<command-args>(.*?)</command-args>)?", re.S)
_MARKER = "<!-- memsearch:session {} -->"
#: The line under the title of every file the log writes (a day's log, a folder's ``MEMORY.md``, the paragraph it adds
#: to a user's): the file (or paragraph) is the log's own. The log never writes into a day's file without it (or
#: without a session's marker, in logs written before it).
_LOG_MARKER = "<!-- memsearch:session-log -->"
#: What a name gets where the plain one is taken by something not the log's: a day's log beside a note of the user's
#: with the day's name (``2026-12-07-sessions.md``), a repository's folder named like a directory of another format
#: (``skills-sessions``).
SUFFIX = "-sessions"
_SURROGATE = re.compile("[\ud800-\udfff]")
#: A terminal's escape sequences: CSI (colours, cursor moves: ``ESC [ 31 m``) and OSC (titles, links).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
#: The most characters, and UTF-8 bytes, of a repository's folder name (a file name may take 255 bytes).
NAME_CHARS, NAME_BYTES = 64, 200


@dataclass(frozen=True)
class Turn:
    """One prompt of the user and the assistant's final text answer to it (empty while it works)."""

    prompt: str
    answer: str = ""


@dataclass(frozen=True)
class Session:
    """What a session's transcript tells: its id, start and end, folder, branch, turns and the files it touched."""

    session_id: str
    started: dt.datetime | None = None
    ended: dt.datetime | None = None
    cwd: str = ""
    branch: str = ""
    turns: tuple[Turn, ...] = ()
    changed: tuple[str, ...] = ()
    read: tuple[str, ...] = field(default=())


def _time(value) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone()
    except (TypeError, ValueError):
        return None


def _prompt_text(content) -> str:
    """The user's own words in a user entry's ``content`` (a string, or blocks), '' for tool results and noise."""
    if isinstance(content, list):
        content = "\n".join(b["text"] for b in content
                            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    if not isinstance(content, str) or not content.strip():
        return ""
    text = content.strip()
    if text.startswith(_NOT_PROMPTS):
        return ""
    command = _COMMAND.search(text)
    if command and text.startswith("<command-"):  # a slash command: its name and arguments
        return " ".join(part.strip() for part in command.groups() if part and part.strip())
    return text


def read_transcript(path: Path, session_id: str = "", *, last_answer: str = "") -> Session:
    """The :class:`Session` in a Claude Code transcript (JSON lines); unreadable lines are skipped.
    ``last_answer``: the Stop hook's ``last_assistant_message``, the final answer when the file lags behind."""
    turns: list[list[str]] = []
    changed: dict[str, None] = {}
    read: dict[str, None] = {}
    started = ended = None
    cwd = branch = ""
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
                continue
            if entry.get("isSidechain") or entry.get("isMeta") or entry.get("isCompactSummary"):
                continue
            when = _time(entry.get("timestamp"))
            if when is not None:
                started, ended = started or when, when
            cwd = str(entry.get("cwd") or cwd)
            if entry.get("gitBranch") not in (None, "", "HEAD"):  # Claude Code's "HEAD": no git, or a detached head
                branch = str(entry["gitBranch"])
            session_id = session_id or str(entry.get("sessionId") or "")
            message = entry.get("message") if isinstance(entry.get("message"), dict) else {}
            content = message.get("content")
            if entry["type"] == "user":
                prompt = _prompt_text(content)
                if prompt:
                    turns.append([prompt, ""])
                continue
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and str(block.get("text", "")).strip() and turns:
                    turns[-1][1] = str(block["text"]).strip()  # the last text of a turn is its final answer
                elif block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                    target = block["input"].get("file_path") or block["input"].get("notebook_path")
                    if isinstance(target, str) and target:
                        if block.get("name") in WRITE_TOOLS:
                            changed[target] = None
                        elif block.get("name") in READ_TOOLS:
                            read[target] = None
    if last_answer.strip() and turns:
        turns[-1][1] = last_answer.strip()
    return Session(_whole(session_id), started, ended, _whole(cwd), _whole(branch),
                   tuple(Turn(_whole(p), _whole(a)) for p, a in turns), tuple(map(_whole, changed)),
                   tuple(_whole(p) for p in read if p not in changed))


def _whole(text: str) -> str:
    """``text`` with each lone surrogate (JSON's ``\\ud83d`` without its pair: an emoji cut in two) made U+FFFD,
    which UTF-8 can write."""
    return _SURROGATE.sub("\ufffd", text)


def _safe_name(name: str) -> str:
    """``name`` as a visible folder name: NFC, its letters, marks and digits in any script and ``.``, ``_``, ``-``
    kept, each run of other characters (spaces, slashes, controls, symbols) one ``-``, no leading or trailing dot
    or dash, within :data:`NAME_CHARS` characters and :data:`NAME_BYTES` bytes."""
    import unicodedata

    kept = "".join(c if c in "._-" or unicodedata.category(c)[0] in "LMN" else "\0"
                   for c in unicodedata.normalize("NFC", name))
    name = re.sub("\0+", "-", kept).strip(".-")[:NAME_CHARS]
    return name.encode("utf-8")[:NAME_BYTES].decode("utf-8", "ignore").strip(".-")


def repository_name(cwd: str | Path) -> str:
    """The memory folder of the session's repository: the name of the nearest folder holding ``.git`` above
    ``cwd`` (else of ``cwd``), made a safe, visible folder name; a name the root keeps for another format (the
    ``foreign`` setting: ``skills``, for Agent Skills; compared ignoring case) gets :data:`SUFFIX`
    (``skills-sessions``), since memory is never written there."""
    from ..memory.tree import foreign_dirs

    here = Path(cwd or ".").expanduser().absolute()
    top = next((p for p in (here, *here.parents) if (p / ".git").exists()), here)
    name = _safe_name(top.name) or "sessions"
    reserved = {d.casefold() for d in foreign_dirs()}
    while name.casefold() in reserved:
        name += SUFFIX
    return name


def _visible(text: str) -> str:
    """``text`` without terminal escape sequences (the colours of pasted output) and with every other control or
    invisible character written as ``\\xNN`` or ``\\uNNNN``: a log is never a binary file to grep, never
    recolours the terminal that prints it, and never shows its text reversed (U+202E)."""
    from ..memory.names import odd

    text = _ANSI.sub("", text)
    if not any(odd(c) for c in text):
        return text
    return "".join((f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") if odd(c) and not c.isspace()
                   else c for c in text)


def _line(text: str, limit: int) -> str:
    """``text`` on one line, within ``limit`` characters, secrets masked, control characters visible."""
    flat = " ".join(_visible(mask(text)).split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def _shown(path: str, cwd: str) -> str:
    """A touched file relative to the session's folder when it is inside, else with ``~`` for the home folder."""
    try:
        return Path(path).relative_to(cwd).as_posix() if cwd else path
    except ValueError:
        home = str(Path.home())
        return "~" + path[len(home):] if path.startswith(home + "/") else path


def _files(label: str, paths: tuple[str, ...], cwd: str) -> str:
    if not paths:
        return ""
    shown = [f"`{_visible(mask(_shown(p, cwd))).replace('`', '')}`" for p in paths[:MAX_FILES]]
    more = f" and {len(paths) - MAX_FILES} more" if len(paths) > MAX_FILES else ""
    return f"- **{label}:** {', '.join(shown)}{more}\n"


def _turn(turn: Turn) -> str:
    """One turn's lines: the prompt and, once there is one, the final answer."""
    answer = f"  **Claude:** {_line(turn.answer, ANSWER_CHARS)}\n" if turn.answer.strip() else ""
    return f"- **User:** {_line(turn.prompt, PROMPT_CHARS)}\n" + answer


def render_section(session: Session, *, limit: int = SECTION_BYTES) -> str:
    """The session's section of its day's log (a ``##`` heading, its marker line, then one line per entry),
    within ``limit`` UTF-8 bytes."""
    start = session.started.strftime("%H:%M") if session.started else "?"
    end = session.ended.strftime("%H:%M") if session.ended else "?"
    branch = f" on branch {_line(session.branch, 60)}" if session.branch else ""
    head = (f"## Session {session.session_id[:8] or 'unknown'}, {start}-{end}{branch}\n"
            f"{_MARKER.format(session.session_id)}\n\n")
    files = _files("Files changed", session.changed, session.cwd) + _files("Files read", session.read, session.cwd)
    room = limit - len((head + files).encode("utf-8")) - 80
    # the first prompt says what the session was for; the latest turns what it came to: those that fit are kept,
    # rendered (and masked) one at a time from the end, so a transcript of 20,000 turns costs what its kept ones do
    kept: list[str] = [_turn(session.turns[0])] if session.turns else []
    used = len(kept[0].encode("utf-8")) if kept else 0
    tail: list[str] = []
    for turn in reversed(session.turns[1:]):
        entry = _turn(turn)
        used += len(entry.encode("utf-8"))
        if used > room:
            break
        tail.append(entry)
    kept += reversed(tail)
    left = len(session.turns) - len(kept)
    if left:
        kept.insert(1, f"- ({left} turn{'s' if left > 1 else ''} left out here)\n")
    body = "".join(kept)
    text = head + body + ("\n" if body and files else "") + files
    encoded = text.encode("utf-8")
    return text if len(encoded) <= limit else encoded[:limit].decode("utf-8", "ignore").rsplit("\n", 1)[0] + "\n"


def is_session_log(text: str) -> bool:
    """Whether ``text`` is a file the session log wrote: it holds the log's marker line, or a session's (a log
    written before the log's own marker was)."""
    return any(line.startswith("<!-- memsearch:session") and line.endswith("-->") for line in map(str.strip,
                                                                                                 text.splitlines()))


def day_log(folder: str, day: str, read) -> tuple[str, str | None]:
    """The day's log of ``folder`` (its path, its text or None when it is still to be written): ``folder/DAY.md``,
    or ``folder/DAY-sessions.md`` where ``DAY.md`` is not the log's (a note of the user's: never written into).
    ``read(rel)``: a file's text, None when there is none. Raises :class:`~memsearch.errors.MemoryFileExists` when
    neither name is the log's."""
    from ..errors import MemoryFileExists

    names = [f"{folder}/{day}.md", f"{folder}/{day}{SUFFIX}.md"]
    found = [(rel, read(rel)) for rel in names]
    for rel, text in found:
        if text is not None and is_session_log(text):
            return rel, text
    for rel, text in found:
        if text is None:
            return rel, None
    raise MemoryFileExists(f"{names[0]!r} and {names[1]!r} are notes that are not session logs, which the log never "
                           f"writes into: this session is not recorded until one of them is renamed")


def merge_day(before: str | None, section: str, session_id: str, title: str) -> str:
    """The day's log with ``section`` in place of the session's earlier one, else appended."""
    text = before if before is not None else f"# {title}\n{_LOG_MARKER}\n"
    marker = _MARKER.format(session_id)
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("## ") and i + 1 < len(lines) and lines[i + 1].strip() == marker:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("## ")), len(lines))
            rest = "".join(lines[end:])
            return "".join(lines[:i]) + section + ("\n" if rest else "") + rest
    return text.rstrip("\n") + "\n\n" + section


_FILES = (f"one file per day (YYYY-MM-DD.md, or YYYY-MM-DD{SUFFIX}.md where a note of that name was there first), "
          "one section per session with the user's prompts, Claude's final answers and the files the session changed "
          "and read, cut short, secrets masked. Written by memsearch's session log (the memsearch plugin's "
          "log_sessions option, or `memsearch claude-code install --log-sessions`); search it with memory_search.")


def folder_index(repository: str, cwd: str) -> str:
    """The ``MEMORY.md`` of a repository's session folder: what it holds and how it is written."""
    where = f" (`{_shown(cwd, '')}`)" if cwd else ""
    return (f"# {repository}: Claude Code sessions\n\n"
            f"What Claude Code sessions in the {repository} repository{where} did: {_FILES}\n\n{_LOG_MARKER}\n")


def folder_note(index: str, repository: str) -> str | None:
    """The folder's ``MEMORY.md`` (``index``) saying it holds the repository's session logs too, or None when it
    says so already: the log's own (its marker, or its title in one written before the marker was), or one of the
    user's it has added the paragraph to."""
    if is_session_log(index) or index.startswith(f"# {repository}: Claude Code sessions\n"):
        return None
    return f"{index.rstrip()}\n\nClaude Code sessions in the {repository} repository are kept here too: {_FILES}\n\n{_LOG_MARKER}\n"


def _indexer(root: Path, db: str | None):
    """The editor's ``on_change``: the daemon serving the index syncs the written paths, waited for at most
    :data:`SYNC_WAIT_S` (one is started when none serves; it indexes them as it starts). Never loads the model in
    the hook."""
    from ..errors import DaemonUnavailable, MemsearchError
    from ..location import IndexLocation
    from ..service import autostart
    from ..service.client import Client

    def on_change(paths) -> dict:
        try:
            result = Client(root, db, timeout=SYNC_WAIT_S).call("sync", paths=list(paths))
            return {"synced": True, "via": "daemon", "files": result.get("files", len(paths))}
        except (DaemonUnavailable, MemsearchError):
            autostart.ensure(IndexLocation.of(root, db))
            return {"synced": False, "via": "none", "files": len(paths),
                    "note": "no daemon served the index: one was started, and it indexes the log as it starts"}
    return on_change


def record(root: Path, session: Session, db: str | None = None, *, editor=None) -> str | None:
    """Write ``session`` into ``root`` (its day's log, the folder's ``MEMORY.md`` when missing); the log's relative
    path, or None when the session has no prompt yet."""
    from ..errors import MemoryFileExists, MemoryFileNotFound
    from ..memory.contract import memory_text
    from ..memory.placement import write_lock
    from ..memory.tree import resolve_root
    from .edit import open_editor

    if not session.turns:
        return None
    base = resolve_root(root)
    editor = editor or open_editor(base, db=db, on_change=_indexer(base, db))
    folder = repository_name(session.cwd)
    day = (session.started or dt.datetime.now().astimezone()).date().isoformat()
    index = f"{folder}/MEMORY.md"
    if not (base / index).is_file():
        try:
            editor.run("create", path=index, file_text=folder_index(folder, session.cwd))
        except MemoryFileExists:
            pass
    section = render_section(session)

    def read(rel: str) -> str | None:
        try:
            return memory_text(base, rel)
        except MemoryFileNotFound:
            return None

    # the folder's own lock (the editor takes the root's for each command): hooks of other sessions, and this
    # session's Stop racing its SessionEnd, read and rewrite the day's log one at a time
    with write_lock(base / folder, LOCK_WAIT_S):
        rel, before = day_log(folder, day, read)
        after = merge_day(before, section, session.session_id, f"{folder}: sessions of {day}")
        if before is None:
            editor.run("create", path=rel, file_text=after)
        elif after != before:
            editor.run("str_replace", path=rel, old_str=before, new_str=after)
        described = read(index)
        noted = None if described is None else folder_note(described, folder)
        if noted is not None:  # a folder of the user's: its MEMORY.md says the logs are here too
            editor.run("str_replace", path=index, old_str=described, new_str=noted)
    return rel


def record_hook(root: Path, payload: dict, db: str | None = None) -> str | None:
    """The ``session-log`` hook: the session of ``payload`` (the hook's JSON) recorded into ``root``."""
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return None
    path = Path(transcript).expanduser()
    if not path.is_file():
        from .hooklimits import log_failure

        log_failure(str(payload.get("hook_event_name") or "session-log"), root,
                    f"no transcript at {path}: this session is not recorded")
        return None
    last = payload.get("last_assistant_message")
    session = read_transcript(path, str(payload.get("session_id") or ""),
                              last_answer=last if isinstance(last, str) else "")
    if not session.cwd and isinstance(payload.get("cwd"), str):
        session = replace(session, cwd=_whole(payload["cwd"]))
    return record(root, session, db)
