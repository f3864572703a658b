"""The typer arguments and options several ``memsearch`` commands share, declared once."""

from __future__ import annotations

import typer

__all__ = ["RootArg", "DbOpt", "ModelOpt", "JsonOpt"]

RootArg = typer.Argument(..., help="The memory root: the directory holding the root MEMORY.md.", show_default=False)
DbOpt = typer.Option(None, "--db", help="Index directory, or s3://bucket/prefix "
                     "(default: $MEMSEARCH_DB, else ROOT/.memsearch).")
ModelOpt = typer.Option(None, "--model", help="Embedding model: a name from models.toml or a local model directory.")
JsonOpt = typer.Option(False, "--json", help="Print one JSON object instead of a readable report.")
