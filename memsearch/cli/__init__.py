"""The ``memsearch`` command line: one module per command group over the library."""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Console entry point (see :func:`memsearch.cli.app.main`)."""
    from .app import main as run

    return run(argv)
