"""What every command shares to talk to its user: one-line errors with exit status 2, the ``-o json|yaml``
output, text fitted to the terminal (``-o table|wide``, terminal.py), the note that a report was written. The
commands of ``cli.py`` and of their own packages (``sweep``) use these."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import click
import yaml

from .errors import UserError
from .terminal import Layout, fit_lines

EXIT_USER_ERROR = 2

#: The ``-o`` values that print text: ``table`` fitted to the terminal's width, ``wide`` every column in full.
TEXT_OUTPUTS = ("table", "wide")
OUTPUT_HELP = ("Output format. table: fitted to the terminal's width (COLUMNS, else the terminal's; full when "
               "neither is known, as in a pipe); wide: every column in full whatever the width.")


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Render UserError (and unreadable files) as ``error: <message>`` with exit code 2."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(EXIT_USER_ERROR)

    return wrapper


def emit(data: Any, output: str) -> None:
    if output == "json":
        click.echo(json.dumps(data, indent=2, sort_keys=False))
    else:  # through JSON first: what -o yaml prints is exactly what -o json does (str subclasses included)
        click.echo(yaml.safe_dump(json.loads(json.dumps(data)), sort_keys=False), nl=False)


def echo_text(render: Callable[[Layout], str], output: str) -> None:
    """``-o table|wide``: what ``render`` makes for the output's layout, every line within its width."""
    layout = Layout.for_output(output)
    click.echo(fit_lines(render(layout), layout))


def write_report(data: dict[str, Any], path: str) -> None:
    """``--report FILE.html``: the result's self-contained HTML report, and a note on stderr."""
    from .report import write_report as render_to

    render_to(data, path)
    click.echo(f"report written to {path}", err=True)
