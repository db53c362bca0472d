"""``pumice simulate``: replay a workload trace through the real controllers and the Volcano
scheduler on a virtual clock, and report (see :mod:`pumice.simulate`)."""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import math
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import click

from pumice.cli._files import FileOptionsCommand


def _parse_duration(value: str | None, option: str = "--until") -> float | None:
    """``3600``, ``90s``, ``30m``, ``12h``, ``7d`` -> seconds.

    Raises:
        click.BadParameter: not a duration (a usage error naming ``option``: exit status 2).
    """
    if value is None:
        return None
    v = value.strip().lower()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        seconds = float(v[:-1]) * units[v[-1]] if v and v[-1] in units else float(v)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a duration (e.g. 3600, 30m, 12h, 7d)",
                                 param_hint=f"'{option}'") from None
    if math.isnan(seconds) or seconds <= 0:
        raise click.BadParameter(f"the simulated time to stop at must be more than 0 seconds, got {value}",
                                 param_hint=f"'{option}'")
    from pumice.simulate.workload import MAX_SIMULATED_SECONDS

    if seconds > MAX_SIMULATED_SECONDS:
        raise click.BadParameter(f"{value} is more than the {MAX_SIMULATED_SECONDS:.0f} simulated seconds "
                                 "(10 years) a run may last", param_hint=f"'{option}'")
    return seconds


def _check_span(w: Any, workload_path: str, scale: float, until: float | None) -> None:
    """Refuse arrivals past the longest run (trial 7 F-5: ``at: 1e12`` or ``--scale 1e-9`` ran for
    ever, idle simulated time costing wall time), and, without ``--until``, jobs that would run
    past it (trial 8 F-6: ``at`` plus the run time or lifetime, each under the cap, may pass it).

    Raises:
        InputError: ``<file>: an arrival at 1e+12 simulated seconds (...) is past the ...``, or
            ``<file>: arrival 'j' (at 2e+08 s) runs until 4e+08 simulated seconds (...), past the ...``.
    """
    from pumice.simulate.nodes import InputError
    from pumice.simulate.workload import MAX_SIMULATED_SECONDS

    last = max((a.time for a in w.arrivals), default=0.0)
    if last > MAX_SIMULATED_SECONDS:
        scaled = f" after --scale {scale:g}" if scale != 1.0 else ""
        raise InputError(f"{workload_path}: an arrival at {last:g} simulated seconds{scaled} ({last / 86400 / 365:.3g} "
                         f"years) is past the {MAX_SIMULATED_SECONDS:.0f} s (10 years) a run may last; "
                         "drop it with --until or check its time")
    if until is not None:
        return  # the run stops at --until, within the cap
    for a in w.arrivals:
        end = a.time + max((x for x in (a.duration, a.delete_after, a.delete_after_start) if x is not None),
                           default=0.0)
        if end > MAX_SIMULATED_SECONDS:
            raise InputError(f"{workload_path}: arrival {a.job!r} (at {a.time:g} s) runs until {end:g} simulated "
                             f"seconds ({end / 86400 / 365:.3g} years), past the {MAX_SIMULATED_SECONDS:.0f} s "
                             "(10 years) a run may last; check its duration or stop the run earlier with --until")


def _positive_scale(_ctx: click.Context, _param: click.Parameter, value: float) -> float:
    """``--scale``: a finite factor above 0 (nan would make every arrival time nan).

    Raises:
        click.BadParameter: anything else (exit status 2).
    """
    if not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"the arrival-rate factor must be a finite number more than 0, got {value:g}")
    return value


def _check_out(out: Path) -> bool:
    """Make sure the report can be written to ``out`` before the run (a long run would otherwise
    find out at its end): create it (and its parents) if absent and check it is writable.
    Returns whether it was created here.

    Raises:
        click.BadParameter: it cannot be created or written (exit status 2).
    """
    import os

    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise click.BadParameter(f"cannot create {out}: {e.strerror or e}", param_hint="'--out'") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise click.BadParameter(f"cannot write to {out}: permission denied", param_hint="'--out'")
    return created


class _BadSchedulerConf(click.ClickException):
    """A ``--scheduler-conf`` / ``--compare`` file that does not load: a bad option value, so exit
    status 2 as click's usage errors, but printed as one line (``Error: <file>: <field>: ...``)."""

    exit_code = 2


class _BadInputFile(click.ClickException):
    """A ``--nodes``, ``--workload`` or ``--queues`` file that cannot be read as its format (not
    text, a header that does not match, a bad or negative number, not valid YAML, not the
    expected shape): a bad option value (exit status 2), printed as one line naming the file
    (``Error: <file>[:line:col | : row N (line L), column C]: ...``)."""

    exit_code = 2


class _CompareNeedsTwo(click.ClickException):
    """``--compare`` given one file: one line and exit status 2 (a usage error), instead of click's
    ``requires 2 arguments`` or, when an option follows, ``File '--out' does not exist`` (click
    takes the next word as the second file)."""

    exit_code = 2

    def __init__(self, got: str | None) -> None:
        one = f"got only {got}" if got else "got none"
        super().__init__(f"--compare takes two scheduler configuration files (--compare A.conf B.conf); {one}")


def _compare_pair(ctx: click.Context, param: click.Parameter, value: tuple[str, str] | None) -> tuple[str, str] | None:
    """``--compare A B``: two existing files. A second word that is one of this command's options
    (``--compare A --out D``) means one file was given.

    Raises:
        _CompareNeedsTwo: one file given.
        click.BadParameter: a file that does not exist (click's own check and message).
    """
    if value is None:
        return None
    options = {o for p in ctx.command.params for o in p.opts}
    if value[1] in options:
        raise _CompareNeedsTwo(value[0])
    exists = click.Path(exists=True, dir_okay=False)
    return (str(exists.convert(value[0], param, ctx)), str(exists.convert(value[1], param, ctx)))


class _SimulateCommand(FileOptionsCommand):
    """A missing input file is one line (``Error: Invalid value for '--nodes': File 'x' does not
    exist.``), exit status 2 (:class:`pumice.cli._files.FileOptionsCommand`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """click's parser, with ``--compare`` given fewer than two words as :class:`_CompareNeedsTwo`."""
        given = list(args)  # the parser consumes ``args``
        try:
            return super().parse_args(ctx, args)
        except click.BadOptionUsage as e:
            if e.option_name != "--compare" or "--compare" not in given:
                raise
            rest = given[len(given) - given[::-1].index("--compare"):]
            raise _CompareNeedsTwo(rest[0] if rest else None) from None


@click.command(name="simulate", cls=_SimulateCommand)
@click.option("--nodes", "nodes_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Node list: openb_node_list_*.csv, pai_machine_spec.csv, a Tiresias cluster spec, or Node YAML.")
@click.option("--workload", "workload_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Workload: openb pod list, philly.csv, Pollux workload, Tiresias 60_job.csv, DLRM trace or pumice YAML.")
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "openb", "philly", "pollux", "tiresias", "dlrm", "yaml"]))
@click.option("--scheduler-conf", type=click.Path(exists=True, dir_okay=False), default=None,
              help="volcano-scheduler.conf (default: the built-in configuration).")
@click.option("--compare", "compare", nargs=2, type=click.Path(dir_okay=False), default=None, callback=_compare_pair,
              help="Run the same input under two scheduler configurations, side by side.")
@click.option("--queues", "queues_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Queue manifests (YAML) to create before the run.")
@click.option("--batch-scheduler", type=click.Choice(["volcano", "none"]), default="volcano", show_default=True,
              help="KubeRay's batch scheduler for RayJobs and RayServices.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--until", "until", default=None, help="Stop at this simulated time (3600, 30m, 12h, 7d).")
@click.option("--scale", type=float, default=1.0, show_default=True, callback=_positive_scale,
              help="Inflate arrivals: arrival times divided by this factor (durations unchanged).")
@click.option("--sample", "sample_n", type=click.IntRange(min=1), default=None, help="Replay N arrivals drawn with the seed.")
@click.option("--period", type=float, default=1.0, show_default=True, help="Scheduling period, seconds.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="simulate-out", show_default=True,
              help="Where the report goes.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def command(nodes_path: str, workload_path: str, fmt: str, scheduler_conf: str | None,
            compare: tuple[str, str] | None, queues_path: str | None, batch_scheduler: str, seed: int,
            until: str | None, scale: float, sample_n: int | None, period: float, out_dir: str, no_plots: bool,
            quiet: bool) -> None:
    """Replay a workload trace through the real controllers and Volcano scheduler on a virtual
    clock, and write per-job/Pod CSV and JSON, a summary and an HTML report to --out."""
    try:
        _simulate(nodes_path, workload_path, fmt, scheduler_conf, compare, queues_path, batch_scheduler, seed,
                  until, scale, sample_n, period, out_dir, no_plots, quiet)
    except KeyboardInterrupt as e:
        # Ctrl-C (or SIGTERM, while the inputs are read) before the run's own handler is in place:
        # nothing ran, nothing to report; the same status as an interrupted run, without click's
        # "Aborted!"
        from pumice.cli._signals import Interrupted

        sig = e.signal if isinstance(e, Interrupted) else signal.SIGINT
        click.echo(f"interrupted ({sig.name}) before the run started; nothing simulated, no report", err=True)
        raise click.exceptions.Exit(128 + sig.value) from None


def _simulate(nodes_path: str, workload_path: str, fmt: str, scheduler_conf: str | None,
              compare: tuple[str, str] | None, queues_path: str | None, batch_scheduler: str, seed: int,
              until: str | None, scale: float, sample_n: int | None, period: float, out_dir: str, no_plots: bool,
              quiet: bool) -> None:
    from pumice.cli._signals import interrupt_on_signals, raise_on_signals
    from pumice.scheduler.volcano.conf import ConfigError, load_conf
    from pumice.simulate import nodes as nodes_mod
    from pumice.simulate import report
    from pumice.simulate import workload as wl
    from pumice.simulate.runner import INTERRUPTED, SimConfig, StopFlag, simulate

    until_s = _parse_duration(until)
    if not period > 0:
        raise click.BadParameter(f"the scheduling period must be more than 0 seconds, got {period:g}",
                                 param_hint="'--period'")
    from pumice.simulate.runner import STALL_AFTER_SECONDS

    if not period < STALL_AFTER_SECONDS:  # trial 8 F-3: no session ran and the run ended "stalled"
        raise click.BadParameter(f"the scheduling period must be less than the {STALL_AFTER_SECONDS:g} simulated "
                                 f"seconds without a change after which a run ends stalled, got {period:g}",
                                 param_hint="'--period'")
    # a FIFO no writer has opened blocks its open(): a signal must end that wait too (and one
    # ignored since the start, as in a shell script's background job, still counts)
    with raise_on_signals():
        try:
            node_specs = nodes_mod.load_nodes(nodes_path)
            w = wl.load_workload(workload_path, fmt, freeze=True)  # a run follows: see load_workload
            # the interpreter's last collection at exit walked every object left (the imported
            # modules', ~0.25 s): the process ends, nothing there needs collecting (registered once
            # however often a process calls this: unregister drops an earlier registration)
            atexit.unregister(gc.freeze)
            atexit.register(gc.freeze)
            in_file = len(w.arrivals)
            read_as = w.format  # what "auto" detected: the file is read once (a pipe can be read only once)
            if sample_n is not None:
                w = wl.sample(w, sample_n, seed)
            if scale != 1.0:
                w = wl.scale(w, scale)
            w = wl.until(w, until_s)
            _check_span(w, workload_path, scale, until_s)
            queues = _load_queues(queues_path) if queues_path else []
            confs: list[tuple[str, str | None]] = []
            if compare:
                if scheduler_conf:
                    raise click.UsageError("give either --scheduler-conf or --compare A.conf B.conf")
                names = [Path(c).stem for c in compare]
                if names[0] == names[1]:
                    names = [f"{names[0]}-A", f"{names[1]}-B"]
                confs = list(zip(names, compare, strict=True))
            else:
                confs = [(Path(scheduler_conf).stem if scheduler_conf else "default", scheduler_conf)]
            for _, c in confs:
                if c is not None:
                    for warning in load_conf(Path(c)).warnings:  # a path, never YAML text (/dev/null is no file)
                        click.echo(f"Warning: {warning}", err=True)
        except ConfigError as e:
            raise _BadSchedulerConf(str(e)) from None
        except (nodes_mod.InputError, OSError) as e:
            raise _BadInputFile(str(e)) from None
    inputs: dict[str, Any] = {
        "nodes": nodes_path, "workload": workload_path, "format": read_as, "queues": queues_path,
        "scheduler_conf": list(compare) if compare else scheduler_conf,
        "batch_scheduler": batch_scheduler, "seed": seed, "until": until_s, "scale": scale, "sample": sample_n,
        "period": period, "workload_arrivals": in_file, "arrivals": len(w.arrivals)}
    if sample_n is not None and sample_n > in_file:
        inputs["note"] = (f"--sample {sample_n} is more than the {in_file} arrivals of the workload: "
                          "all of them replayed")
        click.echo(f"Warning: {inputs['note']} ({workload_path})", err=True)
    created = _check_out(Path(out_dir))

    # Ctrl-C / SIGTERM: the first stops the run as --until at the simulated time reached would and
    # the report of what ran is written; a second exits at once (pumice.cli._signals).
    stop = StopFlag()
    writing: list[Path] = []  # the output directory while the report is written into it

    def last_words() -> str:
        if writing:
            return f"exited while writing the report; {writing[0]} is incomplete"
        removed = False
        if created:  # made by _check_out and nothing is written before the report: still empty
            with contextlib.suppress(OSError):
                Path(out_dir).rmdir()
                removed = True
        return "exited before the report was written; no report" + (f" ({out_dir} removed)" if removed else "")

    with interrupt_on_signals(lambda sig: stop.set(sig.name), last_words) as signals:
        results = []
        for name, conf in confs:
            if stop.is_set():
                break
            cfg = SimConfig(node_specs, w, scheduler_conf=conf, queues=queues,
                            batch_scheduler=None if batch_scheduler == "none" else batch_scheduler, seed=seed,
                            until=until_s, schedule_period=period, name=name, inputs=inputs)
            try:
                results.append(_run_with_progress(cfg, simulate, quiet, len(w.arrivals), stop))
            except nodes_mod.InputError as e:  # a --queues manifest the API server refused
                if created:
                    shutil.rmtree(out_dir, ignore_errors=True)
                raise _BadInputFile(f"{queues_path}: {e}") from None
        writing.append(Path(out_dir))
        where = _write(results, Path(out_dir), no_plots, report) if results else None
        writing.clear()
    for r in results:
        _warn_rejected(r, len(results) > 1)
    if not results and created:
        with contextlib.suppress(OSError):
            Path(out_dir).rmdir()  # made by _check_out for a run that never started
    if signals:
        stopped = [r for r in results if r.ended_by == INTERRUPTED]
        at = f" at simulated {stopped[0].end_time:.0f} s ({stopped[0].end_time / 3600:.1f} h)" if stopped else ""
        skipped = len(confs) - len(results)
        click.echo(f"interrupted ({signals[0].name}){at}; "
                   + (f"partial report: {where}" if where else "nothing simulated, no report")
                   + (f" ({skipped} configuration(s) not run)" if skipped and where else ""), err=True)
        raise click.exceptions.Exit(128 + signals[0].value)
    out = Path(out_dir)
    summaries = [(r.config.name, json.loads((out / r.config.name if len(results) > 1 else out).joinpath("summary.json")
                                            .read_text())) for r in results]
    click.echo(report.format_table(summaries, report.HEADLINE))
    for r in results:
        t = report.timing(r)
        click.echo(f"{r.config.name}: {t['simulated_seconds']:.0f} simulated s in {t['wall_seconds']:.1f} s wall, "
                   f"{t['api_writes']} API writes ({t['api_writes_per_second']}/s), {t['sessions']} sessions")
    click.echo(f"report: {where}")


REJECTED_SHOWN = 10
"""Rejected arrivals named one per `Warning:` line; more are counted in one line."""


def _warn_rejected(result: Any, name_run: bool) -> None:
    """One ``Warning:`` line on stderr per arrival the API server (or KubeRay) refused (who, and
    its reason), up to :data:`REJECTED_SHOWN`, then one line counting the rest; jobs.csv has them
    all."""
    from pumice.simulate.recorder import REJECTED

    rejected = sorted(((js.arrival.time, name, js.status, js.rejected_by)
                       for name, js in result.recorder.jobs.items() if js.status.startswith(REJECTED)))
    run = f"{result.config.name}: " if name_run else ""
    for _t, name, status, by in rejected[:REJECTED_SHOWN]:
        reason = status.removeprefix(REJECTED).removeprefix(":").strip()
        click.echo(f"Warning: {run}job {name} was rejected by {by}: {reason}", err=True)
    if len(rejected) > REJECTED_SHOWN:
        click.echo(f"Warning: {run}{len(rejected) - REJECTED_SHOWN} more job(s) rejected (status Rejected in "
                   "jobs.csv)", err=True)


def _write(results: list[Any], out: Path, no_plots: bool, report: Any) -> Path:
    """Write the report of ``results`` (one run: ``out/report.html``; more: ``out/index.html``);
    returns the HTML file a user opens. An earlier report in ``out`` is removed first
    (:func:`pumice.simulate.report.clear_earlier`), with one ``Warning:`` line."""
    try:
        earlier = report.clear_earlier(out)
        if earlier:
            click.echo(f"Warning: {out} held an earlier report: its {len(earlier)} file(s) were replaced", err=True)
        if len(results) == 1:
            report.write_run(results[0], out, plots=not no_plots)
            return out / "report.html"
        report.write_compare(results, out, plots=not no_plots)
        return out / "index.html"
    except OSError as e:
        raise click.ClickException(f"cannot write the report to {out}: {e}") from None


def _load_queues(path: str) -> list[dict[str, Any]]:
    from pumice.simulate.nodes import InputError, yaml_documents

    docs = yaml_documents(Path(path))
    if not all(isinstance(d, dict) for d in docs):
        raise InputError(f"{path}: expected Queue manifests (mappings)")
    items = [i for d in docs for i in (d.get("items") or [] if d.get("kind") == "List" else [d])]
    if not all(isinstance(i, dict) for i in items):
        raise InputError(f"{path}: expected Queue manifests (mappings)")
    queues = [i for i in items if i.get("kind") == "Queue"]
    if not queues:
        raise InputError(f"{path}: no Queue manifests")
    return queues


def _run_with_progress(cfg: Any, simulate: Any, quiet: bool, total: int, stop: Any) -> Any:
    if quiet:
        return simulate(cfg, stop=stop)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    started = time.perf_counter()  # wall time for the events/s figure only
    with Progress(TextColumn(f"[bold]{cfg.name}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), transient=False) as bar:
        task = bar.add_task("", total=total)

        def update(sim_t: float, done: int, n: int, writes: int) -> None:
            wall = max(1e-9, time.perf_counter() - started)
            bar.update(task, completed=done, total=n,
                       description=f"sim {sim_t / 3600:8.1f} h  {writes / wall:7.0f} events/s")

        return simulate(cfg, progress=update, stop=stop)
