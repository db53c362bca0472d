"""The kubelet's streaming endpoints: exec and attach over WebSocket with Kubernetes' channel
protocol (``v5.channel.k8s.io``, ``v4.channel.k8s.io``), served on the kubelet port the API server
proxies ``pods/{name}/exec`` and ``pods/{name}/attach`` to.

``GET /exec/{namespace}/{pod}/{container}?command=..&command=..&stdin=&stdout=&stderr=&tty=`` and
``GET /attach/{namespace}/{pod}/{container}?stdin=&stdout=&stderr=&tty=`` (WebSocket upgrade).

Channel protocol: every binary message starts with its channel byte: 0 stdin, 1 stdout, 2 stderr,
3 error (a ``Status`` in JSON when the command ends: ``Success``, or ``NonZeroExitCode`` with the
exit code as the ``ExitCode`` cause), 4 resize (``{"Width": w, "Height": h}``); v5 adds 255 close
(``[255, channel]``: the client closed its stdin).

Exec in the process runtime enters the Pod's network, mount and UTS namespaces (``nsenter`` on the
container's process), runs in the container's working directory with the container's environment,
and with ``tty=true`` gets a pseudo-terminal whose window size follows channel 4. Attach streams
what the container writes from now on (its log file); stdin on attach goes to the container's
stdin socket when the container sets ``stdin: true`` (its shim feeds the container's stdin pipe, or
its pseudo-terminal with ``tty: true``; terminal resizes are not passed on), and is refused
otherwise (other containers of the process runtime run with stdin closed).

Mirrors: kubernetes pkg/kubelet/cri/streaming/remotecommand (websocket.go: channel numbers and
protocols; httpstream.go; exec.go: the NonZeroExitCode Status) and
staging/src/k8s.io/apimachinery/pkg/util/remotecommand/constants.go.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shutil
import signal
import struct
import sys
import termios
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from pumice.api.params import query_bool
from pumice.client.websocket import WebSocket, accept
from pumice.node.logs import FileTail
from pumice.node.spdy import Session, Stream

log = logging.getLogger(__name__)


PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"]
#: kubectl 1.30+ tunnels a SPDY/3.1 port-forward session through a WebSocket with this subprotocol
PORTFORWARD_PROTOCOLS = ["SPDY/3.1+portforward.k8s.io"]

#: copies stdin to a TCP connection to 127.0.0.1:<argv[1]> and the connection to stdout (run
#: inside the Pod's network namespace) until the Pod's side ends; a failure to dial, to read the
#: connection, or to write it before then is one line on stderr and exit status 1 (the error the
#: agent sends on the stream's error stream, as containerd's port forward returns a copy error).
#: It leaves by os._exit: an interpreter exit with the stdin thread still reading aborts (SIGABRT,
#: "could not acquire lock for <stdin> at interpreter shutdown"), which made every connection the
#: Pod's server closed first an error that ends kubectl's whole port-forward.
_RELAY = (
    "import os,socket,sys,threading\n"
    "p=int(sys.argv[1])\n"
    "try:\n s=socket.create_connection(('127.0.0.1',p))\n"
    "except OSError as e:\n sys.stderr.write('dial tcp4 127.0.0.1:%d: %s'%(p,e.strerror or e));sys.exit(1)\n"
    "errs=[]\n"
    "def up():\n"
    " try:\n"
    "  while True:\n   d=sys.stdin.buffer.read1(65536)\n   if not d:break\n   s.sendall(d)\n"
    " except OSError as e:errs.append('write tcp4 127.0.0.1:%d: %s'%(p,e.strerror or e));return\n"
    " try:s.shutdown(socket.SHUT_WR)\n except OSError:pass\n"
    "threading.Thread(target=up,daemon=True).start()\n"
    "try:\n"
    " while True:\n  d=s.recv(65536)\n  if not d:break\n  sys.stdout.buffer.write(d);sys.stdout.buffer.flush()\n"
    "except OSError as e:errs.insert(0,'read tcp4 127.0.0.1:%d: %s'%(p,e.strerror or e))\n"
    "if errs:sys.stderr.write(errs[0]);sys.stderr.flush()\n"
    "os._exit(1 if errs else 0)\n"
)
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


def status_success() -> bytes:
    return json.dumps({"metadata": {}, "status": "Success"}).encode()


def exit_code(returncode: int) -> int:
    """The exit code the kubelet reports for an exec'd command: the process's own code, or
    ``128 + N`` for one killed by signal N (asyncio gives ``-N``), as runc/containerd report it;
    kubectl refuses a negative code (``invalid exit code value "-9"``)."""
    return 128 - returncode if returncode < 0 else returncode


def status_exit(argv: list[str], code: int) -> bytes:
    """The Status the kubelet sends when a command ends with a non-zero code (``code`` as
    :func:`exit_code` gives it)."""
    return json.dumps({
        "metadata": {}, "status": "Failure",
        "message": f"command terminated with non-zero exit code: error executing command [{' '.join(argv)}], "
                   f"exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }).encode()


def status_failure(message: str, reason: str = "InternalError", code: int = 500) -> bytes:
    return json.dumps({"metadata": {}, "status": "Failure", "message": message, "reason": reason,
                       "code": code}).encode()


#: attach's tries to connect to a container's stdin socket, and the pause between two
_STDIN_TRIES = 100
_STDIN_RETRY_SECONDS = 0.05


@dataclass
class ExecTarget:
    """Where a command runs: ``prefix`` (e.g. nsenter into the Pod) goes before the command,
    ``env`` is the container's environment, ``workdir`` its working directory (inside the Pod's
    mount namespace); ``log_path`` and ``running`` serve attach."""

    prefix: list[str]
    env: dict[str, str]
    workdir: str
    log_path: str
    running: Callable[[], bool]
    stdin_path: str = ""
    """The container's stdin socket (a ``stdin: true`` container of the process runtime), or ""."""


#: ``resolve(namespace, pod, container)`` -> the target, or a message saying why there is none
Resolver = Callable[[str, str, str], Awaitable["ExecTarget | str"]]


@dataclass
class ForwardTarget:
    """Where port-forward connections go: through ``prefix`` (nsenter into the Pod's network
    namespace) to 127.0.0.1, or, without a prefix, straight to ``ip``."""

    prefix: list[str]
    ip: str
    uid: str


#: ``resolve_pod(namespace, pod)`` -> the target, or why there is none
PodResolver = Callable[[str, str], Awaitable["ForwardTarget | str"]]


def _flag(q: dict[str, list[str]], name: str) -> bool:
    """A bool option of the exec/attach query the API server passed on (PodExecOptions,
    PodAttachOptions): its first value as kube-apiserver's parameter codec reads it."""
    values = q.get(name)
    return bool(values and query_bool({name: values[0]}, name))


class StreamServer:
    """Serves exec and attach for the node agent's kubelet endpoint (see the module docstring)."""

    def __init__(self, resolve: Resolver, resolve_pod: PodResolver | None = None) -> None:
        self.resolve = resolve
        self.resolve_pod = resolve_pod

    @staticmethod
    def handles(path: str) -> bool:
        return path.startswith(("/exec/", "/attach/", "/portForward/"))

    async def serve(self, target: str, head: bytes, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> None:
        """Handle one upgrade request (``head``: the request line and headers already read)."""
        url = urlsplit(target)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        q = parse_qs(url.query, keep_blank_values=True)
        if parts[0] == "portForward":
            await self._port_forward(parts, head, reader, writer)
            return
        ws = await accept(head, reader, writer, PROTOCOLS)
        if ws is None:
            return
        try:
            if len(parts) != 4:
                await ws.send(bytes([ERROR]) + status_failure(f"not found: {url.path}", "NotFound", 404))
                return
            found = await self.resolve(parts[1], parts[2], parts[3])
            if isinstance(found, str):
                await ws.send(bytes([ERROR]) + status_failure(found, "BadRequest", 400))
                return
            if parts[0] == "exec":
                argv = q.get("command") or []
                if not argv:
                    await ws.send(bytes([ERROR]) + status_failure("you must specify at least 1 command", "BadRequest",
                                                                  400))
                    return
                await self._exec(ws, found, argv, stdin=_flag(q, "stdin"), tty=_flag(q, "tty"))
            else:
                await self._attach(ws, found, stdin=_flag(q, "stdin"))
        except ConnectionError:
            pass
        finally:
            await ws.close()

    async def _exec(self, ws: WebSocket, t: ExecTarget, argv: list[str], *, stdin: bool, tty: bool) -> None:
        full = [*t.prefix, "/bin/sh", "-c", 'cd "$0" 2>/dev/null; exec "$@"', t.workdir, *argv]
        if not t.prefix:
            full = list(argv)
        if tty:
            code = await self._exec_tty(ws, t, full)
        else:
            code = await self._exec_pipes(ws, t, full, stdin)
        if code is None:
            return
        code = exit_code(code)
        await ws.send(bytes([ERROR]) + (status_success() if code == 0 else status_exit(argv, code)))

    async def _exec_pipes(self, ws: WebSocket, t: ExecTarget, full: list[str], stdin: bool) -> int | None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *full, env=t.env, cwd=t.workdir if not t.prefix and os.path.isdir(t.workdir) else "/",
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
        except OSError as e:
            await ws.send(bytes([ERROR]) + status_failure(f"cannot run {full[len(t.prefix):]!r}: {e}"))
            return None

        async def pump(stream: asyncio.StreamReader | None, channel: int) -> None:
            if stream is None:
                return
            while True:
                data = await stream.read(32768)
                if not data:
                    return
                await ws.send(bytes([channel]) + data)

        async def feed() -> None:
            while True:
                msg = await ws.recv()
                if msg is None:
                    with contextlib.suppress(ProcessLookupError, OSError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    return
                if not msg:
                    continue
                if msg[0] == STDIN and proc.stdin is not None:
                    proc.stdin.write(msg[1:])
                    with contextlib.suppress(ConnectionError):
                        await proc.stdin.drain()
                elif msg[0] == CLOSE and msg[1:2] == bytes([STDIN]) and proc.stdin is not None:
                    proc.stdin.close()

        feeder = asyncio.create_task(feed())
        try:
            await asyncio.gather(pump(proc.stdout, STDOUT), pump(proc.stderr, STDERR))
            return await proc.wait()
        finally:
            feeder.cancel()
            with contextlib.suppress(BaseException):
                await feeder

    async def _exec_tty(self, ws: WebSocket, t: ExecTarget, full: list[str]) -> int | None:
        master, slave = os.openpty()
        try:
            proc = await asyncio.create_subprocess_exec(
                *full, env={**t.env, "TERM": t.env.get("TERM", "xterm")}, stdin=slave, stdout=slave, stderr=slave,
                cwd=t.workdir if not t.prefix and os.path.isdir(t.workdir) else "/", preexec_fn=_controlling_tty)
        except OSError as e:
            os.close(master)
            await ws.send(bytes([ERROR]) + status_failure(f"cannot run {full[len(t.prefix):]!r}: {e}"))
            return None
        finally:
            os.close(slave)
        loop = asyncio.get_running_loop()
        out: asyncio.Queue[bytes] = asyncio.Queue()

        def readable() -> None:
            try:
                data = os.read(master, 32768)
            except OSError:
                data = b""
            out.put_nowait(data)
            if not data:
                loop.remove_reader(master)

        loop.add_reader(master, readable)

        async def pump() -> None:
            while True:
                data = await out.get()
                if not data:
                    return
                await ws.send(bytes([STDOUT]) + data)

        async def feed() -> None:
            while True:
                msg = await ws.recv()
                if msg is None:
                    with contextlib.suppress(ProcessLookupError, OSError):
                        os.killpg(proc.pid, signal.SIGHUP)
                    return
                if not msg:
                    continue
                if msg[0] == STDIN:
                    with contextlib.suppress(OSError):
                        os.write(master, msg[1:])
                elif msg[0] == RESIZE:
                    with contextlib.suppress(ValueError, OSError):
                        size = json.loads(msg[1:])
                        fcntl.ioctl(master, termios.TIOCSWINSZ,
                                    struct.pack("HHHH", int(size.get("Height", 24)), int(size.get("Width", 80)), 0, 0))

        feeder = asyncio.create_task(feed())
        try:
            pumper = asyncio.create_task(pump())
            code = await proc.wait()
            # the last output is still in the pty after the process ended
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pumper), 1.0)
            pumper.cancel()
            return code
        finally:
            loop.remove_reader(master)
            os.close(master)
            feeder.cancel()
            with contextlib.suppress(BaseException):
                await feeder

    async def _attach(self, ws: WebSocket, t: ExecTarget, *, stdin: bool) -> None:
        sink: asyncio.StreamWriter | None = None
        if stdin:
            # the shim binds the socket a moment after the container counts as started: up to
            # _STDIN_TRIES tries _STDIN_RETRY_SECONDS apart (counted, not timed: no clock read here)
            for _ in range(_STDIN_TRIES):
                if not t.stdin_path or not t.running():
                    break
                try:
                    sink = await _connect_unix(t.stdin_path)
                    break
                except OSError:
                    await asyncio.sleep(_STDIN_RETRY_SECONDS)
            if sink is None:
                if not t.stdin_path:
                    why = ("the container does not set stdin: true (containers of the process runtime run with "
                           "stdin closed otherwise)")
                elif not t.running():
                    why = "the container is not running"
                else:
                    why = (f"the container's stdin socket did not accept a connection within "
                           f"{_STDIN_TRIES * _STDIN_RETRY_SECONDS:g} s")
                    log.warning("attach to %s: stdin socket %s did not accept a connection", t.log_path, t.stdin_path)
                await ws.send(bytes([ERROR]) + status_failure(f"stdin is not attachable: {why}", "BadRequest", 400))
                return
        offset = os.path.getsize(t.log_path) if os.path.exists(t.log_path) else 0
        tail = FileTail(t.log_path, offset)
        closed = asyncio.ensure_future(_drain(ws) if sink is None else _feed(ws, sink))
        try:
            while not closed.done():
                lines, grew = tail.read(missing_ok=True)
                for line in lines.splitlines():
                    fields = line.split(b" ", 3)
                    if len(fields) < 3:
                        continue
                    text = fields[3] if len(fields) > 3 else b""
                    await ws.send(bytes([STDERR if fields[1] == b"stderr" else STDOUT]) + text +
                                  (b"\n" if fields[2] == b"F" else b""))
                if not grew and not t.running():
                    break
                await asyncio.wait([closed], timeout=0.1)
            if not closed.done():
                await ws.send(bytes([ERROR]) + status_success())
        finally:
            closed.cancel()


    async def _port_forward(self, parts: list[str], head: bytes, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> None:
        ws = await accept(head, reader, writer, PORTFORWARD_PROTOCOLS)
        if ws is None:
            return
        try:
            found = await self.resolve_pod(parts[1], parts[2]) if self.resolve_pod and len(parts) == 3 \
                else f"not found: /{'/'.join(parts)}"
            if isinstance(found, str):
                log.warning("port-forward: %s", found)
                return
            pairs: dict[str, dict[str, Stream]] = {}

            async def on_stream(stream: Stream) -> None:
                rid = stream.headers.get("requestid", "")
                kind = stream.headers.get("streamtype", "")
                pair = pairs.setdefault(rid, {})
                pair[kind] = stream
                if "error" in pair and "data" in pair:
                    del pairs[rid]
                    await _forward(found, parts[2], pair["data"], pair["error"])

            async def read() -> bytes:
                while True:
                    data = await ws.recv()
                    if data is None:
                        return b""  # the end of the tunnel
                    if data:  # kubectl's tunnel writes empty messages too: they carry no bytes
                        return data

            await Session(read, ws.send, on_stream).run()
        except (ConnectionError, ValueError) as e:
            log.warning("port-forward to %s/%s ended: %s", parts[1] if len(parts) > 1 else "",
                        parts[2] if len(parts) > 2 else "", e)
        finally:
            await ws.close()


async def _forward_failed(err: Stream, message: str) -> None:
    """Send a forwarded connection's failure on its error stream, and log it (the kubelet's
    portforward handler logs what it sends); kubectl ends the whole port-forward on it."""
    log.warning("port-forward: %s", message)
    await err.write(message.encode())


async def _forward(t: ForwardTarget, pod: str, data: Stream, err: Stream) -> None:
    """One forwarded connection: the data stream to the Pod's port, failures to the error stream."""
    try:
        port = int(data.headers.get("port", ""))
    except ValueError:
        await err.write(f"invalid port {data.headers.get('port')!r}".encode())
        await err.close()
        await data.close()
        return
    if t.prefix:
        proc = await asyncio.create_subprocess_exec(
            *t.prefix, sys.executable, "-I", "-S", "-c", _RELAY, str(port), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        up_w, down_r = proc.stdin, proc.stdout
    else:
        proc = None
        try:
            down_r, up_w = await asyncio.open_connection(t.ip, port)
        except OSError as e:
            await _forward_failed(err, f"error forwarding port {port} to pod {pod}, uid {t.uid}: dial tcp4 "
                                       f"{t.ip}:{port}: {e.strerror or e}")
            await err.close()
            await data.close()
            return

    async def up() -> None:
        while True:
            chunk = await data.read()
            if chunk is None:
                with contextlib.suppress(OSError, RuntimeError):
                    if up_w.can_write_eof():
                        up_w.write_eof()
                    else:
                        up_w.close()
                return
            up_w.write(chunk)
            with contextlib.suppress(ConnectionError):
                await up_w.drain()

    async def down() -> None:
        while True:
            chunk = await down_r.read(65536)
            if not chunk:
                return
            await data.write(chunk)

    uptask = asyncio.create_task(up())
    try:
        await down()
        if proc is not None:
            code = await proc.wait()
            assert proc.stderr is not None
            msg = (await proc.stderr.read()).decode(errors="replace").strip()
            if code != 0:
                await _forward_failed(err, f"error forwarding port {port} to pod {pod}, uid {t.uid}: exit status "
                                           f"{code}: {msg}")
    finally:
        uptask.cancel()
        with contextlib.suppress(BaseException):
            await uptask
        with contextlib.suppress(ConnectionError):
            await data.close()
            await err.close()
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()


async def _drain(ws: WebSocket) -> None:
    while await ws.recv() is not None:
        pass


async def _connect_unix(path: str) -> asyncio.StreamWriter:
    """A connection to the Unix socket ``path`` (through a directory fd: a data dir path may pass
    the 108-byte limit of a socket address)."""
    dfd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        _, writer = await asyncio.open_unix_connection(f"/proc/self/fd/{dfd}/{os.path.basename(path)}")
    finally:
        os.close(dfd)
    return writer


async def _feed(ws: WebSocket, sink: asyncio.StreamWriter) -> None:
    """Attach's stdin: channel-0 messages to the container's stdin socket until the client closes
    its stdin (then only waits for the client to go, as :func:`_drain`); terminal resizes
    (channel 4) are not passed on."""
    try:
        while (msg := await ws.recv()) is not None:
            if not isinstance(msg, bytes) or not msg:
                continue
            if msg[0] == STDIN:
                sink.write(msg[1:])
                await sink.drain()
            elif msg[0] == CLOSE and msg[1:2] == bytes([STDIN]):
                break
    except (ConnectionError, OSError):
        pass
    finally:
        sink.close()
    await _drain(ws)


def _controlling_tty() -> None:
    os.setsid()
    with contextlib.suppress(OSError):
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def nsenter_prefix(pid: int, *, network_only: bool = False) -> list[str]:
    """The command prefix that enters the namespaces of process ``pid`` (network, mount and UTS;
    only the network one with ``network_only``)."""
    spaces = ["-n"] if network_only else ["-n", "-m", "-u"]
    return [shutil.which("nsenter") or "nsenter", "-t", str(pid), *spaces, "--"]
