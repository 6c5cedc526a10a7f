"""The client: one object per server and key."""

from __future__ import annotations

import os
from typing import Any, ClassVar, Optional

from ._http import Transport, none, quote_seg
from .agents import Agent, Agents
from .models import Key
from .relay import Relay
from .turns import Turns
from .volumes import Runtime, Volume, Volumes
from .webhooks import Webhooks


class Keys:
    """`client.keys`: mint, list and revoke API keys."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def create(self, *, org: Optional[str] = None, agent: Optional[str] = None,
               name: Optional[str] = None, expires_in: Optional[int] = None,
               read_only: Optional[bool] = None) -> Key:
        """A new key (its secret, `key`, is in this answer only)."""
        body = {k: v for k, v in (("org", org), ("agent", agent), ("name", name),
                                  ("expiresIn", expires_in), ("readOnly", read_only))
                if v is not None}
        return self._t.call("POST", "/v1/keys", Key, json=body, retry=False)

    def list(self) -> list[Key]:
        return self._t.call("GET", "/v1/keys", lambda r: [Key(k) for k in r.get("keys", [])])

    def revoke(self, key_id: str) -> None:
        return self._t.call("DELETE", "/v1/keys/" + quote_seg(key_id), none)


class Client:
    """A client of one cofferd.

    `url` defaults to $COFFER_URL (else http://127.0.0.1:7700) and `key` to $COFFER_KEY.
    `timeout`: seconds to wait for any byte of an answer (long-polls and calls add their
    own wait); `stream_timeout`: the same for event streams (cofferd sends a keep-alive
    every 15 s). `retries`/`backoff`/`max_backoff`: 429, 503 and broken connections are
    tried again up to `retries` times, waiting backoff, 2x backoff, ... (with jitter, at
    most max_backoff, or the server's Retry-After). Thread-safe.
    """

    _transport: ClassVar[type[Transport]] = Transport

    def __init__(self, url: Optional[str] = None, key: Optional[str] = None, *,
                 timeout: float = 30.0, stream_timeout: float = 60.0, retries: int = 4,
                 backoff: float = 0.25, max_backoff: float = 8.0) -> None:
        url = url or os.environ.get("COFFER_URL") or "http://127.0.0.1:7700"
        key = key or os.environ.get("COFFER_KEY")
        if not key:
            raise ValueError("no API key: pass key= or set COFFER_KEY")
        self._t = self._transport(url, key, timeout=timeout, stream_timeout=stream_timeout,
                                  retries=retries, backoff=backoff, max_backoff=max_backoff)
        self.url = self._t.url
        self.volumes = Volumes(self._t)
        self.agents = Agents(self._t)
        self.turns = Turns(self._t)
        self.relay = Relay(self._t)
        self.keys = Keys(self._t)
        #: the organization's webhooks and their deliveries (verify_webhook checks one)
        self.webhooks = Webhooks(self._t)
        #: the volumes under seed 001's names: create_volume, volume(id), volumes(ids)
        self.runtime: Runtime = self.agents.runtime

    def upsert(self, agent_id: str, **settings: Any) -> Agent:
        """`agents.upsert`: creates or updates an agent, and returns it (seed 001's
        `agents.upsert("support", mounts=[...])`)."""
        return self.agents.upsert(agent_id, **settings)

    def volume(self, volume_id: str) -> Volume:
        """A handle on a volume by id (no request)."""
        return Volume(self._t, volume_id)

    def agent(self, agent_id: str, *, user: Optional[str] = None) -> Agent:
        """A handle on an agent by id (no request); acting for subject `user` when given
        (`Agent.for_user`)."""
        return self.agents(agent_id, user=user)

    def health(self) -> bool:
        return self._t.call("GET", "/v1/health", lambda r: bool(r.get("ok")))

    def request(self, method: str, path: str, **kw: Any) -> Any:
        """Any call of the API by its path (`/v1/...`), for what has no method yet:
        `json=`, `body=`, `query=`, `headers=`, `stream=`; answers a Response."""
        return self._t.request(method, path, **kw)

    def close(self) -> None:
        return self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


#: seed 001's name for the client
Coffer = Client
