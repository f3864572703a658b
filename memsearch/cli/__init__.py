"""The ``memsearch`` command line: one module per command group over the library."""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Console entry point (see :func:`memsearch.cli.app.main`); a running daemon answers
    ``search``, ``read``, ``ls`` and ``core`` before the full CLI is even imported (:mod:`.fast`)."""
    import sys

    from .fast import run as fast

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["claude-code", "plugin"] and argv[2:3] in (["hook"], ["serve"]):  # the plugin's hooks: no typer
        from ..harness.plugin import main as plugin

        return plugin(argv[2:])
    code = fast(argv)
    if code is not None:
        return code
    from .app import main as run

    return run(argv)
