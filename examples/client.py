#!/usr/bin/env python3
"""A Wallet X-Ray client, as an integrator's backend would write one (Python 3, standard
library only). It analyzes one wallet and prints a JSON summary:

- submits with an ``Idempotency-Key``, so every retry of the same submit is safe: a timeout, a
  connection reset, ``429`` or ``503`` is retried with the same key after ``Retry-After``, and
  the server answers a retry of an admitted submit with its first answer
  (``Idempotent-Replayed: true``) instead of a second, charged job;
- honours the ``RateLimit`` header: when the key's bucket is empty (``"rate";r=0;t=<s>``) it
  waits before its next request instead of collecting a 429;
- long-polls ``pollUrl`` with ``wait`` until READY or FAILED;
- with ``--webhook-secret``, runs a receiver on ``--receiver-host`` (an ephemeral port), names
  it as the ``callbackUrl`` and verifies the delivery's ``Xray-Signature`` (HMAC-SHA256 of
  ``<t>.<body>``, constant-time compare, at most 5 minutes old) before trusting it.

  python3 examples/client.py --api http://127.0.0.1:8080 --key svc_live_... \\
      --wallet 958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ [--webhook-secret whsec_...]

A test (``tests/integration/api/webhooks.rs``) runs it against the real server, so it cannot
rot. Every wait is bounded (``--timeout-s``).
"""

import argparse
import hashlib
import hmac
import http.server
import json
import queue
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

SIGNATURE_TOLERANCE_S = 300
RETRIES_MAX = 5


def verify_signature(secret, header, body, now_s=None):
    """True when ``header`` (``t=<unix>,v1=<hex>``) signs ``body`` with ``secret``, recently."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    if "t" not in parts or "v1" not in parts:
        return False
    now_s = time.time() if now_s is None else now_s
    if abs(now_s - int(parts["t"])) > SIGNATURE_TOLERANCE_S:
        return False
    expected = hmac.new(secret.encode(), parts["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"])


def rate_wait_s(headers):
    """Seconds to wait before the next request: the RateLimit header's ``t`` when ``r`` is 0."""
    value = headers.get("RateLimit", "")
    for item in value.split(","):
        fields = dict(f.split("=", 1) for f in item.strip().split(";")[1:] if "=" in f)
        if item.strip().startswith('"rate"') and fields.get("r") == "0":
            return int(fields.get("t", "1"))
    return 0


class Api:
    def __init__(self, base, key, timeout_s):
        self.base, self.key, self.timeout_s = base.rstrip("/"), key, timeout_s
        self.pause_s = 0

    def call(self, method, url, body=None, headers=None):
        """One request: (status, headers, JSON body). Honours the last RateLimit header."""
        if self.pause_s:
            time.sleep(self.pause_s)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                status, answer_headers, raw = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, answer_headers, raw = error.code, error.headers, error.read()
        self.pause_s = rate_wait_s(answer_headers)
        return status, answer_headers, json.loads(raw) if raw else None

    def submit(self, body, idempotency_key):
        """POSTs the analysis; retries (same key) after Retry-After on 429/503 and on a lost answer."""
        url = f"{self.base}/v1/developer/intelligence/wallet"
        headers = {"Idempotency-Key": idempotency_key}
        for attempt in range(RETRIES_MAX + 1):
            try:
                status, answer_headers, answer = self.call("POST", url, body, headers)
            except (urllib.error.URLError, TimeoutError, ConnectionError):
                status, answer_headers, answer = None, {}, None
            if status in (200, 202):
                return status, answer_headers, answer
            code = ((answer or {}).get("error") or {}).get("code")
            # 409 IDEMPOTENCY_KEY_IN_PROGRESS: the first submit is still being admitted.
            retryable = status in (None, 429, 503) or code == "IDEMPOTENCY_KEY_IN_PROGRESS"
            if not retryable or attempt == RETRIES_MAX:
                raise SystemExit(f"submit refused: {status} {answer}")
            time.sleep(int((answer_headers or {}).get("Retry-After", "1")))
        raise SystemExit("submit: retries exhausted")

    def wait_finished(self, poll_url, deadline):
        while time.monotonic() < deadline:
            status, _, answer = self.call("GET", f"{poll_url}?wait=10")
            if status != 200:
                raise SystemExit(f"poll: {status} {answer}")
            if answer["data"]["status"] in ("READY", "FAILED"):
                return answer["data"]
        raise SystemExit("poll: not finished in time")


def start_receiver(host, secret):
    """A webhook receiver on an ephemeral port; verified deliveries go to the returned queue."""
    deliveries = queue.Queue()

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            ok = verify_signature(secret, self.headers.get("Xray-Signature", ""), body)
            self.send_response(204 if ok else 400)
            self.end_headers()
            if ok:
                deliveries.put({"id": self.headers.get("Xray-Webhook-Id"), "document": json.loads(body)})

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer((host, 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, deliveries


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", required=True, help="service root, e.g. http://127.0.0.1:8080")
    parser.add_argument("--key", required=True)
    parser.add_argument("--wallet", required=True)
    parser.add_argument("--webhook-secret", help="the account's webhook secret: receive and verify the webhook")
    parser.add_argument("--receiver-host", default="127.0.0.1")
    parser.add_argument("--timeout-s", type=int, default=60)
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout_s
    api = Api(args.api, args.key, timeout_s=15)

    body = {"wallet": args.wallet, "refresh": True}
    receiver = None
    if args.webhook_secret:
        receiver, deliveries = start_receiver(args.receiver_host, args.webhook_secret)
        body["callbackUrl"] = f"http://{args.receiver_host}:{receiver.server_port}/hooks/xray"
    idempotency_key = f"client-example-{uuid.uuid4()}"
    status, _, accepted = api.submit(body, idempotency_key)
    # As after a lost answer: the same submit again is the first answer, not a second job.
    again_status, again_headers, again = api.submit(body, idempotency_key)
    replayed = again_headers.get("Idempotent-Replayed") == "true" and again == accepted and again_status == status
    data = api.wait_finished(accepted["pollUrl"], deadline)
    summary = {
        "analysisId": data["analysisId"],
        "status": data["status"],
        "score": (data.get("xray") or {}).get("score", {}).get("value"),
        "idempotentReplay": replayed,
    }
    if receiver is not None:
        try:
            delivered = deliveries.get(timeout=max(1, deadline - time.monotonic()))
        except queue.Empty:
            raise SystemExit("no verified webhook in time")
        summary["webhook"] = {
            "verified": True,
            "id": delivered["id"],
            "sameDocument": delivered["document"]["data"]["analysisId"] == data["analysisId"],
        }
        receiver.shutdown()
    json.dump(summary, sys.stdout)
    print()


if __name__ == "__main__":
    main()
