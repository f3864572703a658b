"""The fast path of ``memsearch search|read|ls|core``: a running daemon answers before typer is imported.

Typer builds a pydantic validator per parameter at every run (about 0.15 s of CPU), more than
the daemon needs to answer. So the entry point first tries :func:`run`, which reads the
plain forms of these commands from their one declaration (:mod:`.spec`, which the typer
commands are built from too), with ``--opt value``, ``--opt=value``, ``-kN`` and ``--``, and
asks the daemon. Anything else (``--help``, ``--queries``, ``--local``, an unknown or
malformed option, a value out of range) returns None and the full CLI runs, so usage errors
and help are typer's. When the daemon is absent or fails, the full CLI runs with ``--local``
(the daemon is asked once); a search first starts one in the background unless that is turned
off (read, ls and core need no model: they never start one).
"""

from __future__ import annotations

import re

from .spec import COMMANDS, REQUIRED, check_cli_search

__all__ = ["run", "parse"]

_WHOLE = re.compile(r"[0-9]{1,9}")


def parse(argv: list[str]) -> tuple[str, dict] | None:
    """(command, values by parameter name) of a plain daemon-answerable command line, else None."""
    if not argv or argv[0] not in COMMANDS:
        return None
    command = argv[0]
    params = COMMANDS[command]
    by_flag = {flag: p for p in params if p.fast for flag in p.flags}
    positional = [p for p in params if p.positional]
    values: dict = {}
    given: list[str] = []
    args = iter(argv[1:])
    only_positionals = False
    for token in args:
        if only_positionals or token == "-" or not token.startswith("-"):
            given.append(token)
        elif token == "--":
            only_positionals = True
        elif token in by_flag and by_flag[token].flag:
            values[by_flag[token].name] = True
        elif token in by_flag:
            value = next(args, None)
            if value is None:
                return None
            values[by_flag[token].name] = value
        elif token.startswith("--") and "=" in token and by_flag.get(token.split("=", 1)[0], None) is not None \
                and not by_flag[token.split("=", 1)[0]].flag:
            name, value = token.split("=", 1)
            values[by_flag[name].name] = value
        elif token[:2] in by_flag and len(token) > 2 and not token.startswith("--") and _WHOLE.fullmatch(token[2:]):
            values[by_flag[token[:2]].name] = token[2:]  # -k5
        else:
            return None  # --help, --local, --queries, a typo: typer's business
    if len(given) > len(positional):
        return None
    for i, p in enumerate(positional):
        if i < len(given):
            values[p.name] = given[i]
        elif p.default in (None, REQUIRED):
            return None  # required here (search without a QUERY is --queries: typer's)
    for p in params:
        if p.min is not None or p.max is not None:  # a whole number within its range, else typer says why
            if p.name in values:
                if not _WHOLE.fullmatch(values[p.name]):
                    return None
                values[p.name] = int(values[p.name])
                if (p.min is not None and values[p.name] < p.min) or (p.max is not None and values[p.name] > p.max):
                    return None
        values.setdefault(p.name, p.default)
    return command, values


def run(argv: list[str]) -> int | None:
    """Answer ``argv`` through the daemon and return the exit status; None: run the full CLI with ``argv``.

    When the command was one of ours but the daemon could not answer, ``argv`` is changed in
    place to carry ``--local``, so that the full CLI does not ask again.
    """
    parsed = parse(argv)
    if parsed is None:
        return None
    command, v = parsed
    from ..errors import MemsearchError, NotAMemoryRoot
    from ..location import IndexLocation
    from ..service import route
    from . import render

    try:
        where = IndexLocation.of(v["root"], v["db"])
        common = dict(warn=render.warn)
        if command == "search":  # the daemon checks the arguments (a bad one comes back as its typed error)
            args = {name: v[name] for name in ("query", "k", "scope", "mode", "since", "until")}
            if v["scope"] not in (None, "", "."):  # as the full CLI checks it (without one, the daemon checks alike)
                check_cli_search(where.root, **args)
            start = False if v["no_daemon"] else None
            hits = route.search(where, args, model=v["model"], using=None, start=start, **common)
            answer = None if hits is None else {"hits": hits}
        elif command == "read":
            answer = route.read(where, v["path"], v["lines"], fallback=False, **common)
        elif command == "ls":
            answer = route.ls(where, v["directory"], fallback=False, **common)
        else:
            answer = route.core(where, fallback=False, **common)
    except NotAMemoryRoot:
        return None  # the full CLI words it (naming the order when the root and the next argument were swapped)
    except MemsearchError as exc:
        render.print_error(exc, v["root"], v["db"])
        return exc.exit_code
    if answer is None:
        argv.insert(1, "--asked")
        return None
    if command == "search":
        if v["as_json"]:
            render.emit_json(render.search_json(v["query"], answer["hits"]))
        else:
            render.print_hits(answer["hits"], v["root"])
    elif v["as_json"]:
        render.emit_json(answer)
    else:
        {"read": render.print_read, "ls": render.print_listing, "core": render.print_core}[command](answer)
    return 0

