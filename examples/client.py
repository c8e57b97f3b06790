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
Given several transactions (up to five, in the order they would run; ``-`` reads one base64 a
line) or ``--mode sequence|bundle``, it scans them as a sequence (``transactions``): run in order
on one state, each judged in its place and the whole on the signer's cumulative effects, one
quota unit per transaction; it prints the verdict, the whole's findings and effects, what
applied, and each transaction's verdict and simulation. ``--signer`` must then sign every one.

  xray ledger demo-tx drain | python3 examples/client.py --api http://127.0.0.1:8080 \\
      --key svc_live_... scan -
  python3 examples/client.py --api http://127.0.0.1:8080 --key svc_live_... scan --mode bundle \\
      "$(xray ledger demo-tx approve)" "$(xray ledger demo-tx drain)"

Verifying a signed report (``verify``): every READY analysis and comparison (and every scan)
carries ``data.signature`` (a monitor's event carries ``signature`` in the event object) (``keyId``, ``alg`` EdDSA, ``canon`` JCS, ``type``, ``covers``,
``value``), an Ed25519 signature over the RFC 8785 canonical JSON of the members of ``data``
that ``covers`` names plus a member ``"type"`` holding the signature's type. ``verify`` reads a
saved report (a poll's, webhook's or scan's body, or its ``data``) and the type you expect it to
be — ``--type analysis|comparison|scan|scan_sequence|monitor_event`` (or ``xray.analysis.v1`` …; an event: its
webhook body ``{"data": {"event": …}}``, or one event of its page), required: a report cannot
be trusted to say what it is — takes the key set from ``--keys FILE`` or fetches
``<api>/.well-known/xray-keys.json`` (no API key), and checks that ``type`` is the expected one
and ``covers`` exactly that type's members before it checks the signature. A scan has two
types: ``--type scan`` (``xray.scan.v2``) accepts either ``xray.scan.v2`` or ``xray.scan.v3`` (a
scan asked with ``guards``: its members and ``guards``), the signature's type among the two
fixing the exact covers, and never another type; ``--type xray.scan.v3`` accepts a guarded scan
only; ``--type scan_sequence`` (``xray.scan_sequence.v1``) is a sequence scan's answer, never a
scan, as a scan is never one. A scan (either type) can then be bound to the request that asked for it, each option checked
against a signed member: ``--transaction BASE64|@FILE`` (what was scanned, signed since or not:
the SHA-256 of its message — the bytes after its signatures — must be
``transaction.messageSha256``), ``--account acct_…`` (``account``: the key's account),
``--origin HOST`` (``origin``: the host the scan judged; ``--origin none`` when the scan was sent
no origin) and ``--signer ADDRESS`` (``signer``: the wallet it was asked about, base58); a
sequence scan with ``--transactions B64,B64,…|@FILE`` (one base64 a line, in the order sent)
instead of ``--transaction`` — the signed ``transactions`` must have exactly as many items, item
*i*'s ``transaction.messageSha256`` the digest of transaction *i*'s message — and ``--mode
sequence|bundle`` (``mode``: how it was asked to run them; a sequence scan's only). A scan of
any type signs all of its ``data``: one carrying a member it does not cover is refused (an
analysis, comparison or event may carry unsigned members). It prints ``{"verified": true,
"keyId": …, "type": …, "data": {…}}`` (``type``: the type it verified, the signature's), where
``data`` holds the signed members only: read those, not the file, which may carry members nobody signed;
or, refused (exit 1), ``{"verified": false, "reason": …, "detail": …, "keyId": null, …}``,
``reason`` the first of these that applies, in this order: ``malformed`` (the report or key set
is not JSON or not their shape — an unsigned report too — or the transaction given is no
transaction), ``unknown_key`` (no published key has its ``keyId``: another server's),
``wrong_type``, ``covers_mismatch`` (``covers`` edited, or a covered member gone; or a scan, of
any scan type, whose ``data`` carries a member that type does not cover — ``guards`` beside an
``xray.scan.v2`` signature, say), ``bad_signature`` (something signed changed), then a scan's
(or sequence scan's) ``digest_mismatch``, ``account_mismatch``, ``origin_mismatch``,
``signer_mismatch``, and a sequence scan's ``mode_mismatch`` (README, "Signed reports"). A
binding option with another type is a usage error (exit 2), as ``--mode`` with a scan. Integers past ±(2^53 − 1) are canonicalized as doubles,
as JCS prescribes. It needs the ``cryptography`` and ``rfc8785`` packages (``pip install -r
tests/signing/requirements.txt``); the other commands use the standard library only.

  python3 examples/client.py --api http://127.0.0.1:8080 verify --type analysis report.json
  python3 examples/client.py --api http://127.0.0.1:8080 verify --type scan scan.json \\
      --transaction @tx.b64 --account acct_... --origin none --signer <base58>
  python3 examples/client.py --api http://127.0.0.1:8080 verify --type scan_sequence sequence.json \\
      --transactions @txs.b64 --account acct_... --origin none --signer <base58> --mode sequence

A test (``tests/integration/api/webhooks.rs``) runs it against the real server, and
``loadtest/flows.sh`` (in ``make test``) its scan, so it cannot rot. Every wait is bounded
(``--timeout-s``).
"""

import argparse
import base64
import hashlib
import hmac
import http.server
import json
import queue
import re
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


# The members a signed report's signature covers, by its type, exactly (README, "Signed reports").
REPORT_COVERS = {
    "xray.analysis.v1": ("analysisId", "wallet", "completedAt", "xray"),
    "xray.comparison.v1": ("pairId", "walletA", "walletB", "completedAt", "comparison"),
    "xray.scan.v2": (
        "verdict", "signer", "account", "origin", "transaction", "findings", "effects", "instructions",
        "simulation", "counterparties", "engineVersions", "policy", "scannedAt", "requestId",
    ),
    # A scan asked with guards: a scan's members and ``guards``.
    "xray.scan.v3": (
        "verdict", "signer", "account", "origin", "transaction", "findings", "effects", "instructions",
        "simulation", "counterparties", "engineVersions", "policy", "guards", "scannedAt", "requestId",
    ),
    # A sequence scan (``transactions``): each transaction's verdict, transaction (its
    # messageSha256), findings, effects, instructions and simulation inside ``transactions``.
    "xray.scan_sequence.v1": (
        "verdict", "signer", "mode", "transactions", "findings", "effects", "applied", "counterparties",
        "engineVersions", "policy", "origin", "account", "scannedAt", "requestId",
    ),
    "xray.monitor_event.v1": ("id", "kind", "account", "monitorId", "wallet", "analysisId", "createdAt", "changes"),
}
# A scan's two types: expecting ``xray.scan.v2`` (``--type scan``) accepts either, the signature's
# type picking its covers; expecting ``xray.scan.v3`` accepts a guarded scan only.
SCAN_TYPES = ("xray.scan.v2", "xray.scan.v3")
# A sequence scan's answer: neither scan type, nor they it.
SEQUENCE_TYPE = "xray.scan_sequence.v1"
# ``verify --type`` short names.
REPORT_TYPES = {
    "analysis": "xray.analysis.v1", "comparison": "xray.comparison.v1", "scan": "xray.scan.v2",
    "scan_sequence": SEQUENCE_TYPE, "monitor_event": "xray.monitor_event.v1",
}
# What a scan's answer can be bound to (``verify_report``'s ``binding``), and a sequence scan's.
BINDING_MEMBERS = ("transaction", "account", "origin", "signer")
SEQUENCE_BINDING_MEMBERS = ("transactions", "account", "origin", "signer", "mode")
# Binding members that must be text when given.
TEXT_BINDING_MEMBERS = ("signer", "mode")
# The most transactions a sequence scan takes.
SEQUENCE_TRANSACTIONS_MAX = 5
# A batched signature (scans): the type of the envelope it signs, and the longest path read.
BATCH_TYPE = "xray.batch.v1"
BATCH_PATH_STEPS_MAX = 16
# The largest integer a double (JCS's numbers) holds exactly.
SAFE_INTEGER_MAX = 2**53 - 1


def as_jcs_numbers(value):
    """``value`` with each integer outside ±(2^53 − 1) as the double JCS reads it as
    (``rfc8785`` refuses such integers; the server signs them so)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > SAFE_INTEGER_MAX:
        return float(value)
    if isinstance(value, dict):
        return {k: as_jcs_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_jcs_numbers(v) for v in value]
    return value


# Why a verifier refuses a report: the closed list every verifier of this repository gives,
# in the order they are checked (README, "Signed reports": why a verifier refuses).
REFUSAL_REASONS = (
    "malformed", "unknown_key", "wrong_type", "covers_mismatch", "bad_signature",
    "digest_mismatch", "account_mismatch", "origin_mismatch", "signer_mismatch", "mode_mismatch",
)


class ReportRefused(Exception):
    """Why ``verify_report`` refused a report: ``reason`` is one of ``REFUSAL_REASONS`` — the
    first, in that order, that applies — and the message says what."""

    def __init__(self, reason, message):
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.detail = message


def step_of(step):
    """One step of a batch path: ``(side, sibling bytes)`` of ``{"left"|"right": 64 lowercase hex}``."""
    if not isinstance(step, dict) or len(step) != 1:
        raise ReportRefused("malformed", "a batch path step is not one side")
    ((side, digits),) = step.items()
    if side not in ("left", "right") or not isinstance(digits, str) or not re.fullmatch(r"[0-9a-f]{64}", digits):
        raise ReportRefused("malformed", "a batch path step is not left or right of 64 lowercase hex digits")
    return side, bytes.fromhex(digits)


def verify_report(data, key_set, expected_type, binding=None):
    """``(keyId, covered)`` when ``data`` (a report's ``data`` object) is signed as a report of
    ``expected_type`` (``xray.analysis.v1`` …) with a key of ``key_set`` (a JWK set, current or
    retired keys): ``covered`` holds the signed members alone. Expecting a scan
    (``xray.scan.v2``), a scan asked with guards (``xray.scan.v3``) is one too, checked against
    its own covers (``covered`` then holds ``guards``); ``signature.type`` says which. Raises ``ReportRefused``
    otherwise, checking in this order: ``malformed`` (the report, the key set or the binding is
    not the shape it has — an unsigned report too), ``unknown_key`` (no key of the set has the
    signature's ``keyId``), ``wrong_type`` (a ``type`` other than expected), ``covers_mismatch``
    (``covers`` other than exactly that type's members, or one of them missing from ``data``; or
    a scan of any scan type — ``xray.scan.v2``, ``xray.scan.v3``, ``xray.scan_sequence.v1`` —
    whose ``data`` carries a member besides those and ``signature``: ``guards`` beside an
    ``xray.scan.v2`` signature, say; an analysis, comparison or event may carry unsigned members,
    left out of ``covered``), ``bad_signature`` (something signed was changed), then the binding.

    ``binding`` (a scan's only) is a dict of what the signed answer must be about, each key
    given checked once the signature is: ``transaction`` (what was scanned, bytes or base64,
    signed since or not: ``message_sha256`` of it is ``transaction.messageSha256``, else
    ``digest_mismatch``), ``account`` (``acct_…``, else ``account_mismatch``), ``origin``
    (the host the scan judged, ``None`` for no origin, else ``origin_mismatch``) and ``signer``
    (the wallet asked about, base58 text, else ``signer_mismatch``), checked in that order. A
    sequence scan (``xray.scan_sequence.v1``, never a scan nor a scan one) is bound with
    ``transactions`` instead of ``transaction``: the list sent, in order — the signed
    ``transactions`` must have exactly as many items, item *i*'s ``transaction.messageSha256``
    the digest of transaction *i*'s message, else ``digest_mismatch`` — and may be bound to
    ``mode`` too (``sequence`` or ``bundle``, text, else ``mode_mismatch``; checked last; a
    scan's binding has no ``mode``). A ``signer`` or ``mode`` that is not text is
    ``malformed``. A scan's message digests are the only digests a report binds: an analysis or
    comparison has none."""
    import rfc8785
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    def b64url(text, what, length):
        # Unpadded base64url only, as the Rust and TypeScript verifiers read it.
        if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z0-9_-]*", text):
            raise ReportRefused("malformed", f"{what} is not unpadded base64url")
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except ValueError:
            raise ReportRefused("malformed", f"{what} is not unpadded base64url") from None
        if len(raw) != length:
            raise ReportRefused("malformed", f"{what} is not {length} bytes")
        # Decoding drops stray bits of the last digit (Rust refuses them): encoding back shows them.
        if base64.urlsafe_b64encode(raw).decode().rstrip("=") != text:
            raise ReportRefused("malformed", f"{what} is not canonical base64url (stray bits in its last digit)")
        return raw

    # 1. malformed: what was asked, the binding, the report, the key set.
    if expected_type not in REPORT_COVERS:
        raise ReportRefused("malformed", f"{expected_type} is no report type")
    binding = {} if binding is None else binding
    # A key no binding has (a misspelt "acount", a scan's "transaction" for a sequence's
    # "transactions") would silently check nothing.
    members = SEQUENCE_BINDING_MEMBERS if expected_type == SEQUENCE_TYPE else BINDING_MEMBERS
    if not isinstance(binding, dict) or any(name not in members for name in binding):
        raise ReportRefused("malformed", f"a binding of {expected_type} has only {', '.join(members)}")
    if binding and expected_type not in (*SCAN_TYPES, SEQUENCE_TYPE):
        raise ReportRefused("malformed", f"a binding applies to a scan ({', '.join(SCAN_TYPES)}) or a sequence scan only")
    for name in TEXT_BINDING_MEMBERS:
        if name in binding and not isinstance(binding[name], str):
            raise ReportRefused("malformed", f"the {name} held is not text")
    held_digest = held_digests = None
    if "transaction" in binding:
        try:
            held_digest = message_sha256(binding["transaction"])
        except ValueError as error:
            raise ReportRefused("malformed", f"the transaction held: {error}") from None
    if "transactions" in binding:
        if not isinstance(binding["transactions"], list):
            raise ReportRefused("malformed", "the transactions held are not a list")
        held_digests = []
        for i, transaction in enumerate(binding["transactions"]):
            try:
                held_digests.append(message_sha256(transaction))
            except ValueError as error:
                raise ReportRefused("malformed", f"transaction {i} held: {error}") from None
    signature = data.get("signature") if isinstance(data, dict) else None
    if not isinstance(signature, dict):
        raise ReportRefused("malformed", "no data.signature (an unsigned report, or no report)")
    if signature.get("alg") != "EdDSA" or signature.get("canon") != "JCS":
        raise ReportRefused("malformed", "not an EdDSA signature over JCS")
    for name in ("type", "keyId"):
        if not isinstance(signature.get(name), str):
            raise ReportRefused("malformed", f"signature.{name} is not text")
    covers = signature.get("covers")
    if not isinstance(covers, list) or not all(isinstance(name, str) for name in covers):
        raise ReportRefused("malformed", "covers is not a list of names")
    value = b64url(signature.get("value"), "signature.value", 64)
    batch = None
    if "batch" in signature:
        # A batched signature (scans): the salt of this report's leaf and its Merkle path.
        batch = signature["batch"]
        if not isinstance(batch, dict) or set(batch) != {"salt", "path"}:
            raise ReportRefused("malformed", "signature.batch is not {salt, path}")
        salt = b64url(batch["salt"], "signature.batch.salt", 16)
        path = batch["path"]
        if not isinstance(path, list) or len(path) > BATCH_PATH_STEPS_MAX:
            raise ReportRefused("malformed", f"signature.batch.path is not a list of at most {BATCH_PATH_STEPS_MAX} steps")
        steps = [step_of(step) for step in path]
    keys = key_set.get("keys") if isinstance(key_set, dict) else None
    if not isinstance(keys, list):
        raise ReportRefused("malformed", "the key set has no keys list")
    # 2. unknown_key (the first key of that id, as the other verifiers take it)
    jwk = next((k for k in keys if isinstance(k, dict) and k.get("kid") == signature["keyId"]), None)
    if jwk is None:
        raise ReportRefused("unknown_key", f"no published key {signature['keyId']}")
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        raise ReportRefused("malformed", "the key of that id is not an Ed25519 key")
    public = b64url(jwk.get("x"), "the key's x", 32)
    # 3. wrong_type, 4. covers_mismatch: a scan is either scan type, its signature's fixing its covers
    report_type = signature["type"]
    if report_type != expected_type and not (expected_type == SCAN_TYPES[0] and report_type in SCAN_TYPES):
        raise ReportRefused("wrong_type", f"a {report_type} signature, not {expected_type}")
    expected = REPORT_COVERS[report_type]
    if len(covers) != len(expected) or set(covers) != set(expected):
        raise ReportRefused("covers_mismatch", f"the covers are not exactly those of {report_type}")
    missing = [name for name in expected if name not in data]
    if missing:
        raise ReportRefused("covers_mismatch", f"covered member {missing[0]} is missing")
    # A scan (any scan type) signs all of its data: a member it does not cover is refused, not
    # verified unsigned beside the signed members (a client may read it there) — guards beside
    # an xray.scan.v2 signature, which covers none, too.
    if report_type in (*SCAN_TYPES, SEQUENCE_TYPE):
        unsigned = [name for name in data if name not in expected and name != "signature"]
        if unsigned:
            raise ReportRefused("covers_mismatch", f"a {report_type} signature does not cover member {unsigned[0]} of data")
    # 5. bad_signature
    covered = {name: data[name] for name in expected}
    try:
        message = rfc8785.dumps(as_jcs_numbers({**covered, "type": report_type}))
        if batch is not None:
            # Signed is the envelope of the root this report's salted leaf leads to.
            node = hashlib.sha256(b"\x00" + salt + message).digest()
            for side, sibling in steps:
                node = hashlib.sha256(b"\x01" + (sibling + node if side == "left" else node + sibling)).digest()
            message = rfc8785.dumps({"root": node.hex(), "type": BATCH_TYPE})
        Ed25519PublicKey.from_public_bytes(public).verify(value, message)
    except InvalidSignature:
        raise ReportRefused("bad_signature", "the signature does not match the report") from None
    except (TypeError, ValueError, OverflowError, rfc8785.CanonicalizationError) as error:
        raise ReportRefused("malformed", str(error)) from None
    # 6. the binding, on what the signature attests
    if held_digest is not None:
        signed = covered["transaction"].get("messageSha256") if isinstance(covered["transaction"], dict) else None
        if held_digest != signed:
            raise ReportRefused("digest_mismatch", "the scan judged another transaction message")
    if held_digests is not None:
        # Exactly as many transactions judged as held, each message in its place.
        items = covered["transactions"]
        if not isinstance(items, list) or len(items) != len(held_digests):
            count = len(items) if isinstance(items, list) else "no list of"
            raise ReportRefused("digest_mismatch", f"the sequence judged {count} transactions, not the {len(held_digests)} held")
        for i, (item, held) in enumerate(zip(items, held_digests)):
            transaction = item.get("transaction") if isinstance(item, dict) else None
            if not isinstance(transaction, dict) or transaction.get("messageSha256") != held:
                raise ReportRefused("digest_mismatch", f"the sequence judged another message as transaction {i}")
    if "account" in binding and covered["account"] != binding["account"]:
        raise ReportRefused("account_mismatch", f"the scan was asked by {covered['account']}")
    if "origin" in binding and covered["origin"] != binding["origin"]:
        raise ReportRefused("origin_mismatch", f"the scan judged the origin {covered['origin']}")
    if "signer" in binding and covered["signer"] != binding["signer"]:
        raise ReportRefused("signer_mismatch", f"the scan judged the signer {covered['signer']}")
    if "mode" in binding and covered["mode"] != binding["mode"]:
        raise ReportRefused("mode_mismatch", f"the sequence was judged in mode {covered['mode']}")
    return signature["keyId"], covered


def read_json(text):
    """``text`` (bytes or str) parsed as JSON proper: ``NaN``, ``Infinity`` and numbers past a double's range
    (``1e400``) are not JSON numbers, and no canonical form has them — ``ValueError``."""
    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    def finite(digits):
        number = float(digits)
        if number in (float("inf"), float("-inf")):
            raise ValueError(f"{digits} is past a double's range")
        return number

    return json.loads(text, parse_constant=no_constant, parse_float=finite)


def message_sha256(transaction):
    """The SHA-256 (hex) of a serialized transaction's message — its bytes after the signatures
    (a compact-u16 count ``n``, then ``n`` × 64 bytes) — as a scan signs it in
    ``transaction.messageSha256``; signatures added after the scan leave it unchanged.
    ``transaction`` is bytes or their base64 (standard, padding optional). Raises ``ValueError``
    for text that is not base64, a count that is not canonical compact-u16, or more signatures
    than the bytes hold."""
    if isinstance(transaction, str):
        digits = transaction.rstrip("=")
        if not re.fullmatch(r"[A-Za-z0-9+/]*", digits):
            raise ValueError("not base64")
        transaction = base64.b64decode(digits + "=" * (-len(digits) % 4))
        # Decoding drops stray bits of the last digit: encoding back shows them.
        if base64.b64encode(transaction).decode().rstrip("=") != digits:
            raise ValueError("not base64")
    if not isinstance(transaction, (bytes, bytearray)):
        raise ValueError("not bytes")
    count, length = compact_u16(transaction)
    start = length + 64 * count
    if start > len(transaction):
        raise ValueError(f"{count} signatures do not fit in {len(transaction)} bytes")
    return hashlib.sha256(transaction[start:]).hexdigest()


def compact_u16(data):
    """Solana's compact-u16 ("shortvec") at the start of ``data``: (its value, its length). 7 bits
    a byte, least significant first, 0x80 when a byte follows; at most 3 bytes and 0xffff, and
    canonical as Solana decodes it — a last byte 0 after the first is a value written longer than
    it needs."""
    value = 0
    for i, byte in enumerate(data[:3]):
        if byte == 0 and i > 0:
            raise ValueError("the signature count is not canonical")
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if value > 0xFFFF:
                raise ValueError("the signature count is past 0xffff")
            return value, i + 1
    raise ValueError("the signature count is " + ("cut short" if len(data) < 3 else "longer than 3 bytes"))


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
        return self.scan_body({"transaction": transaction}, deadline, signer)

    def scan_body(self, body, deadline, signer=None):
        """Posts a scan's ``body`` (one transaction or a sequence): the answer's ``data``."""
        url = f"{self.base}/v1/developer/intelligence/transaction"
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

    def scan_sequence(self, transactions, deadline, signer=None, mode=None):
        """Scans several transactions (base64, in order) run on one state: the answer's ``data``."""
        body = {"transactions": transactions}
        if mode:
            body["mode"] = mode
        return self.scan_body(body, deadline, signer)

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


def sequence_summary(data):
    """A sequence's verdict, what the whole does (its findings and the signer's cumulative
    effects), what applied, and each transaction's verdict and simulation."""
    return {
        "verdict": data["verdict"],
        "signer": data["signer"],
        "mode": data["mode"],
        "findings": [
            {"severity": f["severity"], "kind": f["kind"], "title": f["title"]} for f in data["findings"]
        ],
        "effects": data["effects"],
        "applied": data["applied"],
        "transactions": [
            {"index": t["index"], "verdict": t["verdict"], "findings": [f["kind"] for f in t["findings"]],
             "simulation": t["simulation"]["status"]}
            for t in data["transactions"]
        ],
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
    scan.add_argument(
        "transaction",
        nargs="+",
        help="the serialized transaction, base64 (- reads it from stdin); several (up to 5, or - with one a "
        "line): a sequence, run in order on one state",
    )
    scan.add_argument("--signer", help="the signer to scan for (default: the fee payer; of a sequence, every one's)")
    scan.add_argument(
        "--mode",
        choices=("sequence", "bundle"),
        help="scan as a sequence (also of one transaction): sequence (a failed one applies nothing, the next "
        "runs) or bundle (once one fails, none applies)",
    )
    verify = commands.add_parser(
        "verify",
        help="verify a saved report's signature as the type you expect; prints its signed members",
        description="Verifies a saved report as a report of --type (required: a report's own claim of "
        "what it is is not trusted) and prints {verified, keyId, type, data} (and reason when refused), data "
        "holding the signed members only; a scan can be bound to its transaction, account, origin and signer "
        "(a sequence scan to its transactions, account, origin, signer and mode).",
    )
    verify.add_argument("report", help="a report's JSON file (a poll's, webhook's or scan's body, or its data)")
    verify.add_argument(
        "--type",
        required=True,
        choices=sorted(REPORT_TYPES) + sorted(REPORT_COVERS),
        help="what the report must be: analysis (a wallet poll or its webhook), comparison, scan (either "
        "xray.scan.v2 or, asked with guards, xray.scan.v3), scan_sequence (a scan of transactions, "
        "xray.scan_sequence.v1), or monitor_event (a monitor's webhook body, or one event of its events page) "
        "(or the full type, xray.analysis.v1 …; xray.scan.v3: a guarded scan only); any other signature type "
        "is refused",
    )
    verify.add_argument("--keys", help="the key set's JSON file (default: fetched from --api)")
    verify.add_argument(
        "--transaction",
        help="a scan only: the transaction scanned, base64 (@FILE: read from FILE), signed since or not; "
        "the signed transaction.messageSha256 must be its message's",
    )
    verify.add_argument(
        "--transactions",
        help="a sequence scan only: the transactions scanned, in order, base64 separated by commas (@FILE: one "
        "a line); the signed transactions must be as many, each item's transaction.messageSha256 its message's",
    )
    verify.add_argument("--account", help="a scan only: the signed account must be this one (acct_…)")
    verify.add_argument(
        "--origin", help="a scan only: the signed origin must be this host ('none': the scan was sent no origin)"
    )
    verify.add_argument(
        "--signer", help="a scan or a sequence scan only: the signed signer must be this wallet (base58)"
    )
    verify.add_argument(
        "--mode", help="a sequence scan only: the signed mode must be this one (sequence or bundle)"
    )
    args = parser.parse_args()
    if args.command == "verify":
        expected_type = REPORT_TYPES.get(args.type, args.type)
        binding = {}
        if args.transaction is not None:
            transaction = args.transaction
            if transaction.startswith("@"):
                with open(transaction[1:], encoding="utf-8") as f:
                    transaction = f.read()
            binding["transaction"] = transaction.strip()
        if args.transactions is not None:
            if args.transactions.startswith("@"):
                with open(args.transactions[1:], encoding="utf-8") as f:
                    binding["transactions"] = [line.strip() for line in f if line.strip()]
            else:
                binding["transactions"] = [part.strip() for part in args.transactions.split(",")]
        if args.account is not None:
            binding["account"] = args.account
        if args.origin is not None:
            binding["origin"] = None if args.origin == "none" else args.origin
        if args.signer is not None:
            binding["signer"] = args.signer
        if args.mode is not None:
            binding["mode"] = args.mode
        if binding and expected_type not in (*SCAN_TYPES, SEQUENCE_TYPE):
            parser.error("--transaction(s), --account, --origin, --signer and --mode bind a scan or a sequence scan only")
        if "mode" in binding and expected_type != SEQUENCE_TYPE:
            parser.error("--mode binds a sequence scan (--type scan_sequence) only")
        if "transaction" in binding and expected_type == SEQUENCE_TYPE:
            parser.error("a sequence scan is bound with --transactions")
        if "transactions" in binding and expected_type != SEQUENCE_TYPE:
            parser.error("--transactions binds a sequence scan (--type scan_sequence) only")
        # Bytes: text that is not UTF-8 is a malformed report, not a crash.
        with open(args.report, "rb") as f:
            text = f.read()
        if args.keys:
            with open(args.keys, "rb") as f:
                keys_text = f.read()
        elif args.api:
            url = args.api.rstrip("/") + "/.well-known/xray-keys.json"
            with urllib.request.urlopen(url, timeout=15) as answer:
                keys_text = answer.read()
        else:
            parser.error("verify needs --keys FILE or --api URL")
        try:
            try:
                report, key_set = read_json(text), read_json(keys_text)
            except ValueError as error:
                raise ReportRefused("malformed", f"not JSON: {error}") from None
            # A whole body ({"data": …}) or its data alone; a monitor event's webhook body (or
            # redelivery answer, {"data": {"event": …}}): the event, where its signature is.
            data = report.get("data", report) if isinstance(report, dict) else report
            if expected_type == REPORT_TYPES["monitor_event"] and isinstance(data, dict) and "signature" not in data:
                data = data.get("event", data)
            key_id, covered = verify_report(data, key_set, expected_type, binding)
            # The type verified: the signature's (a scan asked with guards is xray.scan.v3).
            verdict = {"verified": True, "keyId": key_id, "type": data["signature"]["type"], "data": covered}
        except ReportRefused as refused:
            # No keyId: nothing the refused report says about its key is attested.
            verdict = {
                "verified": False, "reason": refused.reason, "detail": refused.detail, "keyId": None,
                "type": expected_type, "data": None,
            }
        json.dump(verdict, sys.stdout)
        print()
        sys.exit(0 if verdict["verified"] else 1)
    if not args.api or not args.key:
        parser.error("--api and --key are required")
    deadline = time.monotonic() + args.timeout_s
    api = Api(args.api, args.key, timeout_s=15)
    if args.command == "scan":
        transactions = []
        for given in args.transaction:
            transactions += sys.stdin.read().split() if given == "-" else [given]
        if len(transactions) == 1 and args.mode is None:
            json.dump(scan_summary(api.scan(transactions[0], deadline, args.signer)), sys.stdout)
        else:
            if not 1 <= len(transactions) <= SEQUENCE_TRANSACTIONS_MAX:
                parser.error(f"a sequence is 1 to {SEQUENCE_TRANSACTIONS_MAX} transactions")
            data = api.scan_sequence(transactions, deadline, args.signer, args.mode)
            json.dump(sequence_summary(data), sys.stdout)
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
