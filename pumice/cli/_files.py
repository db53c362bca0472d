"""Commands whose file options fail on one line.

click answers a file option that names no file (``type=click.Path(exists=True)``) with three
lines: the usage, a ``--help`` hint and the error. pumice's commands print one line, as for any
other bad input: ``Error: Invalid value for '--config': File 'x' does not exist.``, exit status 2
(a usage error, as click's).
"""

from __future__ import annotations

import click

__all__ = ["BadFileOption", "FileOptionsCommand"]


class BadFileOption(click.ClickException):
    """A file option that names no usable file: one line, exit status 2."""

    exit_code = 2


class FileOptionsCommand(click.Command):
    """A click command whose ``click.Path`` options fail as :class:`BadFileOption` (one line)
    instead of click's usage, hint and error lines. Other usage errors are click's."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.BadParameter as e:
            if e.param is not None and isinstance(e.param.type, click.Path):
                raise BadFileOption(e.format_message()) from None
            raise
