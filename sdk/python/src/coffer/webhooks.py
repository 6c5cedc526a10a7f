"""Webhooks: the organization's events posted to URLs (API.md "Webhooks"), and the check
a receiver makes of a delivery, `verify_webhook` (Standard Webhooks signatures, checked
here without a dependency)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from typing import Any, Mapping, Optional, Sequence, Union

from ._http import Transport, need_str, none, quote_seg
from .models import Record, Webhook, WebhookDeliveries


def _strs(where: str, arg: str, v: Any) -> list[str]:
    if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or not all(
            isinstance(s, str) and s for s in v):
        raise TypeError("%s: %s must be a list of str, not %s" % (where, arg, type(v).__name__))
    return list(v)


class Webhooks:
    """`client.webhooks`: the organization's webhooks and their deliveries."""

    def __init__(self, t: Transport) -> None:
        self._t = t

    def create(self, url: str, events: Sequence[str], *,
               volumes: Optional[Sequence[str]] = None, agents: Optional[Sequence[str]] = None,
               description: Optional[str] = None) -> Webhook:
        """Registers a webhook; its `secret` (whsec_...) is in this answer only: keep it to
        verify the deliveries (`verify_webhook`)."""
        w = "webhooks.create"
        body: dict[str, Any] = {"url": need_str(w, "url", url),
                                "events": _strs(w, "events", events)}
        if volumes is not None:
            body["volumes"] = _strs(w, "volumes", volumes)
        if agents is not None:
            body["agents"] = _strs(w, "agents", agents)
        if description is not None:
            body["description"] = need_str(w, "description", description)
        return self._t.call("POST", "/v1/webhooks", Webhook, json=body, retry=False)

    def list(self) -> list[Webhook]:
        """Every webhook of the organization, by id (never a secret)."""
        return self._t.call("GET", "/v1/webhooks",
                            lambda r: [Webhook(h) for h in r.get("webhooks", [])])

    def get(self, webhook_id: str) -> Webhook:
        return self._t.call("GET", "/v1/webhooks/" + quote_seg(webhook_id), Webhook)

    def update(self, webhook_id: str, *, url: Optional[str] = None,
               events: Optional[Sequence[str]] = None,
               disabled: Optional[bool] = None) -> Webhook:
        """Changes the URL, the events, or turns it off (`disabled=True`)."""
        w = "webhooks.update"
        body: dict[str, Any] = {}
        if url is not None:
            body["url"] = need_str(w, "url", url)
        if events is not None:
            body["events"] = _strs(w, "events", events)
        if disabled is not None:
            if not isinstance(disabled, bool):
                raise TypeError("%s: disabled must be a bool, not %s" % (w, type(disabled).__name__))
            body["disabled"] = disabled
        return self._t.call("PATCH", "/v1/webhooks/" + quote_seg(webhook_id), Webhook,
                            json=body, retry=True)

    def delete(self, webhook_id: str) -> None:
        """Deletes a webhook and its deliveries."""
        return self._t.call("DELETE", "/v1/webhooks/" + quote_seg(webhook_id), none)

    def deliveries(self, webhook_id: str, *, cursor: Optional[str] = None) -> WebhookDeliveries:
        """One page of a webhook's deliveries, newest first (`cursor` while more remain)."""
        return self._t.call("GET", "/v1/webhooks/%s/deliveries" % quote_seg(webhook_id),
                            WebhookDeliveries, query={"cursor": cursor})

    def redeliver(self, webhook_id: str, delivery_id: str) -> Record:
        """Sends a delivery again now, with the same webhook-id: `{id, status}`."""
        return self._t.call("POST", "/v1/webhooks/%s/deliveries/%s/redeliver" % (
            quote_seg(webhook_id), quote_seg(delivery_id)), Record, retry=True)


class WebhookVerificationError(ValueError):
    """A delivery that is not what the secret signed, or too old or too new."""


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    v = headers.get(name)
    if v is not None:
        return v
    for k, v in headers.items():
        if k.lower() == name:
            return v
    return None


def verify_webhook(secret: str, headers: Mapping[str, str], body: Union[bytes, str], *,
                   tolerance_seconds: int = 300, now: Optional[float] = None) -> Any:
    """Verifies a delivery as the Standard Webhooks specification says and returns its
    event (`{id, type, createdAt, data}`, parsed): `webhook-signature` holds one or more
    space-separated `v1,BASE64` signatures, one of which must be HMAC-SHA256 of
    `{webhook-id}.{webhook-timestamp}.{body}` under the secret (`whsec_` + base64 of the
    key), compared in constant time; the timestamp must be within `tolerance_seconds` of
    `now` (default: the clock) either way, so a replay is refused. `body` is the raw body
    as received. Raises WebhookVerificationError naming what failed."""
    w = "verify_webhook"
    need_str(w, "secret", secret)
    if not isinstance(body, (bytes, bytearray, str)):
        raise TypeError("%s: body must be the raw body, bytes or str, not %s" % (
            w, type(body).__name__))
    if not hasattr(headers, "get") or not hasattr(headers, "items"):
        raise TypeError("%s: headers must be a mapping, not %s" % (w, type(headers).__name__))
    try:
        key = base64.b64decode(secret[6:] if secret.startswith("whsec_") else secret,
                               validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        raise ValueError("%s: secret is not whsec_ followed by base64" % w)
    msg_id = _header(headers, "webhook-id")
    ts = _header(headers, "webhook-timestamp")
    sigs = _header(headers, "webhook-signature")
    if not msg_id or not ts or not sigs:
        raise WebhookVerificationError("missing header: webhook-id, webhook-timestamp and "
                                       "webhook-signature are needed")
    if not re.fullmatch(r"\d{1,15}", ts):
        raise WebhookVerificationError("webhook-timestamp %r is not Unix seconds" % ts[:20])
    at = int(time.time() if now is None else now)
    if abs(at - int(ts)) > tolerance_seconds:
        raise WebhookVerificationError("webhook-timestamp %s is more than %d s from now (%d)"
                                       % (ts, tolerance_seconds, at))
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    want = hmac.new(key, ("%s.%s." % (msg_id, ts)).encode("utf-8") + raw,
                    hashlib.sha256).digest()
    ok = False
    for s in sigs.split(" "):
        version, _, sig = s.partition(",")
        if version != "v1":
            continue
        try:
            got = base64.b64decode(sig, validate=True)
        except (binascii.Error, ValueError):
            continue
        # every candidate compared in full: the time taken says nothing of which matched
        ok = hmac.compare_digest(got, want) or ok
    if not ok:
        raise WebhookVerificationError("no v1 signature in webhook-signature matches the body "
                                       "under this secret")
    try:
        return json.loads(raw)
    except ValueError:
        raise WebhookVerificationError("the signed body is not JSON") from None
