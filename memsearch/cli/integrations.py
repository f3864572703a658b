"""``memsearch mcp-config`` and ``memsearch claude-code install``: agent clients configured with absolute paths.

Registered on the main app by :func:`register`. What ``--install`` changes is shown as a diff first, then
written after a yes (``--yes`` for scripts; without a terminal and without ``--yes`` nothing is written).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import InvalidArgument
from .options import DbOpt, root_arg

__all__ = ["register"]

INSTALL_HELP = "Write it where the client reads it, after showing the change."
PROJECT_HELP = "claude-code, cursor: the project folder (default: here for claude-code, the user's file for cursor)."


#: What a project install says once written: Claude Code 2.1 ignores the permission rules of a project's settings
#: until its folder is trusted (the dialog of an interactive start), and ``claude -p`` never shows that dialog.
TRUST_NOTE = ("next, unless you have before: start `claude` in {project} and accept \"Do you trust the files in this "
              "folder?\"; until then Claude Code ignores the permission rules written here, so `claude -p` there is "
              "denied the memory tools (or pass it `--allowedTools mcp__memsearch`)")


def _confirm_and_apply(changes, yes: bool, nothing: str = "already configured: nothing to change") -> bool:
    """Show ``changes``, ask, write them; whether anything was written (``nothing``: said when there is nothing)."""
    from ..harness.clients import apply

    pending = [c for c in changes if c.changed]
    if not pending:
        typer.echo(nothing, err=True)
        return False
    for change in pending:
        typer.echo(change.diff(), err=True)
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidArgument("add --yes to write these changes (no terminal to ask)")
        if not typer.confirm("Write these changes?", default=False, err=True):
            typer.echo("nothing written", err=True)
            return False
    for change in pending:
        written = apply(change)
        typer.echo(f"wrote {change.path}" + (f" (the link's target, {written})" if written != change.path else ""),
                   err=True)
    return True


def register(app: typer.Typer) -> None:
    """Add ``mcp-config`` and the ``claude-code`` group to ``app``."""

    @app.command("mcp-config")
    def mcp_config(
        root: Path = root_arg(help="The memory root the server serves."),
        client: str = typer.Option(..., "--client", help="claude-desktop, claude-code, codex or cursor."),
        writable: bool = typer.Option(False, "--writable", help="Also expose the memory tool, which writes memory."),
        db: Optional[str] = DbOpt,
        name: str = typer.Option("memsearch", "--name", help="The server's name in the client's configuration."),
        install: bool = typer.Option(False, "--install", help=INSTALL_HELP),
        project: Optional[Path] = typer.Option(None, "--project", help=PROJECT_HELP),
        yes: bool = typer.Option(False, "--yes", help="With --install: write without asking."),
    ) -> None:
        """Print an MCP client's configuration for ROOT with absolute paths; --install writes it for the client."""
        from ..harness import clients

        spec = clients.server_spec(root, db=db, writable=writable, name=name)
        if not install:
            typer.echo(clients.render(spec, client), nl=False)
            return
        _confirm_and_apply([clients.plan_install(spec, client, project=project)], yes)

    group = typer.Typer(help="Claude Code: memory hooks and the MCP server for a project.", no_args_is_help=True)
    app.add_typer(group, name="claude-code")

    @group.command("install")
    def claude_code_install(
        root: Path = root_arg(help="The memory root."),
        project: Optional[Path] = typer.Option(
            None, "--project", help="The project: .claude/settings.json, .mcp.json (default: the current folder)."),
        plugin: Optional[Path] = typer.Option(None, "--plugin", help="Write a plugin folder instead."),
        writable: bool = typer.Option(False, "--writable", help="Also expose the memory tool, which writes memory."),
        log_sessions: bool = typer.Option(
            False, "--log-sessions", help="Keep each session as memory: ROOT/<repository>/<date>.md (Stop, SessionEnd, "
            "PreCompact hooks). Run install again without it to stop."),
        db: Optional[str] = DbOpt,
        yes: bool = typer.Option(False, "--yes", help="Write without asking."),
    ) -> None:
        """Add memsearch's hooks (core memory at session start, memory for each prompt), its MCP server and the
        permission rules for its tools; --log-sessions also keeps each session in ROOT."""
        from ..harness import claude_code, clients

        if plugin is not None and project is not None:
            raise InvalidArgument("give either --project DIR (a project's own configuration) or --plugin DIR (a plugin "
                                  "folder), not both")
        project = project or Path(".")  # a folder that does not exist is refused by clients.project_dir
        spec = clients.server_spec(root, db=db, writable=writable)
        base = Path(spec.args[1])
        if plugin is not None:
            changes = claude_code.plan_plugin(spec, base, plugin, db, log_sessions=log_sessions)
            _confirm_and_apply(changes, yes)
            return
        changes = claude_code.plan_project(spec, base, project, db, log_sessions=log_sessions)
        if _confirm_and_apply(changes, yes):
            from ..errors import shell_word

            typer.echo(TRUST_NOTE.format(project=shell_word(changes[0].path.parent.parent)), err=True)

    @group.command("uninstall")
    def claude_code_uninstall(
        project: Path = typer.Option(Path("."), "--project", help="The project: .claude/settings.json, .mcp.json."),
        yes: bool = typer.Option(False, "--yes", help="Write without asking."),
    ) -> None:
        """Take out of a project what install added (hooks, MCP server, permission rules); everything else is kept,
        and the memory root, session logs included, is left as it is."""
        from ..harness import claude_code

        _confirm_and_apply(claude_code.plan_uninstall(project), yes, "memsearch is not installed there: nothing to change")

    @group.command("plugin", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def claude_code_plugin(
        ctx: typer.Context,
        what: str = typer.Argument(..., help="hook EVENT (session-start, prompt, session-log) or serve [--writable]."),
    ) -> None:
        """What the Claude Code plugin runs: a hook, or the MCP server, on its memory root ($MEMSEARCH_MEMORY_ROOT,
        default ~/.memsearch/memory, created valid on first use)."""
        from ..harness.plugin import main, serve_argv

        if what != "serve":
            raise typer.Exit(main([what, *ctx.args]))
        served = serve_argv(ctx.args)  # `memsearch serve ROOT ...`, run by this command line's own root command
        if served is None:
            raise typer.Exit(2)
        raise typer.Exit(ctx.find_root().command.main(args=served, prog_name="memsearch", standalone_mode=False) or 0)
