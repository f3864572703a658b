"""The fast path of ``memsearch search|read|ls|core``: a running daemon answers before typer is imported.

Typer builds a pydantic validator per parameter at every run (about 0.15 s of CPU), more than
the daemon needs to answer. So the entry point first tries :func:`run`, which reads the
plain forms of these commands (the options of their typer definitions in :mod:`.app`, with
``--opt value``, ``--opt=value``, ``-kN`` and ``--``) and asks the daemon. Anything else
(``--help``, ``--queries``, ``--local``, an unknown or malformed option, a value out of
range) returns None and the full CLI runs, so usage errors and help are typer's. When the
daemon is absent or fails, the full CLI runs with ``--local``: the daemon is asked once.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["run", "parse"]

#: command -> (positional names with their defaults (None: required), options taking a value, flags)
_COMMANDS = {
    "search": ((("root", None), ("query", None)), {"-k", "--scope", "--mode", "--since", "--until", "--db", "--model"},
               {"--no-sync", "--json"}),
    "read": ((("root", None), ("path", None)), {"--lines"}, {"--json"}),
    "ls": ((("root", None), ("directory", ".")), set(), {"--json"}),
    "core": ((("root", None),), set(), {"--json"}),
}
_K = re.compile(r"[0-9]{1,4}")
K_RANGE = (1, 1000)  # as the -k option of memsearch.cli.app.search_command


def parse(argv: list[str]) -> tuple[str, dict, dict, set] | None:
    """(command, positionals, options, flags) of a plain daemon-answerable command line, else None."""
    if not argv or argv[0] not in _COMMANDS:
        return None
    command = argv[0]
    positional_spec, valued, flags_allowed = _COMMANDS[command]
    positionals: list[str] = []
    options: dict[str, str] = {}
    flags: set[str] = set()
    args = iter(argv[1:])
    only_positionals = False
    for token in args:
        if only_positionals or token == "-" or not token.startswith("-"):
            positionals.append(token)
        elif token == "--":
            only_positionals = True
        elif token in flags_allowed:
            flags.add(token)
        elif token in valued:
            value = next(args, None)
            if value is None:
                return None
            options[token] = value
        elif token.startswith("--") and "=" in token and token.split("=", 1)[0] in valued:
            name, value = token.split("=", 1)
            options[name] = value
        elif token.startswith("-k") and "-k" in valued and _K.fullmatch(token[2:]):
            options["-k"] = token[2:]
        else:
            return None  # --help, --local, --queries, a typo: typer's business
    if len(positionals) > len(positional_spec):
        return None
    named = {}
    for i, (name, default) in enumerate(positional_spec):
        if i < len(positionals):
            named[name] = positionals[i]
        elif default is None:
            return None
        else:
            named[name] = default
    if "-k" in options:
        if not _K.fullmatch(options["-k"]) or not K_RANGE[0] <= int(options["-k"]) <= K_RANGE[1]:
            return None
    return command, named, options, flags


def _request(command: str, named: dict, options: dict) -> tuple[str, dict]:
    from .. import settings

    if command == "search":
        return "search", {"query": named["query"], "k": int(options.get("-k", 10)), "scope": options.get("--scope"),
                          "mode": options.get("--mode", "hybrid"), "since": options.get("--since"),
                          "until": options.get("--until"), "model": settings.get("model", options.get("--model"))}
    if command == "read":
        return "read", {"path": named["path"], "lines": options.get("--lines")}
    if command == "ls":
        return "ls", {"path": named["directory"], "encoding": settings.get("encoding")}
    return "core", {"encoding": settings.get("encoding")}


def run(argv: list[str]) -> int | None:
    """Answer ``argv`` through the daemon and return the exit status; None: run the full CLI with ``argv``.

    When the command was one of ours but the daemon could not answer, ``argv`` is changed in
    place to carry ``--local``, so that the full CLI does not ask again.
    """
    parsed = parse(argv)
    if parsed is None:
        return None
    command, named, options, flags = parsed
    from ..errors import MemsearchError
    from . import render

    try:
        method, params = _request(command, named, options)
        db = options.get("--db")
        answer = render.ask_daemon(Path(named["root"]), method, params, db=db)
    except MemsearchError as exc:
        render.print_error(exc)
        return exc.exit_code
    if answer is None:
        argv.insert(1, "--local")
        return None
    as_json = "--json" in flags
    if command == "search":
        if as_json:
            render.emit_json({"query": named["query"], "hits": answer["hits"]})
        else:
            render.print_hits(answer["hits"])
    elif as_json:
        render.emit_json(answer)
    else:
        {"read": render.print_read, "ls": render.print_listing, "core": render.print_core}[command](answer)
    return 0
