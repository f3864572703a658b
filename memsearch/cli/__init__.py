"""The ``memsearch`` command line: one module per command group over the library."""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Console entry point (see :func:`memsearch.cli.app.main`); a running daemon answers
    ``search``, ``read``, ``ls`` and ``core`` before the full CLI is even imported (:mod:`.fast`).
    Output piped into a reader that stops early (``memsearch search ... | head``) ends the command
    quietly with status 1, as typer ends its own commands then: no traceback, no error at exit."""
    import sys

    try:
        code = _run(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # a reader gone shows here, not in the interpreter's last flush
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is still buffered goes nowhere
        return 1
    return code


def _run(argv: list[str]) -> int:
    if argv[:3] == ["claude-code", "plugin", "hook"]:  # the plugin's hooks: no typer
        from ..harness.plugin import main as plugin

        return plugin(argv[2:])
    if argv[:3] == ["claude-code", "plugin", "serve"]:  # the plugin's server: `memsearch serve` on its root
        from ..harness.plugin import serve_argv

        served = serve_argv(argv[3:])
        if served is None:
            return 2
        argv = served
    from .fast import run as fast

    code = fast(argv)
    if code is not None:
        return code
    from .app import main as run

    return run(argv)
