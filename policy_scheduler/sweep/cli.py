"""``policy-scheduler sweep SPEC.yaml``: the command. It parses the options, plans the cells, runs them on
the executor chosen and prints the rows; the work is in the modules beside it (docs/sweep.md)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..console import OUTPUT_HELP, TEXT_OUTPUTS, echo_text, emit, user_errors, write_report
from ..errors import UserError

EXIT_INTERRUPTED = 130
SAVE_EVERY = 2.0  # seconds: --save rewrites the file at most this often while cells arrive


@click.command()
@click.argument("spec_file", metavar="SPEC.yaml")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="local: a process pool on this machine; dask: an existing Dask cluster (--scheduler-address).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="With --executor local: worker processes (default: this machine's cores).")
@click.option("--scheduler-address", default=None, metavar="tcp://HOST:PORT",
              help="With --executor dask: the Dask scheduler's address (needs pip install 'policy-scheduler[dask]').")
@click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="With --executor dask: seconds to wait for the scheduler.")
@click.option("-o", "--output", type=click.Choice([*TEXT_OUTPUTS, "json", "yaml", "csv"]), default="table",
              show_default=True, help=OUTPUT_HELP)
@click.option("--report", "report_path", default=None, metavar="FILE.html",
              help="Also write a self-contained HTML report of the result (the -o json data) to FILE.html.")
@click.option("--resume", "resume_path", default=None, metavar="RESULTS.json",
              help="Skip the cells a saved result (sweep -o json, or --save) already has, unchanged and not failed.")
@click.option("--save", "save_path", default=None, metavar="RESULTS.json",
              help="Keep the result (as -o json prints it) in RESULTS.json while the sweep runs, for --resume.")
@user_errors
def sweep(spec_file: str, executor: str, workers: int | None, scheduler_address: str | None, connect_timeout: float,
          output: str, report_path: str | None, resume_path: str | None, save_path: str | None) -> None:
    """Simulate every snapshot x algorithm x scenario of SPEC.yaml, one result row per cell, on this machine's
    cores or a Dask cluster (docs/sweep.md)."""
    from .cells import plan
    from .executors import Backend, DaskBackend, LocalBackend, run_cells
    from .results import document, load_previous, reusable, save
    from .spec import load_spec

    if executor == "local" and scheduler_address:
        raise UserError("--scheduler-address is for --executor dask")
    if executor == "dask" and not scheduler_address:
        raise UserError("--executor dask needs --scheduler-address tcp://HOST:PORT")
    if executor == "dask" and workers is not None:
        raise UserError("--workers is for --executor local (a Dask cluster has the workers it was started with)")
    spec = load_spec(spec_file)
    previous = load_previous(resume_path) if resume_path else []
    cells = plan(spec)
    rows: dict[Any, dict[str, Any]] = reusable(cells, previous)
    todo = [c for c in cells if c.position not in rows]
    backend: Backend = DaskBackend(scheduler_address, connect_timeout) if executor == "dask" else LocalBackend(workers)
    shape = f"{len(spec.snapshots)} snapshots x {len(spec.algorithms)} algorithms x {len(spec.scenarios)} scenarios"
    resumed = f", {len(rows)} already in {resume_path}" if resume_path else ""
    click.echo(f"sweep: {len(cells)} cells ({shape}){resumed}; {len(todo)} to run on {backend.describe()}", err=True)

    saver = _Saver(save_path, lambda: document(spec, rows, executor=backend.name), save)
    interrupted = False
    try:
        with _progress(len(todo)) as advance:
            def on_row(cell, row: dict[str, Any]) -> None:
                rows[cell.position] = row
                advance(cell, row)
                saver.maybe()

            if todo:
                run_cells(todo, backend, on_row)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        backend.close()
    data = document(spec, rows, executor=backend.name, interrupted=interrupted)
    saver.now(data)
    if report_path:
        write_report(data, report_path)
    _print(data, output)
    if interrupted:
        click.echo(f"interrupted: {data['finished']} of {data['cells']} cells finished", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if data["failed"]:
        click.echo(f"error: {data['failed']} of {data['cells']} cells failed (their rows say why)", err=True)
        sys.exit(1)


def _print(data: dict[str, Any], output: str) -> None:
    from .results import csv_text, table

    if output in TEXT_OUTPUTS:
        echo_text(lambda layout: table(data, layout), output)
    elif output == "csv":
        click.echo(csv_text(data), nl=False)
    else:
        emit(data, output)


class _Saver:
    """``--save``: the result so far, rewritten at most every SAVE_EVERY seconds, and at the end."""

    def __init__(self, path: str | None, current: Callable[[], dict[str, Any]],
                 write: Callable[[dict[str, Any], str], None]) -> None:
        self.path, self.current, self.write = path, current, write
        self.last = time.monotonic()

    def maybe(self) -> None:
        if self.path and time.monotonic() - self.last >= SAVE_EVERY:
            self.now(self.current())

    def now(self, data: dict[str, Any]) -> None:
        if self.path:
            self.write(data, self.path)
            self.last = time.monotonic()


@contextmanager
def _progress(total: int) -> Iterator[Callable[[Any, dict[str, Any]], None]]:
    """Progress on stderr: a bar on a terminal, else a line per finished cell."""
    done = 0
    if sys.stderr.isatty() and total > 1:
        with click.progressbar(length=total, label="sweep", file=sys.stderr,
                               item_show_func=lambda c: c.describe() if c is not None else None) as bar:
            yield lambda cell, row: bar.update(1, cell)
        return

    def line(cell, row: dict[str, Any]) -> None:
        nonlocal done
        done += 1
        seconds = f" {row['wallSeconds']:.2f} s" if "wallSeconds" in row else ""
        outcome = f"error: {row['error']}" if row.get("error") else "ok"
        click.echo(f"[{done}/{total}] {cell.describe()}:{seconds} {outcome}", err=True)

    yield line
