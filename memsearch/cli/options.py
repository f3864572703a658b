"""The typer arguments and options several ``memsearch`` commands share, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import typer

__all__ = ["RootArg", "root_arg", "memory_root", "setting_option", "checked_option", "DbOpt", "ModelOpt", "JsonOpt"]

ROOT_HELP = "The memory root: the directory holding the root MEMORY.md."


def memory_root(value: str) -> Path:
    """The parser of every ROOT argument: typer would make ``""`` into ``Path(".")`` (the working directory), so an
    empty root is refused here, by the library's rule (:func:`~memsearch.memory.root.given_root`)."""
    from ..memory.root import given_root

    return Path(given_root(value))


def root_arg(default=..., help: str = ROOT_HELP, **kwargs):
    """A command's ROOT argument (required unless ``default`` is given), parsed by :func:`memory_root`."""
    return typer.Argument(default, help=help, show_default=False, parser=memory_root, **kwargs)


RootArg = root_arg()


def checked_option(flag: str, rule: Callable[[], Any], default=None, **kwargs):
    """An option checked as it is parsed by the library's rule for it (``rule()``: a :class:`~memsearch.settings.Rule`
    or a :class:`~memsearch.settings.Setting`, fetched on use so that the rule's module loads only then) and refused
    naming ``flag`` as the user typed it (:func:`memsearch.settings.parsed`): ``--budget -5 is not valid: --budget
    accepts ...``, exit 2, before anything starts."""

    def check(value):
        if value is not None:
            from .. import settings

            settings.parsed(value, rule(), flag)
        return value

    return typer.Option(default, flag, callback=check, **kwargs)


def setting_option(setting: str, flag: str, **kwargs):
    """An option that gives a value to a setting (``--debounce``: ``debounce_ms``; default None: the setting's
    variable, else its default), checked by the setting's own rule and named as typed (:func:`checked_option`)."""

    def rule():
        from ..settings import SETTINGS

        return SETTINGS[setting]

    return checked_option(flag, rule, **kwargs)


DbOpt = typer.Option(None, "--db", help="Index directory, or s3://bucket/prefix "
                     "(default: $MEMSEARCH_DB, else ROOT/.memsearch).")
ModelOpt = typer.Option(None, "--model", help="Embedding model: a name from models.toml or a local model directory.")
JsonOpt = typer.Option(False, "--json", help="Print one JSON object instead of a readable report.")
