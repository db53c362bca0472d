"""Ctrl-C / SIGTERM in ``pumice simulate`` (trial-3 finding 6): the first signal stops the run
as ``--until`` at the simulated time reached would, writes that report and exits 130 with one
line; a second signal exits at once, quietly. In-process: :class:`StopFlag` ends a run early with
the report of what arrived by then. Subprocess (a pty, as a terminal): the openb default trace
on the openb GPU nodes, signalled once its progress bar shows jobs done."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pumice.cli._signals import Interrupted, interrupt_on_signals, raise_on_signals
from pumice.simulate.nodes import NodeSpec
from pumice.simulate.report import write_run
from pumice.simulate.runner import INTERRUPTED, SimConfig, StopFlag, simulate
from pumice.simulate.workload import load_workload
from pumice.testing.paths import shared_dir

OPENB = shared_dir() / "traces/alibaba-clusterdata-gpu-v2023"

# Three one-Pod jobs: at 0 (runs 100 s), at 50 (runs 100 s) and at 10,000 s.
THREE = """
kind: Workload
queues: [default]
arrivals:
{}
"""
ARRIVAL = """  - at: {at}
    duration: 100
    name: job-{at}
    manifest:
      apiVersion: v1
      kind: Pod
      spec:
        schedulerName: volcano
        restartPolicy: Never
        containers:
          - name: main
            image: pumice.io/simulated
            resources: {{requests: {{cpu: "1", memory: 1Gi}}}}
"""


def test_a_stop_ends_the_run_with_the_report_of_what_arrived(tmp_path: Path) -> None:
    p = tmp_path / "w.yaml"
    p.write_text(THREE.format("".join(ARRIVAL.format(at=t) for t in (0, 50, 10_000))))
    stop = StopFlag()

    def progress(sim_t: float, done: int, _total: int, _writes: int) -> None:
        if done >= 2:  # both early jobs ended: stop long before the third arrives
            stop.set("SIGINT")

    r = simulate(SimConfig([NodeSpec("n1", 2000, 8 * 1024**3, pods=10)], load_workload(p)), progress=progress,
                 stop=stop)
    assert r.ended_by == INTERRUPTED and r.stop_reason == "SIGINT"
    assert 150 <= r.end_time < 10_000
    summ = write_run(r, tmp_path / "out", plots=False)
    assert summ["ended_by"] == "interrupted"
    assert summ["interrupted"] == {"signal": "SIGINT", "simulated_seconds": summ["simulated_seconds"]}
    # the job due at 10,000 s had not arrived: left out, as --until would leave it
    assert summ["jobs"] == {"total": 2, "finished": 2, "started": 2, "never_started": 0, "rejected": 0}
    jobs = json.loads((tmp_path / "out/jobs.json").read_text())
    assert sorted(j["job"] for j in jobs) == ["job-0", "job-50"]
    assert "interrupted (SIGINT) at simulated" in (tmp_path / "out/report.html").read_text()


def test_a_stop_set_before_the_run_starts_ends_it_at_once(tmp_path: Path) -> None:
    p = tmp_path / "w.yaml"
    p.write_text(THREE.format(ARRIVAL.format(at=1000)))
    stop = StopFlag()
    stop.set("SIGTERM")
    r = simulate(SimConfig([NodeSpec("n1", 2000, 8 * 1024**3, pods=10)], load_workload(p)), stop=stop)
    assert r.ended_by == INTERRUPTED and r.stop_reason == "SIGTERM" and r.end_time < 1000
    assert r.recorder.jobs == {}


def _start(out: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``pumice simulate`` on the openb default trace with its stdout on a pty (rich draws the
    progress bar live, as in a terminal)."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "160"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from pumice.cli.main import main; main()", "simulate",
         "--nodes", str(OPENB / "openb_node_list_gpu_node.csv"), "--workload", str(OPENB / "openb_pod_list_default.csv"),
         "--no-plots", "--out", str(out)],
        stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    return proc, master


def _read_until(master: int, proc: subprocess.Popen[bytes], want: bytes, timeout: float = 300) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while want not in seen and proc.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
    return seen


def _drain(master: int) -> bytes:
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0)
        if not ready:
            return out
        try:
            chunk = os.read(master, 65536)
        except OSError:
            return out
        if not chunk:
            return out
        out += chunk


def test_interrupt_on_signals_calls_back_once_and_restores_the_handlers() -> None:
    got: list[signal.Signals] = []
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with interrupt_on_signals(got.append) as signals:
        os.kill(os.getpid(), signal.SIGTERM)  # Python runs the handler before os.kill returns
        assert got == [signal.SIGTERM] and signals == [signal.SIGTERM]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_raise_on_signals_raises_which_signal_came_and_restores_the_handlers() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(Interrupted) as caught, raise_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)  # Python runs the handler before os.kill returns
    assert caught.value.signal == signal.SIGTERM and isinstance(caught.value, KeyboardInterrupt)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


@pytest.mark.skipif(not (OPENB / "openb_pod_list_default.csv").exists(), reason="openb trace not in ../shared")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_mid_run_writes_the_partial_report_and_exits_130(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "out"
    proc, master = _start(out)
    try:
        seen = _read_until(master, proc, b"events/s")  # the first progress output: the run is under way
        assert b"events/s" in seen, seen[-2000:]
        proc.send_signal(sig)
        # bounded, not a timing assertion: without the fix the run went on for minutes
        rc = proc.wait(timeout=120)
        seen += _drain(master)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert rc == 128 + sig.value, stderr  # 130 for SIGINT, 143 for SIGTERM
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"interrupted ({sig.name}) at simulated "), stderr
    assert lines[0].endswith(f"partial report: {out / 'report.html'}")
    assert b"Traceback" not in seen and "Traceback" not in stderr
    summ = json.loads((out / "summary.json").read_text())
    assert summ["ended_by"] == "interrupted" and summ["interrupted"]["signal"] == sig.name
    assert 0 < summ["jobs"]["total"] < 8152  # mid-run: not every Pod of the trace had arrived
    # openb Pods share GPU cards: the built-in default plus deviceshare (pumice/simulate/gpushare.conf)
    assert summ["config"]["file"].startswith("<built-in default + deviceshare>")
    for name in ("report.html", "jobs.csv", "pods.csv", "timeline.csv"):
        assert (out / name).stat().st_size > 0


@pytest.mark.skipif(not (OPENB / "openb_pod_list_default.csv").exists(), reason="openb trace not in ../shared")
def test_a_second_ctrl_c_exits_at_once_without_a_traceback(tmp_path: Path) -> None:
    proc, master = _start(tmp_path / "out")
    try:
        seen = _read_until(master, proc, b"events/s")
        assert b"events/s" in seen, seen[-2000:]
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)
        seen += _drain(master)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert rc == 130, stderr
    for text in (stderr, seen.decode(errors="replace")):
        assert "Traceback" not in text and "KeyboardInterrupt" not in text and "never retrieved" not in text


SECOND_WHILE_WRITING = """
import os, signal
from pumice.simulate import report
write_run = report.write_run
def interrupted_write_run(*args, **kw):
    os.kill(os.getpid(), signal.SIGINT)  # the first: the run is over already, the report is written
    (args[1] / "summary.json").parent.mkdir(parents=True, exist_ok=True)
    (args[1] / "summary.json").write_text("{}")
    os.kill(os.getpid(), signal.SIGINT)  # the second, mid-report
    return write_run(*args, **kw)
report.write_run = interrupted_write_run
from pumice.cli.main import main
main()
"""


def test_a_second_ctrl_c_while_the_report_is_written_says_it_is_incomplete_and_where(tmp_path: Path) -> None:
    """Trial 4 N5: the second Ctrl-C left an incomplete output directory without a word."""
    t = shared_dir() / "traces/tiresias-example"
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", SECOND_WHILE_WRITING, "simulate", "--nodes", str(t / "n32g4.csv"),
         "--workload", str(t / "60_job.csv"), "--sample", "2", "--no-plots", "--quiet", "--out", str(out)],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"SIGINT again: exited while writing the report; {out} is incomplete"]
    assert not (out / "report.html").exists()


SECOND_DURING_RUN = """
import os, signal
from pumice.simulate import runner
simulate = runner.simulate
def interrupted_simulate(*args, **kw):
    os.kill(os.getpid(), signal.SIGINT)  # the first: the run stops at its next chance
    os.kill(os.getpid(), signal.SIGINT)  # the second, before any report
    return simulate(*args, **kw)
runner.simulate = interrupted_simulate
from pumice.cli.main import main
main()
"""


def test_a_second_ctrl_c_before_the_report_says_so_and_removes_the_empty_output_directory(tmp_path: Path) -> None:
    """Trial 7 F-17: two quick Ctrl-C left an empty output directory and printed nothing."""
    t = shared_dir() / "traces/tiresias-example"
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", SECOND_DURING_RUN, "simulate", "--nodes", str(t / "n32g4.csv"),
         "--workload", str(t / "60_job.csv"), "--sample", "2", "--no-plots", "--quiet", "--out", str(out)],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"SIGINT again: exited before the report was written; no report ({out} removed)"]
    assert not out.exists()


def _waiting_in_open(proc: subprocess.Popen[bytes]) -> bool:
    """Whether ``proc`` waits in the kernel for a FIFO's other end (Linux: its wchan)."""
    try:
        return Path(f"/proc/{proc.pid}/wchan").read_text() == "wait_for_partner"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(("sig", "ignored"), [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False)])
def test_a_signal_ends_the_wait_for_a_fifo_no_writer_opens(tmp_path: Path, sig: signal.Signals,
                                                            ignored: bool) -> None:
    """Trial 18 F-6: ``--nodes FIFO`` with no writer waits in open() for good; SIGTERM killed it
    without a word, and SIGINT did nothing when it started with SIGINT ignored (a background job
    of a shell script, as the trial ran it). Each now ends it with one line, exit 128 + signal."""
    fifo = tmp_path / "nodes.fifo"
    os.mkfifo(fifo)
    w = tmp_path / "w.yaml"
    w.write_text(THREE.format(ARRIVAL.format(at=0)))

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(
        [sys.executable, "-c", "from pumice.cli.main import main; main()", "simulate", "--nodes", str(fifo),
         "--workload", str(w), "--no-plots", "--quiet", "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        preexec_fn=ignore_sigint if ignored else None)
    try:
        for _ in range(1200):  # imports take a few seconds on a busy machine
            if _waiting_in_open(proc) or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert _waiting_in_open(proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert (proc.returncode, err.decode().splitlines()) == (
        128 + sig.value, [f"interrupted ({sig.name}) before the run started; nothing simulated, no report"])
    assert not (tmp_path / "out").exists()
