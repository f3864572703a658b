"""Claude Code hooks: core memory and the top-level listing at session start, memory hits for each prompt.

Run by Claude Code as ``PYTHON -m memsearch.harness.hooks session-start|prompt --root ROOT [--db DB]`` with the
hook's JSON on stdin (https://code.claude.com/docs/en/hooks: SessionStart and UserPromptSubmit; ``session-log``,
on Stop, SessionEnd and PreCompact, is :mod:`memsearch.harness.session_log`'s). Each hook
prints ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": TEXT}}`` on stdout and exits 0,
which Claude Code adds to the model's context. A hook never blocks or fails a session: on any error, or past
:data:`HOOK_BOUND_S` seconds, it prints nothing and exits 0 (the settings memsearch writes also give Claude
Code a ``timeout`` of :data:`CLAUDE_TIMEOUT_S`).

Both hooks start the index's daemon in the background when none serves (:mod:`memsearch.service.autostart`),
so prompts are answered by a warm model; the prompt hook waits for a daemon it started at most
:data:`START_WAIT_S`, and a first prompt with no daemon running gets no hits rather than a slow answer.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

from ..errors import DaemonUnavailable
from ..location import IndexLocation
from ..service import autostart
from ..service.client import Client

__all__ = ["HOOK_BOUND_S", "CLAUDE_TIMEOUT_S", "START_WAIT_S", "PROMPT_HITS", "PROMPT_BYTES", "CONTEXT_TOKENS",
           "session_context", "prompt_context", "parse", "run", "main"]

#: The longest a hook runs: past it, it prints nothing and exits 0 (a search through a warm daemon takes
#: about 0.2 s of wall time, Python's start included: docs/benchmarks.md, "The daemon").
HOOK_BOUND_S = 8.0
#: The ``timeout`` memsearch's hook settings give Claude Code (seconds), above :data:`HOOK_BOUND_S`.
CLAUDE_TIMEOUT_S = 10
#: How long the prompt hook waits for a daemon it has just started before giving up on this prompt.
START_WAIT_S = 3.0
#: Hits recalled for a prompt, and the most UTF-8 bytes they may take in the context together. A cl100k token is
#: at least one byte, so this bounds the tokens too; English runs about 4 bytes a token, so about 1,500 tokens.
#: Counted in bytes, not with tiktoken: loading its encoding costs 0.6 s, three times the rest of the hook.
PROMPT_HITS = 5
PROMPT_BYTES = 6000
#: The most tokens the session-start context may take (core memory and the listing).
CONTEXT_TOKENS = 8000
#: The daemon's answer time for one hook request (seconds).
ASK_TIMEOUT_S = 4.0


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """``text`` within ``limit`` tokens (whole lines where possible), and whether it was cut."""
    from ..memory.tokens import count_tokens, get_encoding

    if limit <= 0:
        return "", bool(text)
    if count_tokens(text) <= limit:
        return text, False
    kept, used = [], 0
    for line in text.splitlines(keepends=True):
        cost = count_tokens(line)
        if used + cost > limit:
            break
        kept.append(line)
        used += cost
    if kept:
        return "".join(kept), True
    enc = get_encoding()
    return enc.decode(enc.encode_ordinary(text)[:limit]), True


def _start_daemon(root: Path, db: str | None) -> None:
    """Start the index's daemon in the background and return at once, as every other call that finds none does
    (:func:`memsearch.service.autostart.ensure`: one daemon however many hooks race, an idle exit, the
    ``MEMSEARCH_AUTOSTART`` opt-out, none for ``s3://`` or a read-only index)."""
    autostart.ensure(IndexLocation.of(root, db))


def session_context(root: Path, db: str | None = None, *, limit: int = CONTEXT_TOKENS) -> str:
    """Core memory and the root's memory directories with their ``MEMORY.md`` summaries, within ``limit`` tokens."""
    from .tools import ToolBox

    if Client(root, db).locate() is None:
        _start_daemon(root, db)
    text = ToolBox(root, db=db).system_prompt()
    text, cut = _cut(text, limit)
    if cut:
        text += f"\n[memory context cut at {limit} tokens: `memsearch core {root}` shows all of core memory]"
    return text


def _render_hit(hit: dict) -> str:
    where = f"{hit['path']}:{hit['start_line']}-{hit['end_line']}"
    heading = f" ({hit['heading']})" if hit.get("heading") else ""
    memory_md = hit.get("memory_md") or {}
    pointer = ""
    if memory_md.get("path"):
        title = f" ({memory_md['title']})" if memory_md.get("title") else ""
        pointer = f"\n  folder index: {memory_md['path']}{title}"
    text = " ".join(str(hit.get("text", "")).split())
    return f"- {where}{heading}: {text}{pointer}"


def _cut_bytes(text: str, limit: int) -> str:
    """``text`` within ``limit`` UTF-8 bytes, cut at a character boundary."""
    return text.encode("utf-8")[:max(limit, 0)].decode("utf-8", "ignore")


def prompt_context(root: Path, prompt: str, db: str | None = None, *, k: int = PROMPT_HITS,
                   limit: int = PROMPT_BYTES, wait: float = START_WAIT_S) -> str:
    """The top memory hits for ``prompt`` through the daemon (started when none serves), within ``limit`` bytes."""
    if not prompt.strip():
        return ""
    client = Client(root, db, timeout=ASK_TIMEOUT_S)
    if client.path is None:
        _start_daemon(root, db)
        deadline = time.monotonic() + wait
        while client.path is None and time.monotonic() < deadline:
            time.sleep(0.05)
            client.path = client.locate()
    try:
        hits = client.call("search", query=prompt, k=k)["hits"]
    except DaemonUnavailable:
        return ""
    if not hits:
        return ""
    text = "Memory recalled for this prompt (memsearch; read more with the memory tools):"
    for hit in hits:
        entry = "\n" + _render_hit(hit)
        room = limit - len(text.encode("utf-8"))
        if len(entry.encode("utf-8")) > room:
            if room > 200:  # a useful part of one more hit
                text += _cut_bytes(entry, room - 4) + " ..."
            break
        text += entry
    return text


def run(event: str, root: Path, payload: dict, db: str | None = None) -> dict | None:
    """The hook's JSON output for ``event`` (``session-start``, ``prompt`` or ``session-log``), or None: print
    nothing (``session-log`` keeps the session in the memory tree: :mod:`memsearch.harness.session_log`)."""
    if event == "session-log":
        from .session_log import record_hook

        record_hook(root, payload, db)
        return None
    if event == "session-start":
        name, text = "SessionStart", session_context(root, db)
    else:
        name, text = "UserPromptSubmit", prompt_context(root, str(payload.get("prompt") or ""), db)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}}


def parse(argv: list[str]) -> tuple[str, str, str | None] | None:
    """``(event, root, db)`` of the command line :func:`~.claude_code.hook_command` writes
    (``EVENT --root ROOT [--db DB]``, ``--opt=value`` too, other options ignored), else None. Not argparse:
    importing it (and the shutil, lzma and locale it loads) cost a prompt about a tenth of its time."""
    event, values, args = None, {}, iter(argv)
    for token in args:
        name, eq, value = token.partition("=")
        if name in ("--root", "--db"):
            value = value if eq else next(args, None)
            if value is None:
                return None
            values[name] = value
        elif not token.startswith("-") and event is None:
            event = token
    if event not in ("session-start", "prompt", "session-log") or not values.get("--root"):
        return None
    return event, values["--root"], values.get("--db")


class _OutOfTime(BaseException):
    pass


def _out_of_time(signum, frame):
    raise _OutOfTime()


def main(argv: list[str] | None = None) -> int:
    """Entry point: read the hook's JSON from stdin, print the output; always exit 0."""
    parsed = parse(sys.argv[1:] if argv is None else argv)
    if parsed is None:
        return 0
    event, root, db = parsed
    try:
        signal.signal(signal.SIGALRM, _out_of_time)
        signal.setitimer(signal.ITIMER_REAL, HOOK_BOUND_S)
        raw = sys.stdin.read() if not sys.stdin.isatty() else ""
        payload = json.loads(raw) if raw.strip() else {}
        output = run(event, Path(root), payload if isinstance(payload, dict) else {}, db)
        signal.setitimer(signal.ITIMER_REAL, 0)
        if output:
            sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - a hook never fails the session: nothing printed, exit 0
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
