"""Container shim: the parent of one container's main process (what conmon / containerd-shim are
for a real runtime).

Run as ``python -I -S shim.py LOG_FILE EXIT_FILE -- CMD [ARGS...]`` (stdlib only, no pumice
imports, so it starts in ~15 ms). It runs inside the Pod's namespaces before the container's
mounts are made (its child makes them), so volume mounts cannot hide the interpreter. It

- forks and execs ``CMD`` with stdout and stderr on two pipes, in the shim's process group;
- writes every output line to ``LOG_FILE`` in the CRI log format the kubelet uses
  (``<RFC 3339 nano time> <stdout|stderr> <F|P> <text>``; ``P`` marks a partial line split at
  16 KiB), so ``kubectl logs --timestamps`` and ``--since`` work;
- forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the child;
- when the child exits, drains the pipes (at most 1 s more, since grandchildren may hold them),
  writes the exit code to ``EXIT_FILE`` (``128 + signal`` for a killed child, as a shell reports
  it) via a temporary file and rename, and exits with that code.

A container with ``stdin: true`` (``PUMICE_STDIN_SOCKET`` set to a path in the environment) gets its
stdin from a pipe the shim feeds with what arrives on a Unix socket at that path (the node agent's
``attach`` with stdin connects there); with ``tty: true`` as well (``PUMICE_TTY=1``) the command
runs on a pseudo-terminal (80x24) whose output goes to the log as it comes (``P`` records until a
newline), so a shell's prompt and echo reach an attached client. Both variables are removed from
the command's environment.

The exit file lets an agent that restarted (and so is not the parent) learn the exit code of a
container it adopted. Time here is the wall clock: the shim is a separate OS process of the
process runtime, which only runs on wall time.
"""

import contextlib
import os
import select
import signal
import socket
import sys
import time

_PARTIAL = 16 * 1024
_FORWARD = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def _stamp() -> bytes:
    t = time.time()
    secs = int(t)
    return (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{int((t - secs) * 1e9):09d}Z").encode()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: shim.py LOG_FILE EXIT_FILE -- CMD [ARGS...]\n")
        return 2
    log_path, exit_path = argv[0], argv[1]
    cmd = argv[3:]
    stdin_socket = os.environ.pop("PUMICE_STDIN_SOCKET", "")
    tty = os.environ.pop("PUMICE_TTY", "") == "1" and bool(stdin_socket)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    # The child may mount volumes over the data dir: keep a handle on the exit file's directory.
    exit_dir = os.open(os.path.dirname(exit_path) or ".", os.O_RDONLY | os.O_DIRECTORY)
    exit_name = os.path.basename(exit_path)
    stdin: _Stdin | None = None
    if tty:
        import fcntl
        import pty
        import struct
        import termios

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        pid = _spawn(cmd, slave, slave, close=(master, slave, log, exit_dir), stdin=slave)
        os.close(slave)
        stdin = _Stdin(stdin_socket, master)
        out = _CriLog(log, {master: b"stdout"}, eager=True)
    else:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r = in_w = -1
        if stdin_socket:
            in_r, in_w = os.pipe()
        pid = _spawn(cmd, out_w, err_w, close=(out_r, out_w, err_r, err_w, log, exit_dir,
                                                *((in_r, in_w) if stdin_socket else ())),
                     stdin=in_r if stdin_socket else None)
        os.close(out_w)
        os.close(err_w)
        if stdin_socket:
            os.close(in_r)
            stdin = _Stdin(stdin_socket, in_w)
        out = _CriLog(log, {out_r: b"stdout", err_r: b"stderr"})

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for sig in _FORWARD:
        signal.signal(sig, forward)

    status = _copy_output(pid, out, stdin)
    while status is None:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    fd = os.open(exit_name + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=exit_dir)
    os.write(fd, f"{code}\n".encode())
    os.close(fd)
    os.rename(exit_name + ".tmp", exit_name, src_dir_fd=exit_dir, dst_dir_fd=exit_dir)
    return code


def _spawn(cmd: list[str], out_w: int, err_w: int, close: tuple[int, ...], stdin: int | None = None) -> int:
    """Fork; the child execs ``cmd`` with stdout/stderr on the pipes (stdin on ``stdin`` when
    given), ``close`` closed and the forwarded signals at their defaults (exit 127 when not found,
    126 when not runnable). The child's pid."""
    pid = os.fork()
    if pid == 0:
        try:
            if stdin is not None:
                os.dup2(stdin, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            for fd in close:
                os.close(fd)
            for sig in _FORWARD:
                signal.signal(sig, signal.SIG_DFL)
            os.execvp(cmd[0], cmd)
        except OSError as e:
            os.write(2, f"exec {cmd[0]!r} failed: {e.strerror}\n".encode())
            os._exit(127 if isinstance(e, FileNotFoundError) else 126)
    return pid


class _Stdin:
    """The container's stdin: every connection to the Unix socket ``path`` has its bytes written
    to ``sink`` (a pipe or a pseudo-terminal); the sink stays open when a client goes."""

    def __init__(self, path: str, sink: int) -> None:
        self.sink = sink
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # a long data dir path would pass the 108-byte limit of sun_path: bind through a dir fd
        dfd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            self.listener.bind(f"/proc/self/fd/{dfd}/{os.path.basename(path)}")
        finally:
            os.close(dfd)
        self.listener.listen(4)
        self.conns: dict[int, socket.socket] = {}

    def fds(self) -> list[int]:
        return [self.listener.fileno(), *self.conns]

    def handle(self, fd: int) -> None:
        if fd == self.listener.fileno():
            conn, _ = self.listener.accept()
            self.conns[conn.fileno()] = conn
            return
        conn = self.conns[fd]
        try:
            data = conn.recv(65536)
        except OSError:
            data = b""
        if not data:
            del self.conns[fd]
            conn.close()
            return
        with contextlib.suppress(OSError):
            os.write(self.sink, data)


class _CriLog:
    """Lines of the output pipes to the log file in the CRI format (``F`` full, ``P`` partial;
    ``eager``: what has no newline yet goes out at once as ``P``, for a terminal)."""

    def __init__(self, log: int, streams: dict[int, bytes], eager: bool = False) -> None:
        self.log = log
        self.streams = streams
        self.eager = eager
        self.pending = {fd: b"" for fd in streams}

    def emit(self, fd: int, data: bytes, final: bool) -> None:
        buf = self.pending[fd] + data
        lines = buf.split(b"\n")
        rest = lines.pop()
        stream = self.streams[fd]
        chunks = [b"%s %s F %s\n" % (_stamp(), stream, line) for line in lines]
        while len(rest) >= _PARTIAL:
            chunks.append(b"%s %s P %s\n" % (_stamp(), stream, rest[:_PARTIAL]))
            rest = rest[_PARTIAL:]
        if final and rest:
            chunks.append(b"%s %s F %s\n" % (_stamp(), stream, rest))
            rest = b""
        elif self.eager and rest:
            chunks.append(b"%s %s P %s\n" % (_stamp(), stream, rest))
            rest = b""
        self.pending[fd] = rest
        if chunks:
            os.write(self.log, b"".join(chunks))

    def flush(self) -> None:
        for fd in self.streams:
            if self.pending[fd]:
                self.emit(fd, b"", True)


def _copy_output(pid: int, out: _CriLog, stdin: _Stdin | None = None) -> int | None:
    """Copy the pipes to the log until both close, or 1 s after the child exited (grandchildren
    may hold them), feeding ``stdin`` meanwhile. The child's wait status when it was reaped
    meanwhile, else None."""
    status = None
    drain_deadline = None
    open_fds = list(out.streams)
    while open_fds:
        timeout = 0.2
        if drain_deadline is not None:
            timeout = max(0.0, drain_deadline - time.monotonic())
            if timeout == 0.0:
                break
        inputs = stdin.fds() if stdin is not None and status is None else []
        try:
            ready, _, _ = select.select(open_fds + inputs, [], [], timeout)
        except InterruptedError:
            ready = []
        for fd in ready:
            if fd in inputs:
                stdin.handle(fd)  # type: ignore[union-attr]
                continue
            try:
                data = os.read(fd, 65536)
            except InterruptedError:
                continue
            except OSError:  # EIO: a terminal whose last user closed it
                data = b""
            if data:
                out.emit(fd, data, False)
            else:
                out.emit(fd, b"", True)
                open_fds.remove(fd)
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
                drain_deadline = time.monotonic() + 1.0
    out.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
