"""``pumice`` command line: one click group whose subcommands live in their own modules and are
imported only when run (so ``pumice --help`` stays fast).

Errors: a subcommand that fails on bad input prints one line to stderr and exits non-zero
(a usage error, such as a flag click refuses, is one line too: ``Error: <message>``, exit 2). Any other exception that escapes a subcommand is printed as one
line too (``Error: <type>: <first line of the message>``, exit 1); ``PUMICE_DEBUG=1`` shows the
traceback instead. A component cancelled because it did not stop within its grace period after
SIGTERM/SIGINT (:mod:`pumice.cli._signals`) prints one line and exits 1. Ctrl-C while the
command's modules are still being imported prints ``interrupted (SIGINT) before the command
started`` and exits 130.
"""

from __future__ import annotations

import sys

#: what Ctrl-C before a command runs prints (then exit status 130, as an interrupted run)
INTERRUPTED = "interrupted (SIGINT) before the command started"

try:  # Ctrl-C while Python imports these (a loaded machine: half a second): one line, no traceback
    import asyncio
    import importlib
    import importlib.util
    import os

    import click
except KeyboardInterrupt:
    sys.stderr.write(INTERRUPTED + "\n")
    raise SystemExit(130) from None

# command name -> "module:attribute" of a click.Command
COMMANDS: dict[str, tuple[str, str]] = {
    "apiserver": ("pumice.cli.apiserver", "Run the Kubernetes-compatible API server alone."),
    "controller-manager": ("pumice.cli.controller_manager", "Run controllers against a kubeconfig."),
    "scheduler": ("pumice.cli.scheduler", "Run the default or the Volcano scheduler."),
    "node-agent": ("pumice.cli.node_agent", "Run the node agent (kubelet) against a kubeconfig."),
    "up": ("pumice.cli.up", "Run the whole embedded control plane on this machine."),
    "demo": ("pumice.cli.demo", "The main job: run the upstream sample RayJob on real Ray."),
    "volcano": ("pumice.cli.volcano", "Volcano tools (session dry run)."),
    "dashboard": ("pumice.cli.dashboard", "Serve the web UI against a kubeconfig's API server."),
    "explain": ("pumice.cli.explain", "Say which gate holds a PodGroup, vcjob, RayJob or Pod."),
    "simulate": ("pumice.cli.simulate", "Run the stack on a virtual clock over a cluster trace."),
    "webhook": ("pumice.cli.webhook", "Serve the Volcano admission webhooks for a real cluster."),
    "install": ("pumice.cli.install", "Print the manifests that install pumice on a real cluster."),
    "ray": ("pumice.cli.ray", "The kubectl-ray verbs: get, create, scale, delete, job submit."),
}


def one_line(e: BaseException) -> str:
    """What went wrong, for a user, on one line (whitespace runs, newlines included, become one space).

    A user-facing failure (bad input, an API refusal, an unreachable server, a file that cannot be
    read) is its message alone, as kubectl prints one; an exception only a bug raises keeps its
    class name, is marked internal, and says how to see its traceback.
    """
    from pumice._util.errors import is_bug
    from pumice.client.base import ApiError

    text = " ".join(str(e).split())
    if isinstance(e, ApiError):
        message = " ".join((e.message or "").split())
        if e.code in (401, 403):
            return f"the API server refused the request ({e.code} {e.reason}){': ' + message if message else ''}"
        return message or f"the API server answered {e.code} {e.reason}"
    if is_bug(e):
        what = f"{type(e).__name__}: {text}" if text else type(e).__name__
        return f"internal error ({what}); run again with PUMICE_DEBUG=1 for the traceback"
    if isinstance(e, OSError) and text.startswith("[Errno") and e.strerror:
        return f"{e.strerror}: {e.filename}" if e.filename else e.strerror
    if text:
        return text
    # an exception without a message: its class name in words (ReadTimeout -> "read timeout")
    return "".join(f" {c.lower()}" if c.isupper() else c for c in type(e).__name__).strip()


def _one_line_usage(e: click.UsageError) -> click.UsageError:
    """``e`` without its context, so click prints it as the one line ``Error: <message>`` (exit
    status 2) instead of the usage line, the ``Try '... --help'`` hint and the error."""
    e.ctx = None
    return e


class LazyGroup(click.Group):
    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: object) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[arg-type]
        except click.UsageError as e:  # the group's own options: `pumice --bogus`
            raise _one_line_usage(e) from None

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # a subcommand's (or nested group's) flags, an unknown command
            raise _one_line_usage(e) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except asyncio.CancelledError:  # pumice.cli._signals cancelled it: the grace period ran out
            raise click.ClickException("stopped by signal before the shutdown finished") from None
        except Exception as e:
            if os.environ.get("PUMICE_DEBUG"):
                raise
            raise click.ClickException(one_line(e)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, (module, _) in COMMANDS.items() if importlib.util.find_spec(module) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The subcommand, imported now; None (click: "No such command") for a name that is not a
        command or whose module is not in this installation.

        Raises:
            TypeError: the module has no ``command`` (a programming error).
        """
        entry = COMMANDS.get(cmd_name)
        try:
            if entry is None or importlib.util.find_spec(entry[0]) is None:
                return None
            module = importlib.import_module(entry[0])
        except KeyboardInterrupt:  # click would print "Aborted!" and exit 1
            click.echo(INTERRUPTED, err=True)
            raise click.exceptions.Exit(130) from None
        cmd = getattr(module, "command", None)
        if not isinstance(cmd, click.Command):
            raise TypeError(f"{entry[0]} has no click command named 'command'")
        return cmd


@click.group(cls=LazyGroup)
@click.version_option(package_name="pumice")
def main() -> None:
    """pumice: KubeRay + Volcano in Python, running real Ray."""


if __name__ == "__main__":
    main()
