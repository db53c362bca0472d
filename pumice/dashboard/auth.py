"""Login sessions: the browser gives the API bearer token once, on the login page.

The token is checked by calling the API with it (a one-item list of Namespaces); on success the
dashboard keeps it server-side in a :class:`Session` and the browser gets only a random session
id in an ``HttpOnly``, ``SameSite=Strict`` cookie. The token never appears in a URL. Actions
(queue open/close, suspend, delete, scale) go to the API with the user's own token, through the
session's client, so the API server's authentication applies to them.

Sessions live in memory: a restart of the dashboard logs everyone out.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pumice._util.clock import Clock, default_clock
from pumice.api import scheme as sk
from pumice.client.base import ApiError, KubeClient

log = logging.getLogger(__name__)

COOKIE = "pumice_session"
IDLE_SECONDS = 8 * 3600.0


class LoginFailed(Exception):
    """The token was refused (message: the API's answer)."""


@dataclass
class Session:
    """A logged-in browser: its API client (the user's token) and flash messages."""

    client: KubeClient
    last_seen: float
    flash: list[tuple[str, str, str]] = field(default_factory=list)
    """(tone, text, path): shown once, on the next render of the page at ``path`` (the page the
    action returns to); tone is ``ok`` or ``err``."""


class Sessions:
    """Session id -> :class:`Session`.

    Args:
        client_for_token: builds an API client that sends ``token`` (the same server and TLS
            settings as the dashboard's own client).
        clock: time source for idle expiry.
    """

    def __init__(self, client_for_token: Callable[[str], KubeClient], *, clock: Clock | None = None) -> None:
        self.client_for_token = client_for_token
        self.clock = clock or default_clock()
        self._sessions: dict[str, Session] = {}

    async def login(self, token: str) -> str:
        """Check ``token`` against the API; return a new session id.

        Raises:
            LoginFailed: the API answered 401 (the token is not valid) or 403 (valid, but its
                user may not list namespaces), or the token is empty.
        """
        token = token.strip()
        if not token:
            raise LoginFailed("enter the API bearer token")
        client = self.client_for_token(token)
        try:
            await client.list(sk.NAMESPACE, limit=1)
        except ApiError as e:
            await client.close()
            if e.code == 401:
                raise LoginFailed("the API server refused this token (401 Unauthorized)") from None
            if e.code == 403:
                # the token is valid; its user may not read the cluster-wide state the pages show
                raise LoginFailed(f"this token is valid but its user may not list namespaces ({e.message}); "
                                  "the dashboard shows cluster-wide state and needs a role that can get, "
                                  "list and watch it (for example the view ClusterRole)") from None
            raise
        except BaseException:
            await client.close()
            raise
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = Session(client, self.clock.monotonic())
        return sid

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        s = self._sessions.get(sid)
        if s is None:
            return None
        now = self.clock.monotonic()
        if now - s.last_seen > IDLE_SECONDS:
            return None
        s.last_seen = now
        return s

    async def logout(self, sid: str | None) -> None:
        s = self._sessions.pop(sid or "", None)
        if s is not None:
            await s.client.close()

    async def close(self) -> None:
        for s in list(self._sessions.values()):
            with contextlib.suppress(Exception):
                await s.client.close()
        self._sessions.clear()


def token_client_factory(config: Any, *, transport: Any = None, scheme: Any = None) -> Callable[[str], KubeClient]:
    """A factory of clients for ``config``'s server that authenticate with a given token.

    ``config`` is a lightkube ``SingleConfig`` (its cluster and TLS settings are kept; its user is
    replaced by ``{token: ...}``)."""
    from lightkube.config.models import User

    from pumice.client.kube import Client

    def make(token: str) -> KubeClient:
        single = config._replace(user=User(token=token))  # SingleConfig is a NamedTuple
        return Client(single, transport=transport, scheme=scheme, field_manager="pumice-dashboard")

    return make
