"""The ``memsearch`` command line: thin commands over the library.

Only this module turns typed errors into messages: a :class:`MemsearchError` prints one line
``error: ...`` (which says how to fix it) and exits with status 2; never a traceback.
"""

from __future__ import annotations

import json
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..errors import InvalidArgument, MemsearchError
from ..service import route
from .options import JsonOpt, RootArg, checked_option, setting_option
from .render import (
    counted,
    emit_json,
    escape,
    out,
    print_core,
    print_error,
    print_hits,
    print_listing,
    print_read,
    search_json,
    warn,
    write_out,
)
from .spec import typer_param as P

__all__ = ["app", "main", "usage_message"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Search-indexed memory for AI agents (Agent Memory directories of Markdown).",
    pretty_exceptions_enable=False,
)


@app.command()
def validate(
    root: Path = RootArg,
    as_json: bool = JsonOpt,
    budget: Optional[int] = setting_option("core_budget", "--budget",
                                           help="Core memory budget in tokens (default 30,000)."),
    window: Optional[int] = checked_option("--window", lambda: _validator().WINDOW,
                                           help="Context window in tokens; the budget becomes a share of it."),
    share: Optional[float] = checked_option("--share", lambda: _validator().SHARE,
                                            help="Share of --window for core memory (default 0.15)."),
) -> None:
    """Check a memory root against the Agent Memory spec. Exit 0 valid, 1 invalid, 2 unusable root."""
    from ..memory.validator import validate as run_validate

    if share is not None and window is None and budget is None:
        raise InvalidArgument("--share is a share of --window: give both, e.g. --window 200000 --share 0.15")
    report = run_validate(root, budget=budget, window=window, share=share)
    if as_json:
        emit_json(report.to_dict())
    else:
        status = "[green]valid[/green]" if report.valid else "[red]invalid[/red]"
        out.print(f"{escape(report.root)}: {status} Agent Memory "
                  f"({counted(len(report.memory_dirs), 'memory directory', 'memory directories')}, "
                  f"core memory {report.core_tokens:,} / {counted(report.core_budget, 'token')})")
        for issue in report.errors:
            out.print(f"  [red]error[/red]   {issue.code:<20} {escape(issue.path)}: {escape(issue.message)}")
        for issue in report.warnings:
            out.print(f"  [yellow]warning[/yellow] {issue.code:<20} {escape(issue.path)}: {escape(issue.message)}")
    raise typer.Exit(0 if report.valid else 1)


def _validator():
    from ..memory import validator

    return validator


def _where(root: Path, db: Optional[str], command: str = "", then: Optional[str] = None):
    """The index location of ``root``; a root that does not exist, given before an argument that is a folder
    (``memsearch search 'atlas' ~/memory``), is refused naming the order: the memory root comes first."""
    from ..errors import NotAMemoryRoot, shell_word
    from ..location import IndexLocation

    try:
        return IndexLocation.of(root, db)
    except NotAMemoryRoot as exc:
        if then in (None, ".") or root.expanduser().exists() or not Path(then).expanduser().is_dir():
            raise
        raise NotAMemoryRoot(f"{exc.text}; the memory root comes first: "
                             f"`memsearch {command} {shell_word(then)} {shell_word(root)}`") from None


def _start(no_daemon: bool) -> Optional[bool]:
    return False if no_daemon else None  # None: the autostart setting decides


@app.command()
def core(root: Path = P("core", "root"), db: Optional[str] = P("core", "db"), as_json: bool = P("core", "as_json"),
         local: bool = P("core", "local"), no_daemon: bool = P("core", "no_daemon"),
         asked: bool = P("core", "asked")) -> None:
    """Print core memory (root Markdown) as it goes into a system prompt."""
    data = route.core(_where(root, db), local=local or asked, warn=warn)
    if as_json:
        emit_json(data)
        return
    print_core(data)


@app.command("ls")
def list_command(
    root: Path = P("ls", "root"),
    directory: str = P("ls", "directory"),
    db: Optional[str] = P("ls", "db"),
    as_json: bool = P("ls", "as_json"),
    local: bool = P("ls", "local"),
    no_daemon: bool = P("ls", "no_daemon"),
    asked: bool = P("ls", "asked"),
) -> None:
    """List a memory directory: its child memory directories (with their MEMORY.md summary) and files."""
    data = route.ls(_where(root, db, "ls", directory), directory, local=local or asked, warn=warn)
    if as_json:
        emit_json(data)
        return
    print_listing(data)


@app.command("read")
def read_command(
    root: Path = P("read", "root"),
    path: str = P("read", "path"),
    lines: Optional[str] = P("read", "lines"),
    db: Optional[str] = P("read", "db"),
    as_json: bool = P("read", "as_json"),
    local: bool = P("read", "local"),
    no_daemon: bool = P("read", "no_daemon"),
    asked: bool = P("read", "asked"),
) -> None:
    """Print one memory file, or a line range of it. Nothing outside the root is ever read."""
    data = route.read(_where(root, db, "read", path), path, lines, local=local or asked, warn=warn)
    if as_json:
        emit_json(data)
        return
    print_read(data)


@app.command("search")
def search_command(
    root: Path = P("search", "root"),
    query: Optional[str] = P("search", "query"),
    k: int = P("search", "k"),
    scope: Optional[str] = P("search", "scope"),
    mode: str = P("search", "mode"),
    since: Optional[str] = P("search", "since"),
    until: Optional[str] = P("search", "until"),
    queries: Optional[Path] = P("search", "queries"),
    db: Optional[str] = P("search", "db"),
    model: Optional[str] = P("search", "model"),
    no_sync: bool = P("search", "no_sync"),
    as_json: bool = P("search", "as_json"),
    local: bool = P("search", "local"),
    no_daemon: bool = P("search", "no_daemon"),
    asked: bool = P("search", "asked"),
) -> None:
    """Search external memory; answered by this user's memsearch service, which the first search starts."""

    if query is None and queries is None:
        raise InvalidArgument("no QUERY given: search with `memsearch search ROOT 'some words'`, or give --queries FILE.jsonl")
    if query is not None and queries is not None:
        raise InvalidArgument("give either a QUERY or --queries FILE.jsonl, not both")
    from .spec import check_cli_search

    where = _where(root, db, "search", query)
    batch = _read_queries(queries) if queries is not None else None
    checked = []  # every query checked before any is searched: a bad line prints no hits of the others first
    for line, item in batch if batch is not None else [(None, {"query": query})]:
        with _naming(line):
            checked.append((item, check_cli_search(where.root, item["query"], k, item.get("scope", scope), mode,
                                                   since, until)))
    results = _search_all(
        where,
        model,
        checked,
        local or asked,
        no_sync,
        _start(no_daemon),
        coming=False if local else None,  # --local embeds here: no service was asked to
    )
    if batch is not None:
        for item, hits in results:
            write_out(json.dumps({"qid": item["qid"], "hits": hits}, ensure_ascii=False) + "\n")
        return
    [(_, hits)] = list(results)
    if as_json:
        emit_json(search_json(query, hits))
    else:
        print_hits(hits, root)


def _search_all(where, model, checked, local: bool, no_sync: bool, start, *, coming):
    """(item, hits as dicts) per (item, checked arguments): from the daemon while it answers, else from one index
    opened here."""
    from contextlib import nullcontext

    opened: list = []

    def using():
        if not opened:
            from ..engine.index import MemoryIndex

            opened.append(MemoryIndex(where.root, db=where, model=model))
        return nullcontext(opened[0])

    for item, args in checked:
        sync = not no_sync and not opened  # the index opened here is synced once
        yield (
            item,
            route.search(
                where, args, model=model, local=local or bool(opened), sync=sync, using=using, warn=warn, start=start,
                coming=coming,
            ),
        )


def _read_queries(path: Path) -> list[tuple[str, dict]]:
    """The queries of a ``--queries`` file, each with where it is for messages (``FILE:LINE (qid 'q1')``)."""
    from ..errors import shell_word, shown

    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()  # a BOM (Windows editors) is no part of line 1
    except OSError as exc:
        raise InvalidArgument(f"cannot read --queries {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        import codecs

        fix = (f"it is UTF-16: convert it with `iconv -f UTF-16 -t UTF-8 {shell_word(path)} > queries.jsonl`"
               if exc.object[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else "re-save it as UTF-8")
        raise InvalidArgument(f"{path} is not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start:,}): "
                              f'--queries reads JSON lines in UTF-8, each {{"qid": ..., "query": ...}}; {fix}') from None
    items = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise InvalidArgument(
                f'{path}:{number} is not JSON: each line must be {{"qid": ..., "query": ...}}'
            ) from None
        if not isinstance(item, dict) or "query" not in item or "qid" not in item:
            raise InvalidArgument(f'{path}:{number} needs "qid" and "query" keys')
        items.append((f"{path}:{number} (qid {shown(item['qid'], 40)})", item))
    return items


@contextmanager
def _naming(line: Optional[str]):
    """A typed error raised inside names ``line`` (where in the ``--queries`` file the query is) first."""
    from ..errors import MemsearchError

    try:
        yield
    except MemsearchError as exc:
        if line is not None:
            exc.args = (f"{line}: {exc.text}", *exc.args[1:])  # its type and hint kept: only where it is added
        raise


@app.command("models")
def models_command(as_json: bool = JsonOpt) -> None:
    """List the embedding models of models.toml and where each loads from."""
    from ..engine.embed.models import registry

    default, specs = registry()
    if as_json:
        emit_json({"default": default, "models": {n: s.__dict__ for n, s in specs.items()}})
        return
    table = Table("model", "dim", "max tokens", "source", show_edge=False, box=None, pad_edge=False)
    for name, spec in specs.items():
        source = f"package {spec.package} (offline)" if spec.package else f"hub {spec.hub} (needs a network once)"
        table.add_row(
            escape(name + (" (default)" if name == default else "")),
            str(spec.dimension),
            str(spec.max_seq_length),
            escape(source),
        )
    out.print(table)


# Commands that live in their own modules (daemon, MCP server, edit, agent clients).
from .check import register as _register_check  # noqa: E402
from .edit import register as _register_edit  # noqa: E402
from .indexing import register as _register_index  # noqa: E402
from .integrations import register as _register_integrations  # noqa: E402
from .serve import register as _register_serve  # noqa: E402
from .watch import register as _register_watch  # noqa: E402

_register_index(app)
_register_serve(app)
_register_watch(app)
_register_edit(app)
_register_integrations(app)
_register_check(app)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the app, turning library errors and usage mistakes into one-line messages.

    Warnings from libraries (numpy's RuntimeWarning over a damaged vector, LanceDB's) stay off the
    user's terminal, here at the edge only; ``python -W ...`` or ``PYTHONWARNINGS`` still shows them."""
    click = _click_exceptions()
    try:
        with warnings.catch_warnings():
            if not sys.warnoptions:
                warnings.simplefilter("ignore")
            code = app(args=argv, prog_name="memsearch", standalone_mode=False)
    except MemsearchError as exc:
        words = sys.argv[1:] if argv is None else argv
        print_error(exc, _root_of(words), _param_of(words, "db"))
        return exc.exit_code
    except click.UsageError as exc:
        if isinstance(exc, getattr(click, "NoArgsIsHelpError", ())):  # a bare group: its help, as typer shows it
            from typer import rich_utils

            rich_utils.rich_format_error(exc)
        else:
            print_error(usage_message(exc, sys.argv[1:] if argv is None else argv))
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except typer.Abort:  # end of input at a prompt (typer ends a Ctrl-C itself: exit 130)
        print_error("aborted: nothing was written")
        return 1
    except KeyboardInterrupt:
        return 130
    return code if isinstance(code, int) else 0


def _root_of(argv: list[str]):
    """The memory root ``argv`` names (any command's ``ROOT`` argument), else None: hints keep ``ROOT``."""
    return _param_of(argv, "root")


def _param_of(argv: list[str], name: str):
    """The value of the parameter ``name`` (``root``, ``db``) in ``argv``, else None.

    A command the fast path parses is read by it; any other (``index``, ``status``, ``stop``, ``check``,
    ``watch``, ...) by click itself, leniently (``resilient_parsing``: no callback, no prompt, no error)."""
    from .fast import parse

    parsed = parse([token for token in argv if token not in ("--local", "--asked")])  # flags the fast path leaves
    if parsed is not None:
        return parsed[1].get(name)
    try:
        command = typer.main.get_command(app)
        ctx = command.make_context("memsearch", list(argv), resilient_parsing=True)
        while hasattr(command, "resolve_command") and _words(ctx):  # a group: down to its command
            word, command, rest = command.resolve_command(ctx, _words(ctx))
            if command is None:
                return None
            ctx = command.make_context(word, rest, parent=ctx, resilient_parsing=True)
        return ctx.params.get(name)
    except Exception:  # noqa: BLE001 (the line was refused by the parser already: only the hint is at stake)
        return None


def _words(ctx) -> list[str]:
    """What a group's context left for its command: the command's name (kept apart by click) and its arguments."""
    return [*getattr(ctx, "_protected_args", ()), *ctx.args]


def usage_message(exc, argv: list[str] | None = None) -> str:
    """One line for a usage mistake (an unknown option or command, a missing argument, a bad value) that names
    ``COMMAND --help``; an unknown option is answered with the visible options it resembles (``--k``: ``-k``),
    never with a hidden one; one that resembles none, of a command that takes arguments, may be a value that starts
    with ``-`` (``memsearch search ROOT "-x fails"``): the command line ``argv`` is shown again with it after ``--``."""
    import difflib

    click = _click_exceptions()
    message = exc.format_message()
    ctx = exc.ctx
    if isinstance(exc, click.NoSuchOption) and ctx is not None:
        names = [name for p in ctx.command.params if p.param_type_name == "option" and not p.hidden
                 for name in (*p.opts, *p.secondary_opts)]
        close = [n for n in names if n.lstrip("-") == exc.option_name.lstrip("-") and n != exc.option_name]
        close = close or difflib.get_close_matches(exc.option_name, [n for n in names if n.startswith("--")])
        message = exc.message + (f" (did you mean {' or '.join(close)}?)" if close else _after_dashes(exc, argv))
    message = message.rstrip(".")
    command = ctx.command_path if ctx is not None else "memsearch"
    return f"{message}{' ' if message.endswith('?') else ': '}see `{command} --help`"


def _after_dashes(exc, argv: list[str] | None) -> str:
    """For an unknown option that may be a value starting with ``-`` (of a command taking a QUERY, a PATH: an
    argument besides ROOT): `` (a value that starts with '-' goes after `--`: `memsearch search ROOT -- '-x'`)``,
    the other words of ``argv`` kept before ``--``."""
    from ..errors import shell_word

    values = [p for p in exc.ctx.command.params if p.param_type_name == "argument" and p.name != "root"]
    if not argv or "--" in argv or not values:  # a ROOT alone (status, stop): an option mistyped, most likely
        return ""
    value = next((word for word in argv if word.startswith(exc.option_name)), None)
    if value is None:
        return ""
    words = [word for word in argv if word is not value]
    line = " ".join(shell_word(word) for word in ["memsearch", *words, "--", value])
    return f" (a value that starts with '-' goes after `--`: `{line}`)"


def _click_exceptions():
    """The exceptions module of the click that typer runs on (its own copy since typer 0.29, click before)."""
    return sys.modules[typer.BadParameter.__module__]
