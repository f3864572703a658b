"""Claude Code hooks: core memory and the top-level listing at session start, memory hits for each prompt.

Run by Claude Code as ``PYTHON -m memsearch.harness.hooks session-start|prompt --root ROOT [--db DB]`` with the
hook's JSON on stdin (https://code.claude.com/docs/en/hooks: SessionStart and UserPromptSubmit; ``session-log``,
on Stop, SessionEnd and PreCompact, is :mod:`memsearch.harness.session_log`'s). Each hook
prints ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": TEXT}}`` on stdout and exits 0,
which Claude Code adds to the model's context. A hook never blocks or fails a session: on any error, or past
the ``hook_timeout`` setting (``MEMSEARCH_HOOK_TIMEOUT``, 8 s), it prints nothing, exits 0 and says why in the
hooks' log (:func:`~memsearch.harness.hooklimits.log_failure`: ``hooks.log`` beside the service's log; the settings
memsearch writes give Claude Code a ``timeout`` a little longer: :func:`~memsearch.harness.hooklimits.claude_timeout`).
An input that is not the JSON object Claude Code sends is such an error, said in one line (:func:`read_payload`).
A memory root that is gone or not a folder is also said in the session, by SessionStart (:func:`root_notice`).

Both hooks start the index's daemon in the background when none serves (:mod:`memsearch.service.autostart`),
so prompts are answered by a warm model: the session-start hook starts it before the first prompt. The service
answers a prompt from the moment it has opened the root's index, by keyword while it loads the model (hits
``partial``), as it answers the MCP server's first search (:mod:`memsearch.service.roots`). A prompt no service
can answer yet (none listens, it is still opening the index, or no build has begun: the service loads its model
before it takes the index) is answered in-process by keyword, the routed path of every first call
(:func:`memsearch.service.route.search`): on a tree never indexed its text rows are written first, without
loading the model, and the hits say ``partial``; nothing waits for the model.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

from .. import settings
from ..errors import DaemonUnavailable, IndexBuilding, InvalidArgument, MemsearchError, NotAMemoryRoot, shell_word
from ..location import IndexLocation
from ..service import autostart
from ..service.client import Client
from .hooklimits import OutOfTime, answer_budget, log_failure

__all__ = ["PROMPT_HITS", "PROMPT_BYTES", "BUILDING_LINE", "CONTEXT_TOKENS", "session_context", "prompt_context",
           "is_chatter", "parse", "read_payload", "root_notice", "run", "main"]

#: Hits recalled for a prompt, and the most UTF-8 bytes they may take in the context together. A cl100k token is
#: at least one byte, so this bounds the tokens too; English runs about 4 bytes a token, so about 1,500 tokens.
#: Counted in bytes, not with tiktoken: loading its encoding costs 0.6 s, three times the rest of the hook.
PROMPT_HITS = 5
PROMPT_BYTES = 6000
#: The context of a prompt that recalls nothing while the root's first build runs (the search's ``indexing``,
#: :class:`~memsearch.service.firstbuild.Hits`: ``{embedded}`` of ``{files}`` files), so the model knows its
#: recall is incomplete rather than that memory holds nothing.
BUILDING_LINE = ("Memory recalled for this prompt (memsearch): nothing yet: memory is still being indexed "
                 "({embedded:,} of {files:,} files), so recall is incomplete; the memory tools search it whole in a moment")
#: Words that only steer a conversation ("yes", "continue", "ok, go ahead", "thanks!", "try again"). A prompt made of
#: them alone (at most CHATTER_WORDS words, :func:`is_chatter`) names no topic, and whatever memory ranks first for it
#: is noise: the vector leg always finds something, so each such turn got five unrelated hits (about 2 kB) in its
#: context. Nothing is recalled for it.
CHATTER = frozenset(
    "yes yeah yep yup ya no nope nah ok okay k kk sure please pls thanks thank thx ty you continue go on ahead proceed "
    "carry keep going next do it that this again retry try done stop wait hold fine great good nice cool perfect "
    "awesome lgtm looks sounds right correct agreed exactly y n hmm hm so and then now let lets".split())
CHATTER_WORDS = 6
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
        text += f"\n[memory context cut at {limit} tokens: `memsearch core {shell_word(root)}` shows all of core memory]"
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
    partial = " [partial]" if hit.get("partial") else ""
    return f"- {where}{heading}{partial}: {text}{pointer}"


def _cut_bytes(text: str, limit: int) -> str:
    """``text`` within ``limit`` UTF-8 bytes, cut at a character boundary."""
    return text.encode("utf-8")[:max(limit, 0)].decode("utf-8", "ignore")


def _recall(root: Path, prompt: str, db: str | None, k: int, deadline: float) -> list[dict]:
    """:func:`_hits`; an error (which the prompt hook answers with nothing) is written to the hooks' log first."""
    try:
        return _hits(root, prompt, db, k, deadline)
    except (MemsearchError, OSError) as exc:
        log_failure("prompt", root, exc)
        raise


def _hits(root: Path, prompt: str, db: str | None, k: int, deadline: float) -> list[dict]:
    """The hits for ``prompt`` (a :class:`~memsearch.service.firstbuild.Hits`, with ``indexing`` while the root's
    first build runs): the daemon's (hybrid) when it answers, else keyword hits found in-process.

    A root whose index has no row yet (no parameters file: no build has begun) is answered in-process, which
    writes its text rows first, even while the service runs: the service session start started loads its model
    before it takes the index (seconds to a minute on a new machine), and until then it has nothing to answer."""
    from ..location import META_FILE
    from ..service.firstbuild import Hits

    client = Client(root, db, timeout=ASK_TIMEOUT_S)
    where = client.where
    built = (where.state / META_FILE).exists()

    def ask() -> dict | None:
        try:
            return client.call("search", query=prompt, k=k)
        except DaemonUnavailable:
            return None  # none listens (a stale socket), or it does not answer in time: answered here

    if client.path is not None and built:
        try:
            answer = ask()
        except IndexBuilding:  # its first build has begun, no row committed yet: read from disk below
            answer, built = None, False
        if answer is not None:
            return Hits(answer["hits"], answer.get("indexing"))
    from ..engine.search.args import check_search
    from ..service import route
    from .api import using_index

    _start_daemon(root, db)  # for the prompts that follow (session start has started it, usually)
    args = check_search(where.root, prompt, k, mode="keyword")  # keyword: no model loads in the hook
    # built: the daemon syncs, nothing is embedded here; else the text rows are written here (or, when another
    # writer holds the index, its first rows awaited) and the daemon embeds them
    return route.search(where, args, local=True, sync=not built, coming=True, wait=max(0.0, deadline - time.monotonic()),
                        using=lambda: using_index(where.root, db=where))


def _others(hits: list, session_id: str, k: int) -> list:
    """The first ``k`` of ``hits`` that are not the running session's own section of the session log (its heading
    names the session, its marker line its id): what the model has in its context already."""
    from ..service.firstbuild import Hits

    heading, marker = f"Session {session_id[:8]}, ", f"<!-- memsearch:session {session_id} -->"
    kept = [h for h in hits if not session_id or not (
        str(h.get("heading") or "").rsplit(" > ", 1)[-1].startswith(heading) or marker in str(h.get("text") or ""))]
    return Hits(kept[:k], getattr(hits, "indexing", None))


def is_chatter(prompt: str) -> bool:
    """Whether ``prompt`` only steers the conversation (:data:`CHATTER`: "yes", "continue", "ok go ahead") or holds
    no word at all ("👍", "1"): no memory is recalled for it."""
    words = re.findall(r"[^\W\d_]+", prompt.lower().replace("'", ""))
    return len(words) <= CHATTER_WORDS and all(word in CHATTER for word in words)


def prompt_context(root: Path, prompt: str, db: str | None = None, *, k: int = PROMPT_HITS,
                   limit: int = PROMPT_BYTES, budget: float | None = None, session_id: str = "") -> str:
    """The top memory hits for ``prompt`` within ``limit`` bytes: through the daemon, or when none answers
    yet, by keyword in-process (a tree never indexed gets its text rows first), within ``budget`` seconds
    (default: :func:`answer_budget`). ``session_id``: the running session, whose own logged turns are left out."""
    if not prompt.strip() or is_chatter(prompt):
        return ""
    if budget is None:
        budget = answer_budget()
    try:
        hits = _others(_recall(root, prompt, db, 2 * k if session_id else k, time.monotonic() + budget), session_id, k)
    except (MemsearchError, OSError):
        return ""
    if not hits:
        building = getattr(hits, "indexing", None)  # the search's own word on a build under way, as the CLI's
        return BUILDING_LINE.format(**building) if building and not building.get("unbuilt") else ""
    text = "Memory recalled for this prompt (memsearch; read more with the memory tools):"
    if any(hit.get("partial") for hit in hits):
        text += ("\n(memory still being indexed: hits marked partial were found by their words only; the memory "
                 "tools search it whole in a moment)")
    for hit in hits:
        entry = "\n" + _render_hit(hit)
        room = limit - len(text.encode("utf-8"))
        if len(entry.encode("utf-8")) > room:
            if room > 200:  # a useful part of one more hit
                text += _cut_bytes(entry, room - 4) + " ..."
            break
        text += entry
    return text


def root_notice(exc: NotAMemoryRoot) -> dict:
    """SessionStart's output for a memory root it cannot use (moved, removed, not a folder): a ``systemMessage``
    telling the user what to do, in commands, and a context line telling the model that memory is unavailable."""
    again = "`memsearch claude-code install {}` (with the --project or --plugin it was installed with)"
    if exc.hint is not None and exc.hint.action == "root_gone":
        fix, model = "put the folder back, or run " + again.format("NEW_ROOT"), exc.render("tools")
    else:
        fix, model = "fix it, or run " + again.format("OTHER_ROOT"), f"{exc.text}: tell the user"
    return {"systemMessage": f"memsearch: no memory in this session: {exc.text}; {fix}",
            "hookSpecificOutput": {"hookEventName": "SessionStart",
                                   "additionalContext": f"memsearch memory is not available: {model}"}}


def run(event: str, root: Path, payload: dict, db: str | None = None) -> dict | None:
    """The hook's JSON output for ``event`` (``session-start``, ``prompt`` or ``session-log``), or None: print
    nothing (``session-log`` keeps the session in the memory tree: :mod:`memsearch.harness.session_log`)."""
    if event == "session-log":
        from .session_log import record_hook

        record_hook(root, payload, db)
        return None
    if event == "session-start":
        try:
            name, text = "SessionStart", session_context(root, db)
        except NotAMemoryRoot as exc:  # said in the session: otherwise memory would be gone without a word
            log_failure(event, root, exc)
            return root_notice(exc)
    else:
        prompt = payload.get("prompt")  # a number, list or object is no prompt: nothing is recalled for it
        session = payload.get("session_id")
        name, text = "UserPromptSubmit", prompt_context(root, prompt if isinstance(prompt, str) else "", db,
                                                        session_id=session if isinstance(session, str) else "")
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


def read_payload(raw: bytes | str) -> dict:
    """The hook's JSON object, as Claude Code writes it on stdin. Raises :class:`~memsearch.errors.InvalidArgument`
    (one line in the hooks' log, never its traceback) when the input is empty, not JSON, or not an object."""
    fix = "a hook reads the JSON object Claude Code writes on its stdin: run it as a Claude Code hook, or pipe one to it"
    if not raw.strip():
        raise InvalidArgument(f"the hook's input is empty: {fix}")
    try:
        payload = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for bytes that are not UTF-8
        why = f"{exc.msg}, line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise InvalidArgument(f"the hook's input is not JSON ({why}): {fix}") from None
    if not isinstance(payload, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(payload), "a number")
        raise InvalidArgument(f"the hook's input is {kind}, not a JSON object: {fix}")
    return payload


def _out_of_time(signum, frame):
    raise OutOfTime()


def main(argv: list[str] | None = None) -> int:
    """Entry point: read the hook's JSON from stdin, print the output; always exit 0."""
    parsed = parse(sys.argv[1:] if argv is None else argv)
    if parsed is None:
        return 0
    event, root, db = parsed
    try:
        signal.signal(signal.SIGALRM, _out_of_time)
        signal.setitimer(signal.ITIMER_REAL, settings.get("hook_timeout"))
        raw = sys.stdin.buffer.read() if not sys.stdin.isatty() else b""
        output = run(event, Path(root), read_payload(raw), db)
        signal.setitimer(signal.ITIMER_REAL, 0)
        if output:
            sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    except BaseException as exc:  # noqa: BLE001 - a hook never fails the session: nothing printed, exit 0
        signal.setitimer(signal.ITIMER_REAL, 0)
        if not isinstance(exc, (KeyboardInterrupt, SystemExit)):
            log_failure(event, root, exc)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # No interpreter shutdown: once a first prompt has loaded LanceDB, tearing it down cost about 1 s more at
    # load 15 (a hook cut at its 3 s bound took 4.0-4.2 s in all), past the bound Claude Code was given.
    os._exit(code)
