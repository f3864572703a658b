"""``memsearch edit``: one memory-tool command from a script or hook (registered on the main app by :func:`register`).

Either the command and its arguments on the command line, or the tool call's JSON (``--input``),
exactly as Claude's memory tool sends it. The write keeps the tree valid and is searchable when
the command exits; a refusal is one ``error:`` line and exit status 2, with nothing written.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import BadToolCall, InvalidArgument, MemsearchError, shell_word
from .options import DbOpt, ModelOpt, RootArg
from .render import write_out

__all__ = ["register"]

#: The memory tool's arguments as this command takes them (an argument, or an option and its value's name): the one
#: translation of the tool's refusals into the command line's words (:func:`_in_cli_words`).
GIVEN_AS: dict[str, tuple[str, str | None]] = {
    "path": ("PATH", None), "old_path": ("PATH", None), "new_path": ("NEW_PATH", None),
    "file_text": ("--text", "TEXT"), "insert_text": ("--text", "TEXT"), "old_str": ("--old", "TEXT"),
    "new_str": ("--new", "TEXT"), "insert_line": ("--line", "N"), "view_range": ("--range", "START:END"),
}
#: What the command line fills in when it is left out.
DEFAULTS: dict[str, dict[str, str]] = {"str_replace": {"new_str": ""}}


def _text(value: Optional[str]) -> Optional[str]:
    """``-`` reads standard input."""
    return sys.stdin.read() if value == "-" else value


def _range(value: Optional[str]):

    if value is None:
        return None
    first, sep, last = value.partition(":")
    try:
        return [int(first), int(last) if last.strip() else -1] if sep else [int(first), int(first)]
    except ValueError:
        raise InvalidArgument(f"--range {value!r} is not START:END (e.g. 10:40, or 10: for the rest of the file)") from None


def _call(command, path, target, text, old, new, line, view_range, given) -> dict:

    if given is not None:
        if command is not None:
            raise InvalidArgument("give either COMMAND [PATH] ... or --input JSON, not both")
        raw = sys.stdin.read() if given == "-" else Path(given).read_text(encoding="utf-8") if Path(given).is_file() else given
        try:
            call = json.loads(raw)
        except ValueError:
            raise InvalidArgument('--input is not JSON: give a memory-tool call such as {"command": "view", "path": "/memories"}') from None
        if not isinstance(call, dict):
            raise InvalidArgument('--input must be one JSON object such as {"command": "view", "path": "/memories"}')
        return call.get("input", call) if isinstance(call.get("input"), dict) else call  # a whole tool_use block works too
    if command is None:
        raise InvalidArgument("give a COMMAND (view, create, str_replace, insert, delete, rename) or --input JSON")
    call: dict = {"command": command}
    if command == "rename":
        call |= {"old_path": path, "new_path": target}
    else:
        if target is not None:
            raise InvalidArgument(f"{command} takes one PATH; only rename takes a second (NEW_PATH)")
        call["path"] = path
    key = {"create": "file_text", "insert": "insert_text"}.get(command)
    if text is not None:
        if key is None:
            raise InvalidArgument("--text is the content of create or the text of insert")
        call[key] = _text(text)
    call |= {
        k: v
        for k, v in (
            ("old_str", _text(old)),
            ("new_str", _text(new)),
            ("insert_line", line),
            ("view_range", view_range),
        )
        if v is not None
    }
    return DEFAULTS.get(command, {}) | call


def _usage(command: str) -> str:
    """How ``command`` is given on the command line, from the tool's arguments of it (``memsearch edit ROOT create
    PATH --text TEXT``); an argument the command line fills in, or the tool's optional one, in brackets."""
    from ..memory.commands import ARGUMENTS

    required, optional = ARGUMENTS[command]
    words = []
    for name in required + optional:
        flag, value = GIVEN_AS[name]
        word = f"{flag} {value}" if value else flag
        words.append(f"[{word}]" if name in optional or name in DEFAULTS.get(command, {}) else word)
    return f"`memsearch edit ROOT {' '.join([command, *words])}`"


def _in_cli_words(call: dict) -> None:
    """Check ``call`` by the memory tool's rule (:func:`~memsearch.memory.commands.check_call`), and word a missing
    argument, or one its command does not take, as the command line spells them (``create needs --text``)."""
    from ..memory.commands import check_call

    try:
        check_call(call)
    except BadToolCall as exc:
        usage = _usage(exc.command)
        if exc.missing:
            raise InvalidArgument(f"{exc.command} needs {GIVEN_AS[exc.missing][0]}: {usage}") from None
        extra = sorted({GIVEN_AS[name][0] if name in GIVEN_AS else name for name in exc.unknown})
        raise InvalidArgument(f"{exc.command} does not take {' or '.join(extra)}: leave "
                              f"{'it' if len(extra) == 1 else 'them'} out ({usage})") from None


#: A memory-tool argument named in a refusal (not inside a path: ``notes/old_str.md`` stays as it is).
_ARGUMENT = re.compile(r"(?<![\w./-])'?(" + "|".join(GIVEN_AS) + r")'?(?![\w./-])")
#: The tool's "view PATH to see ..." advice: on the command line, the ``view`` command that does it.
_VIEW = re.compile(r"\bview (\S+) to see")


def _refusal_in_cli_words(exc: MemsearchError, root: Path) -> None:
    """Reword, in place, an editor's refusal of a command-line call in the command line's words: the tool's argument
    names as this command's options and arguments (``old_str`` -> ``--old``, ``insert_line`` -> ``--line``) and its
    ``view PATH`` as the command that views it; a model calling the tool keeps the tool's words."""
    if len(exc.args) != 1 or not isinstance(exc.args[0], str):
        return
    text = _ARGUMENT.sub(lambda m: GIVEN_AS[m.group(1)][0], exc.args[0])
    text = _VIEW.sub(lambda m: f"run `memsearch edit {shell_word(root)} view {m.group(1)}` to see", text)
    exc.args = (text,)


def register(app: typer.Typer) -> None:
    """Add the ``edit`` command to ``app``."""

    @app.command("edit")
    def edit_command(
        root: Path = RootArg,
        command: Optional[str] = typer.Argument(
            None, help="view, create, str_replace, insert, delete or rename.", show_default=False
        ),
        path: Optional[str] = typer.Argument(
            None,
            help="The file or directory: /memories/... or relative to ROOT (rename: OLD_PATH).",
            show_default=False,
        ),
        new_path: Optional[str] = typer.Argument(None, help="rename only: where it goes.", show_default=False),
        text: Optional[str] = typer.Option(
            None, "--text", help="create: the file's content; insert: the text to insert. '-' reads stdin."
        ),
        old: Optional[str] = typer.Option(
            None, "--old", help="str_replace: the exact text to replace (must occur once). '-' reads stdin."
        ),
        new: Optional[str] = typer.Option(
            None, "--new", help="str_replace: the replacement (default: empty). '-' reads stdin."
        ),
        line: Optional[int] = typer.Option(
            None, "--line", help="insert: the line to insert after; 0 inserts at the top.", min=0
        ),
        view_range: Optional[str] = typer.Option(
            None, "--range", help="view: lines START:END of a file (END -1 or empty: to the end)."
        ),
        given: Optional[str] = typer.Option(
            None, "--input", help="The memory-tool call as JSON (text, a file, or '-' for stdin) instead of COMMAND."
        ),
        db: Optional[str] = DbOpt,
        model: Optional[str] = ModelOpt,
        budget: Optional[int] = typer.Option(
            None,
            "--core-budget",
            help="Core memory budget in tokens (default $MEMSEARCH_CORE_BUDGET, else 30000).",
            min=1,
        ),
        no_sync: bool = typer.Option(
            False, "--no-sync", help="Leave the index alone (the memsearch service or the next search catches up)."
        ),
        as_json: bool = typer.Option(
            False, "--json", help="Print the whole result as JSON (result, changed, created, index)."
        ),
    ) -> None:
        """Run one memory-tool command on ROOT; the tree stays valid and the write is searchable on return."""
        from ..harness.edit import edit_served, open_editor

        call = _call(command, path, new_path, text, old, new, line, _range(view_range), given)
        if given is None:  # given as COMMAND and options: refused in their words (an --input call keeps the tool's)
            _in_cli_words(call)
        name = call.pop("command", None)
        result = None
        try:
            if not no_sync and name != "view":  # the daemon holding the index writes and indexes it (no model here)
                result = edit_served(root, db, name, call, budget=budget, model=model)
            if result is None:
                editor = open_editor(root, db=db, model=model, budget=budget, sync=not no_sync and name != "view")
                result = editor.run(name, **call).to_dict()
        except MemsearchError as exc:
            if given is None:
                _refusal_in_cli_words(exc, root)
            raise
        if as_json:
            write_out(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
            return
        write_out(result["result"] + "\n")
        index = result.get("index")
        if index and not index.get("synced"):
            sys.stderr.write(f"memsearch: the index lags: {index.get('note') or index.get('error')}\n")
