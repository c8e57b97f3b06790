#!/usr/bin/env python3
"""A Wallet X-Ray client, as an integrator's backend would write one (Python 3, standard
library only, but for ``verify``). It analyzes one wallet, or scans one transaction before it is signed
(``scan``), and prints a JSON summary.

Analyzing a wallet, it:

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

Scanning (``scan``, a key with ``transaction:scan``): it posts the unsigned transaction's
base64 (``-``: read it from stdin) to ``POST /v1/developer/intelligence/transaction`` and prints
the verdict (``benign``, ``warning`` or ``malicious``), the findings, the effects on the signer
and the simulation's outcome. The answer is synchronous; each ``200`` costs one quota unit, a
refusal nothing, so a ``429`` or ``503`` is retried after ``Retry-After`` (a lost answer is not:
the scan may have been charged). ``--signer`` scans for another signer than the fee payer.

  xray ledger demo-tx drain | python3 examples/client.py --api http://127.0.0.1:8080 \\
      --key svc_live_... scan -

Verifying a signed report (``verify``): every READY analysis and comparison (and every scan)
carries ``data.signature`` (``keyId``, ``alg`` EdDSA, ``canon`` JCS, ``covers``, ``value``), an
Ed25519 signature over the RFC 8785 canonical JSON of the members of ``data`` that ``covers``
names. ``verify`` reads a saved report (a poll's or webhook's body, or its ``data``), takes the
key set from ``--keys FILE`` or fetches ``<api>/.well-known/xray-keys.json`` (no API key), and
prints ``{"verified": true|false, "keyId": …}`` (exit 1 when not verified). It needs the
``cryptography`` and ``rfc8785`` packages (``pip install -r tests/signing/requirements.txt``);
the other commands use the standard library only.

  python3 examples/client.py --api http://127.0.0.1:8080 verify report.json

A test (``tests/integration/api/webhooks.rs``) runs it against the real server, and
``loadtest/flows.sh`` (in ``make test``) its scan, so it cannot rot. Every wait is bounded
(``--timeout-s``).
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


def verify_report(data, key_set):
    """The ``keyId`` that signed ``data`` (a report's ``data`` object) when its signature
    verifies with a key of ``key_set`` (a JWK set, current or retired keys), else ``None``."""
    import base64

    import rfc8785
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    def b64url(text):
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

    signature = data.get("signature") or {}
    if signature.get("alg") != "EdDSA" or signature.get("canon") != "JCS":
        return None
    covers = signature.get("covers") or []
    if "signature" in covers or any(name not in data for name in covers):
        return None
    jwk = next((k for k in key_set.get("keys", []) if k.get("kid") == signature.get("keyId")), None)
    if jwk is None or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        return None
    message = rfc8785.dumps({name: data[name] for name in covers})
    try:
        Ed25519PublicKey.from_public_bytes(b64url(jwk["x"])).verify(b64url(signature["value"]), message)
    except (InvalidSignature, ValueError):
        return None
    return signature["keyId"]


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

    def scan(self, transaction, deadline, signer=None):
        """Scans a transaction (base64) before it is signed: the answer's ``data``."""
        url = f"{self.base}/v1/developer/intelligence/transaction"
        body = {"transaction": transaction}
        if signer:
            body["signer"] = signer
        for attempt in range(RETRIES_MAX + 1):
            status, answer_headers, answer = self.call("POST", url, body)
            if status == 200:
                return answer["data"]
            # A refusal is charged nothing, so a momentary one is safe to send again (an
            # exhausted quota is not momentary: QUOTA_EXHAUSTED is not retried).
            code = ((answer or {}).get("error") or {}).get("code")
            wait_s = int(answer_headers.get("Retry-After", "1"))
            retryable = code in ("RATE_LIMITED", "SERVICE_BUSY") and time.monotonic() + wait_s < deadline
            if not retryable or attempt == RETRIES_MAX:
                raise SystemExit(f"scan refused: {status} {answer}")
            time.sleep(wait_s)
        raise SystemExit("scan: retries exhausted")

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


def scan_summary(data):
    """What a wallet shows its user before signing: the verdict, why, and what would change."""
    return {
        "verdict": data["verdict"],
        "signer": data["signer"],
        "findings": [
            {"severity": f["severity"], "kind": f["kind"], "title": f["title"], "instruction": f.get("instruction")}
            for f in data["findings"]
        ],
        "effects": data["effects"],
        "simulation": data["simulation"]["status"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", help="service root, e.g. http://127.0.0.1:8080")
    parser.add_argument("--key")
    parser.add_argument("--wallet", help="the wallet to analyze (without a command)")
    parser.add_argument("--webhook-secret", help="the account's webhook secret: receive and verify the webhook")
    parser.add_argument("--receiver-host", default="127.0.0.1")
    parser.add_argument("--timeout-s", type=int, default=60)
    commands = parser.add_subparsers(dest="command")
    scan = commands.add_parser("scan", help="scan an unsigned transaction before signing it")
    scan.add_argument("transaction", help="the serialized transaction, base64 (- reads it from stdin)")
    scan.add_argument("--signer", help="the signer to scan for (default: the fee payer)")
    verify = commands.add_parser("verify", help="verify a saved report's signature")
    verify.add_argument("report", help="a report's JSON file (a poll's or webhook's body, or its data)")
    verify.add_argument("--keys", help="the key set's JSON file (default: fetched from --api)")
    args = parser.parse_args()
    if args.command == "verify":
        with open(args.report, encoding="utf-8") as f:
            report = json.load(f)
        data = report.get("data", report)
        if args.keys:
            with open(args.keys, encoding="utf-8") as f:
                key_set = json.load(f)
        elif args.api:
            url = args.api.rstrip("/") + "/.well-known/xray-keys.json"
            with urllib.request.urlopen(url, timeout=15) as answer:
                key_set = json.load(answer)
        else:
            parser.error("verify needs --keys FILE or --api URL")
        key_id = verify_report(data, key_set)
        json.dump({"verified": key_id is not None, "keyId": key_id}, sys.stdout)
        print()
        sys.exit(0 if key_id else 1)
    if not args.api or not args.key:
        parser.error("--api and --key are required")
    deadline = time.monotonic() + args.timeout_s
    api = Api(args.api, args.key, timeout_s=15)
    if args.command == "scan":
        transaction = sys.stdin.read().strip() if args.transaction == "-" else args.transaction
        json.dump(scan_summary(api.scan(transaction, deadline, args.signer)), sys.stdout)
        print()
        return
    if not args.wallet:
        parser.error("--wallet is required (or the scan command)")

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
