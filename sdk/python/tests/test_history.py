"""Merge, history, who changed what, revert and webhooks through the SDK against a real
cofferd (API.md "Merge, history, who changed what, revert", "Webhooks"): the conflict
error, the feed's `by` filters, and verify_webhook against the Standard Webhooks test
vector and a real delivery (test_sdk_python.py starts cofferd with
--webhook-allow-private). Runs on Coffer and on AsyncCoffer."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import threading
import time
import unittest
from typing import Any

import coffer
from support import SCALE, client, name


def lines(n: int, tag: str) -> str:
    return "".join("%s %d\n" % (tag, i) for i in range(n))


def edit(t: str, i: int, s: str) -> str:
    ls = t.split("\n")
    ls[i] = s
    return "\n".join(ls)


def until(cond: Any, what: str, timeout: float = 15) -> Any:
    end = time.time() + timeout * SCALE
    while True:
        v = cond()
        if v:
            return v
        if time.time() > end:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


class MergeHistoryRevert(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()

    def tearDown(self) -> None:
        self.c.close()

    def pair(self, files: dict[str, str]) -> tuple[Any, Any]:
        ours = self.c.volumes.create(name("ours"))
        for p, d in files.items():
            ours.write(p, d)
        return ours, ours.fork(name=name("theirs"))

    def test_merge_clean_dry_run_conflict_and_resolution(self) -> None:
        base = lines(10, "line")
        ours, theirs = self.pair({"t.txt": base, "c.txt": base})
        theirs.write("new.txt", "from theirs")
        theirs.write("t.txt", edit(base, 8, "theirs edit"))
        ours.write("t.txt", edit(base, 1, "ours edit"))
        seq = ours.refresh().seq
        dry = ours.merge(theirs.id, dry_run=True)
        self.assertEqual((dry.seq, dry.conflicts), (seq, []))
        r = ours.merge(theirs.id, if_seq=seq)
        self.assertEqual(r.seq, seq + 1)
        self.assertEqual({m["path"]: m["from"] for m in r.merged},
                         {"new.txt": "theirs", "t.txt": "merged"})
        self.assertEqual(ours.read("t.txt").text,
                         edit(edit(base, 1, "ours edit"), 8, "theirs edit"))
        with self.assertRaises(coffer.PreconditionFailed):
            ours.merge(theirs.id, if_seq=seq)
        ours.write("c.txt", edit(base, 3, "ours three"))
        theirs.write("c.txt", edit(base, 3, "theirs three"))
        before = ours.refresh().seq
        with self.assertRaises(coffer.MergeConflict) as cm:
            ours.merge(theirs.id)
        e = cm.exception
        self.assertIsInstance(e, coffer.Conflict)
        self.assertEqual(e.status, 409)
        self.assertEqual([(x["path"], x["kind"]) for x in e.conflicts], [("c.txt", "content")])
        self.assertIn("<<<<<<< ours", e.conflicts[0]["merged"])
        self.assertEqual(ours.refresh().seq, before, "nothing changed")
        done = ours.merge(theirs.id, resolutions={"c.txt": {"text": "settled\n"}})
        self.assertEqual([dict(m) for m in done.merged], [{"path": "c.txt", "from": "merged"}])
        self.assertEqual(ours.read("c.txt").text, "settled\n")

    def test_merge_strategy_bytes_resolution_and_argument_checks(self) -> None:
        ours, theirs = self.pair({"a.bin": "base", "b.bin": "base"})
        for p in ("a.bin", "b.bin"):
            ours.write(p, "ours")
            theirs.write(p, "theirs")
        r = ours.merge(theirs.id, strategy="theirs", resolutions={"b.bin": b"\x00given"})
        self.assertEqual(sorted((m["path"], m["from"]) for m in r.merged),
                         [("a.bin", "theirs"), ("b.bin", "merged")])
        self.assertEqual(ours.read("b.bin").data, b"\x00given")
        with self.assertRaisesRegex(ValueError, "strategy must be 'ours' or 'theirs'"):
            ours.merge(theirs.id, strategy="mine")
        with self.assertRaisesRegex(ValueError, r"resolutions\['a.bin'\] must be"):
            ours.merge(theirs.id, resolutions={"a.bin": "keep"})

    def test_history_pages_iterator_and_by(self) -> None:
        v = self.c.volumes.create(name("hist"))
        for i in range(1, 6):
            v.write("h.txt", "v%d" % i)
        v.write("other.txt", "x")
        v.remove("h.txt")
        p1 = v.history("h.txt", limit=2)
        self.assertEqual([(x.op, x.version) for x in p1.versions], [("remove", 5), ("write", 5)])
        self.assertTrue(p1.cursor)
        p2 = v.history("h.txt", limit=2, cursor=p1.cursor)
        self.assertEqual([x.version for x in p2.versions], [4, 3])
        every = list(v.iter_history("h.txt", limit=2))
        self.assertEqual([x.version for x in every], [5, 5, 4, 3, 2, 1])
        self.assertEqual([x.seq for x in every], [7, 5, 4, 3, 2, 1])
        self.assertEqual(every[0].by.via, "http")
        self.assertTrue(every[0].by.key_id.startswith("k"))
        self.assertEqual(v.history("never.txt").versions, [])

    def test_changes_by_and_filters(self) -> None:
        v = self.c.volumes.create(name("who"))
        v.write("a.txt", "1")
        v.write("b.txt", "2")
        page = v.changes(0)
        by = page.changes[0].by
        self.assertIsInstance(by, coffer.ChangeBy)
        self.assertEqual(by.to_dict(), {"keyId": by.key_id, "via": "http"})
        self.assertIsNone(by.run_id)
        self.assertIsInstance(page.changes[0].at, str)
        self.assertEqual([x.path for x in v.changes(0, key_id=by.key_id).changes],
                         ["a.txt", "b.txt"])
        for q in ({"key_id": "k_nobody"}, {"agent": "nobody"}, {"run_id": "run-x"},
                  {"call_id": "call-x"}):
            none = v.changes(0, **q)
            self.assertEqual((none.changes, none.seq), ([], 2), q)
        it = iter(v.follow(0, key_id=by.key_id, wait=1))
        self.assertEqual(next(it).path, "a.txt")
        with self.assertRaisesRegex(TypeError, "volume.changes: agent must be a non-empty str"):
            v.changes(0, agent=7)

    def test_a_runs_changes_filtered_and_reverted(self) -> None:
        v = self.c.volumes.create(name("run"))
        v.write("keep.txt", "mine")
        ag = self.c.agents.upsert(name("ag"), mounts=[
            {"volumeId": v.id, "path": "/notes", "mode": "rw"}])
        run = name("run")
        w = ag.tools.write("/notes/by-run.txt", "the run wrote this\n", run_id=run)
        self.assertTrue(w.ok, w.output)
        page = v.changes(0, run_id=run)
        self.assertEqual([x.path for x in page.changes], ["by-run.txt"])
        by = page.changes[0].by
        self.assertEqual((by.via, by.agent, by.run_id, by.tool), ("tool", ag.id, run, "write"))
        self.assertEqual([x.path for x in v.changes(0, agent=ag.id, run_id=run).changes],
                         ["by-run.txt"])
        self.assertEqual(v.changes(0, agent=ag.id, run_id="other").changes, [])
        r = v.revert(run_id=run)
        self.assertEqual([dict(x) for x in r.reverted], [{"path": "by-run.txt", "from": "before"}])
        self.assertEqual([f.path for f in v.list().files], ["keep.txt"])
        ag.delete()

    def test_revert_seq_conflict_and_exactly_one_target(self) -> None:
        v = self.c.volumes.create(name("rev"))
        v.write("a.txt", "one\n")
        v.write("a.txt", "two\n")
        s = v.refresh().seq
        dry = v.revert(seq=s, dry_run=True)
        self.assertEqual(dry.seq, s)
        self.assertEqual([dict(x) for x in dry.reverted], [{"path": "a.txt", "from": "before"}])
        r = v.revert(seq=s)
        self.assertEqual(r.seq, s + 1)
        self.assertEqual(v.read("a.txt").text, "one\n")
        self.assertEqual(v.changes(s).changes[-1].by.via, "revert")
        v.write("b.txt", "b1")
        sb = v.refresh().seq
        v.write("b.txt", "b2")
        v.write("b.txt", "b3")
        with self.assertRaises(coffer.MergeConflict) as cm:
            v.revert(seq=sb + 1)
        self.assertEqual([x["path"] for x in cm.exception.conflicts], ["b.txt"])
        ok = v.revert(seq=sb + 1, resolutions={"b.txt": "theirs"})
        self.assertEqual([x["path"] for x in ok.reverted], ["b.txt"])
        self.assertEqual(v.read("b.txt").text, "b1")
        with self.assertRaisesRegex(ValueError, r"give exactly one of run_id, call_id, seq \(got run_id, seq\)"):
            v.revert(run_id="r1", seq=3)
        with self.assertRaisesRegex(ValueError, "give exactly one of run_id, call_id, seq$"):
            v.revert(paths=["a.txt"])
        with self.assertRaisesRegex(TypeError, "volume.revert: seq must be an int"):
            v.revert(seq="3")


# The Standard Webhooks specification's test vector.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TS = 1614265330
BODY = b'{"test": 2432232314}'
SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def vheaders(sig: str = SIG) -> dict[str, str]:
    return {"webhook-id": MSG_ID, "webhook-timestamp": str(TS), "webhook-signature": sig}


class VerifyWebhook(unittest.TestCase):
    def test_the_specification_test_vector(self) -> None:
        self.assertEqual(coffer.verify_webhook(SECRET, vheaders(), BODY, now=TS),
                         {"test": 2432232314})
        self.assertEqual(coffer.verify_webhook(SECRET, vheaders(), BODY.decode(), now=TS),
                         {"test": 2432232314})
        several = "v1,%s v2,abc %s" % (base64.b64encode(bytes(32)).decode(), SIG)
        mixed = {"Webhook-Id": MSG_ID, "WEBHOOK-TIMESTAMP": str(TS), "webhook-signature": several}
        self.assertEqual(coffer.verify_webhook(SECRET, mixed, BODY, now=TS)["test"], 2432232314)

    def test_what_it_refuses(self) -> None:
        E = coffer.WebhookVerificationError
        with self.assertRaisesRegex(E, "no v1 signature"):
            coffer.verify_webhook(SECRET, vheaders(), b'{"test": 2432232315}', now=TS)
        other = "whsec_" + base64.b64encode(b"another key").decode()
        with self.assertRaisesRegex(E, "no v1 signature"):
            coffer.verify_webhook(other, vheaders(), BODY, now=TS)
        with self.assertRaisesRegex(E, "no v1 signature"):
            coffer.verify_webhook(SECRET, vheaders("v2," + SIG[3:]), BODY, now=TS)
        with self.assertRaisesRegex(E, "missing header"):
            coffer.verify_webhook(SECRET, {"webhook-id": MSG_ID}, BODY, now=TS)
        # the tolerance, either way, at its edge
        coffer.verify_webhook(SECRET, vheaders(), BODY, now=TS + 300)
        coffer.verify_webhook(SECRET, vheaders(), BODY, now=TS - 300)
        for at in (TS + 301, TS - 301):
            with self.assertRaisesRegex(E, "more than 300 s"):
                coffer.verify_webhook(SECRET, vheaders(), BODY, now=at)
        coffer.verify_webhook(SECRET, vheaders(), BODY, now=TS + 3600, tolerance_seconds=3600)
        with self.assertRaisesRegex(E, "more than 300 s"):
            coffer.verify_webhook(SECRET, vheaders(), BODY)
        self.assertTrue(issubclass(E, ValueError))


class Receiver:
    """An HTTP server on 127.0.0.1 recording each POST's headers and raw body."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                rec.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/hook" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class WebhookCalls(unittest.TestCase):
    def test_crud_real_delivery_deliveries_redeliver(self) -> None:
        admin = client()
        key = admin.keys.create(org=name("org")).key
        admin.close()
        c = client(key=key)
        rec = Receiver()
        try:
            v = c.volumes.create(name("wh"))
            h = c.webhooks.create(rec.url, ["snapshot.created"], volumes=[v.id],
                                  description="sdk")
            self.assertTrue(h.id.startswith("wh_"))
            self.assertTrue(h.secret.startswith("whsec_"))
            self.assertEqual((h.events, h.volumes, h.description, h.disabled),
                             (["snapshot.created"], [v.id], "sdk", False))
            self.assertEqual([(x.id, x.secret) for x in c.webhooks.list()], [(h.id, None)])
            self.assertEqual(c.webhooks.get(h.id).url, rec.url)

            snap = v.snapshot(labels={"k": "v"})
            until(lambda: rec.got, "the delivery")
            hdrs, body = rec.got[0]
            ev = coffer.verify_webhook(h.secret, hdrs, body)
            self.assertEqual((ev["type"], ev["id"]), ("snapshot.created", hdrs["webhook-id"]))
            self.assertEqual((ev["data"]["volumeId"], ev["data"]["snapshot"]["id"]),
                             (v.id, snap.id))
            with self.assertRaises(coffer.WebhookVerificationError):
                coffer.verify_webhook(h.secret, hdrs, body + b" ")
            # the specification's signature, computed here
            mac = hmac.new(base64.b64decode(h.secret[6:]), ("%s.%s." % (
                hdrs["webhook-id"], hdrs["webhook-timestamp"])).encode() + body,
                hashlib.sha256).digest()
            self.assertIn("v1," + base64.b64encode(mac).decode(),
                          hdrs["webhook-signature"].split(" "))

            page = until(lambda: (lambda p: p.deliveries and
                                  p.deliveries[0].status == "delivered" and p)(
                c.webhooks.deliveries(h.id)), "the delivery marked delivered")
            self.assertEqual((page.deliveries[0].id, page.deliveries[0].event),
                             (ev["id"], "snapshot.created"))
            again = c.webhooks.redeliver(h.id, ev["id"])
            self.assertEqual(again.to_dict(), {"id": ev["id"], "status": "pending"})
            until(lambda: len(rec.got) >= 2, "the redelivery")
            self.assertEqual(rec.got[1][0]["webhook-id"], ev["id"])
            self.assertEqual(coffer.verify_webhook(h.secret, *rec.got[1])["id"], ev["id"])

            off = c.webhooks.update(h.id, disabled=True, events=["snapshot.created", "turn.ended"])
            self.assertEqual((off.disabled, off.events), (True, ["snapshot.created", "turn.ended"]))
            c.webhooks.delete(h.id)
            self.assertEqual(c.webhooks.list(), [])
        finally:
            rec.close()
            c.close()


if __name__ == "__main__":
    unittest.main()
