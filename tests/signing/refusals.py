#!/usr/bin/env python3
"""The refusal cases every report verifier of this repository is tested with: one table, so the
four verifiers (Rust ``xray::signing::verify_report`` / ``verify_scan`` /
``verify_scan_sequence``, TypeScript ``verifyReport``, ``examples/client.py verify``, ``tests/signing/verify_report.py``) give the
same reason for the same report. Written to ``refusals.json`` beside this file; each verifier's
tests read that file, and ``tests/signing/test_binding.py`` checks it is what this script makes.

The reasons and the order they are checked in are the README's ("Signed reports", "Why a
verifier refuses"): ``malformed``, ``unknown_key``, ``wrong_type``, ``covers_mismatch``,
``bad_signature``, then for a scan given what its asker holds ``digest_mismatch``,
``account_mismatch``, ``origin_mismatch``, ``signer_mismatch``, ``mode_mismatch``; the first that
applies is the reason. The ``precedence`` cases are wrong in two ways and expect the earlier one.

Everything is deterministic (Ed25519 signatures are; the keys come from fixed seeds), so the
file is the same each time it is made. A case is ``{name, type, data, keys, binding?, reason}``:
``keys`` names a key set of ``keySets``; ``binding`` (a scan's) holds what the asker holds —
``transaction`` (base64), ``account``, ``origin`` (``null``: it sent none), ``signer`` (the
base58 address it asked about: the signed ``signer`` must be it, else ``signer_mismatch``);
``reason`` is ``null`` when the report verifies. A binding that is not its shape is
``malformed``: a member its type's binding has not, a binding of another type than a scan or a
sequence scan, a transaction held that is none, a ``signer`` or ``mode`` that is not text. A
case with ``"loose": true`` is one a typed API cannot be given (a binding member no binding has,
a binding of an analysis, a ``mode`` for a scan, a ``signer`` or ``mode`` that is not text): the
Rust verifier's types rule it out, so its tests skip it. A case of ``type`` ``xray.scan.v2`` is
checked as a scan (Rust ``verify_scan``): a scan asked with guards (``xray.scan.v3``) is a scan
too, the signature's type picking its exact covers; a case of ``type`` ``xray.scan.v3`` (never
with a binding: Rust checks it with ``verify_report``) accepts a guarded scan only. A case of
``type`` ``xray.scan_sequence.v1`` is checked as a sequence scan (Rust ``verify_scan_sequence``):
its ``binding`` holds ``transactions`` (a list of base64, in the order sent) instead of
``transaction``, and may hold ``mode`` (``sequence`` or ``bundle``: the signed ``mode`` must be
it, else ``mode_mismatch``); it is refused as any scan type, and a scan as it (``wrong_type``);
``digest_mismatch`` unless the signed ``transactions`` has exactly as many items as held, item
*i*'s ``transaction.messageSha256`` the digest of held transaction *i*'s message (an empty list
held is a count mismatch too). The binding is checked once the signature verified, in this
order: the digest(s), ``account``, ``origin``, ``signer``, ``mode``.

Every scan type (``xray.scan.v2``, ``xray.scan.v3``, ``xray.scan_sequence.v1``) signs all of its
``data``: once ``covers`` is exactly the type's list, a member of ``data`` that is neither one of
that type's covered members nor ``signature`` is ``covers_mismatch``, checked with the covers
(after ``wrong_type``, before the signature) — it would otherwise sit unsigned beside the signed
members, where a client may read it (a scan signed ``xray.scan.v2`` carrying a ``guards`` member
is one such). An analysis, a comparison or a monitor event may carry unsigned members: only the
covered ones are verified.

  python3 tests/signing/refusals.py            # writes tests/signing/refusals.json
  python3 tests/signing/refusals.py --check    # exits 1 when the file is not current
"""

import base64
import copy
import hashlib
import json
import pathlib
import sys

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

OUT = pathlib.Path(__file__).resolve().with_name("refusals.json")
REASONS = [
    "malformed", "unknown_key", "wrong_type", "covers_mismatch", "bad_signature",
    "digest_mismatch", "account_mismatch", "origin_mismatch", "signer_mismatch", "mode_mismatch",
]
ANALYSIS = "xray.analysis.v1"
SCAN = "xray.scan.v2"
# A scan asked with guards: a scan too, checked as one (``SCAN``) by every verifier; as this type
# alone, a guarded scan only.
GUARDED_SCAN = "xray.scan.v3"
# A sequence scan (``transactions``): never a scan, nor a scan one; bound to a list of transactions.
SEQUENCE = "xray.scan_sequence.v1"
EVENT = "xray.monitor_event.v1"
# Written out here (README, "Signed reports") rather than taken from a verifier: the table tests them.
COVERS = {
    ANALYSIS: ["analysisId", "wallet", "completedAt", "xray"],
    SCAN: [
        "verdict", "signer", "transaction", "findings", "effects", "instructions", "simulation",
        "counterparties", "engineVersions", "policy", "origin", "account", "scannedAt", "requestId",
    ],
    GUARDED_SCAN: [
        "verdict", "signer", "transaction", "findings", "effects", "instructions", "simulation",
        "counterparties", "engineVersions", "policy", "origin", "guards", "account", "scannedAt", "requestId",
    ],
    SEQUENCE: [
        "verdict", "signer", "mode", "transactions", "findings", "effects", "applied", "counterparties",
        "engineVersions", "policy", "origin", "account", "scannedAt", "requestId",
    ],
    EVENT: ["id", "kind", "account", "monitorId", "wallet", "analysisId", "createdAt", "changes"],
}
ACCOUNT = "acct_3JqTmXb1QW7CeT4kz9pNvd"
ORIGIN = "phantom.app"
# The wallet every scan here judged (its signed ``signer``), and another one.
SIGNER = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z"
OTHER_SIGNER = "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ"


def b64url(raw):
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def key_of(seed_text):
    """(private key, JWK) of the key made from ``seed_text``, ``kid`` as the server makes it."""
    key = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed_text.encode()).digest())
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    jwk = {
        "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": hashlib.sha256(public).hexdigest()[:16],
        "x": b64url(public), "status": "current", "createdAt": "2026-11-28T10:00:00.000Z", "retiredAt": None,
    }
    return key, jwk


def stray_bits(text, stray):
    """``text`` (unpadded base64url) with the ``stray`` low bits of its last digit set: the same
    bytes to a lenient decoder, not the canonical text (every verifier refuses it)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return text[:-1] + alphabet[alphabet.index(text[-1]) | stray]


KEY, JWK = key_of("xray refusals: the server's key")
_, OTHER_JWK = key_of("xray refusals: another server's key")
KEY_SETS = {
    "ours": {"keys": [JWK]},
    "another server's": {"keys": [OTHER_JWK]},
    "empty": {"keys": []},
    "no keys list": {"keys": "none"},
    "ours, not Ed25519": {"keys": [{**JWK, "crv": "X25519"}]},
    "ours, x of 31 bytes": {"keys": [{**JWK, "x": b64url(bytes(31))}]},
    # 32 bytes are 43 digits with 2 bits to spare.
    "ours, x with stray bits": {"keys": [{**JWK, "x": stray_bits(JWK["x"], 0b01)}]},
}


def compact_u16(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def legacy_transaction(signatures, data=b"xray"):
    """A legacy transaction every verifier parses (Rust's parser sanitizes the message): one
    signer, one program called with it and 4 bytes of ``data``."""
    signer, program, blockhash = (hashlib.sha256(s).digest() for s in (b"signer", b"program", b"blockhash"))
    # header: 1 required signature, 0 read-only signed, 1 read-only unsigned (the program)
    message = bytes([1, 0, 1]) + compact_u16(2) + signer + program + blockhash
    message += compact_u16(1) + bytes([1]) + compact_u16(1) + bytes([0]) + compact_u16(len(data)) + data
    return compact_u16(1) + signatures + message, message


SENT, MESSAGE = legacy_transaction(bytes(64))
# A sequence's second and third transactions (the same signer, other instruction data), and one
# that is in neither.
SECOND, SECOND_MESSAGE = legacy_transaction(bytes(64), b"seq2")
THIRD, THIRD_MESSAGE = legacy_transaction(bytes(64), b"seq3")
ELSEWHERE, _ = legacy_transaction(bytes(64), b"else")
SECOND_CHANGED = SECOND[:-1] + bytes([SECOND[-1] ^ 0x01])
SIGNED_SINCE, _ = legacy_transaction(hashlib.sha512(b"signed after the scan").digest())
CHANGED_MESSAGE = SENT[:-1] + bytes([SENT[-1] ^ 0x01])
# A signature count of 0 written in two bytes: not canonical compact-u16, so no transaction.
BAD_COUNT = bytes([0x80, 0x00]) + SENT[1:]


def b64(raw):
    return base64.b64encode(raw).decode()


def signed(data, report_type, covers, key=KEY, kid=JWK["kid"]):
    """``data`` with the signature the server would give it."""
    value = key.sign(rfc8785.dumps({**{name: data[name] for name in covers}, "type": report_type}))
    signature = {
        "keyId": kid, "alg": "EdDSA", "canon": "JCS", "type": report_type, "covers": sorted(covers),
        "value": b64url(value),
    }
    return {**data, "signature": signature}


def merkle_node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def batched(data, others=3):
    """``data`` (signed) re-signed as the server signs scans of one tick: its message's salted
    leaf second of ``others`` + 1 leaves, one signature over the root's envelope, its salt and
    path in ``batch`` (README, "Signed reports": batched signatures)."""
    signature = data["signature"]
    message = rfc8785.dumps({**{name: data[name] for name in signature["covers"]}, "type": signature["type"]})
    salt = hashlib.sha256(b"xray refusals: a salt").digest()[:16]
    leaves = [hashlib.sha256(f"another scan {i}".encode()).digest() for i in range(others + 1)]
    leaves[1] = hashlib.sha256(b"\x00" + salt + message).digest()
    # Four leaves: ((0, 1), (2, 3)); the path from leaf 1 is {left: 0}, {right: (2, 3)}.
    assert others == 3, "the path below is that of a tree of four"
    path = [{"left": leaves[0].hex()}, {"right": merkle_node(leaves[2], leaves[3]).hex()}]
    root = merkle_node(merkle_node(leaves[0], leaves[1]), merkle_node(leaves[2], leaves[3]))
    value = KEY.sign(rfc8785.dumps({"root": root.hex(), "type": "xray.batch.v1"}))
    batch = {"salt": b64url(salt), "path": path}
    return {**data, "signature": {**signature, "value": b64url(value), "batch": batch}}


def deep_batched(data, steps):
    """``data`` (signed) re-signed in a batch whose path from it has ``steps`` steps (siblings
    made up, all on the right): the longest a verifier reads is 16."""
    signature = data["signature"]
    message = rfc8785.dumps({**{name: data[name] for name in signature["covers"]}, "type": signature["type"]})
    salt = hashlib.sha256(b"xray refusals: a deep salt").digest()[:16]
    node = hashlib.sha256(b"\x00" + salt + message).digest()
    path = []
    for i in range(steps):
        sibling = hashlib.sha256(f"sibling {i}".encode()).digest()
        path.append({"right": sibling.hex()})
        node = merkle_node(node, sibling)
    value = KEY.sign(rfc8785.dumps({"root": node.hex(), "type": "xray.batch.v1"}))
    batch = {"salt": b64url(salt), "path": path}
    return {**data, "signature": {**signature, "value": b64url(value), "batch": batch}}


def scan_data(origin=ORIGIN):
    return signed(
        {
            "verdict": "warning",
            "signer": "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z",
            "transaction": {
                "version": "legacy", "signed": False, "accounts": 2, "lookupTables": [],
                "messageSha256": hashlib.sha256(MESSAGE).hexdigest(),
                "signatures": [{"signer": "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z", "status": "missing"}],
            },
            "findings": [{"kind": "token_approval", "severity": "high", "instruction": 0}],
            "effects": [{"kind": "sol", "lamports": -5000}],
            "instructions": [{"index": 0, "program": "11111111111111111111111111111111"}],
            "simulation": {"status": "skipped", "reason": "a fixture"},
            "counterparties": {"status": "read", "transactions": 25},
            "engineVersions": {"scan": "1.3.0"},
            "policy": {"id": "default", "version": 0},
            "origin": origin,
            "account": ACCOUNT,
            "scannedAt": "2026-11-28T10:00:00.123Z",
            "requestId": "refusals.1",
        },
        SCAN,
        COVERS[SCAN],
    )


def guarded_scan_data():
    """``scan_data()`` asked with guards: the same members and ``guards``, signed as ``xray.scan.v3``."""
    data = {k: v for k, v in scan_data().items() if k != "signature"}
    data["guards"] = {
        "slippageBps": 50, "solToleranceLamports": 0, "status": "added",
        "guardInstructions": [{
            "programId": "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95",
            "accounts": [{"address": "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z", "isSigner": False, "isWritable": False}],
            # The signer's guard (AssertAccountInfoMulti): its SOL floor and its owner.
            "data": "BgACALDHXaIFAAAABAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "asserts": [
                {"kind": "lamports_at_least", "lamports": 24198891440},
                {"kind": "account_owner", "owner": "11111111111111111111111111111111"},
            ],
        }],
        "guardedTransaction": b64(SENT),
    }
    return signed(data, GUARDED_SCAN, COVERS[GUARDED_SCAN])


def sequence_data(origin=ORIGIN, messages=(MESSAGE, SECOND_MESSAGE, THIRD_MESSAGE), mode="sequence"):
    """A sequence scan's answer for SENT, SECOND and THIRD (``messages``) in that order, asked by
    ACCOUNT from ``origin`` in ``mode``, signed as ``xray.scan_sequence.v1``: each transaction
    judged in its place, the whole a sweep."""
    signer = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z"
    items = [
        {
            "index": i, "verdict": "benign",
            "transaction": {
                "version": "legacy", "signed": False, "accounts": 2, "lookupTables": [],
                "messageSha256": hashlib.sha256(message).hexdigest(),
                "signatures": [{"signer": signer, "status": "missing"}],
            },
            "findings": [],
            "effects": [{"kind": "sol", "lamports": -5000 - i}],
            "instructions": [{"index": 0, "program": "11111111111111111111111111111111"}],
            "simulation": {"status": "ok", "slot": 300000001},
        }
        for i, message in enumerate(messages)
    ]
    return signed(
        {
            "verdict": "malicious", "signer": signer, "mode": mode, "transactions": items,
            "findings": [{"kind": "asset_sweep", "severity": "critical", "facts": {"lamports": 21780842148}}],
            "effects": [{"kind": "sol", "lamports": -21780857148}],
            "applied": {"transactions": list(range(len(items)))},
            "counterparties": {"status": "read", "transactions": 25},
            "engineVersions": {"scan": "1.4.0"},
            "policy": {"id": "default", "version": 0},
            "origin": origin,
            "account": ACCOUNT,
            "scannedAt": "2026-11-28T10:00:00.456Z",
            "requestId": "refusals.sequence",
        },
        SEQUENCE,
        COVERS[SEQUENCE],
    )


def analysis_data():
    return signed(
        {
            "analysisId": "an_refusals", "wallet": "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ",
            "completedAt": "2026-11-28T10:00:00.000Z", "status": "READY",
            "xray": {"score": {"value": 82, "riskLevel": "low", "confidence": 0.9}, "signals": []},
        },
        ANALYSIS,
        COVERS[ANALYSIS],
    )


def event_data():
    """A monitor's event as its page lists it: its legacy ``type`` and its ``delivery`` are not
    signed (``kind`` is ``type``'s signed twin)."""
    return signed(
        {
            "id": "evt_refusals", "type": "risk_changed", "kind": "risk_changed", "account": ACCOUNT,
            "monitorId": "mon_refusals", "wallet": "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ",
            "analysisId": "an_refusals", "createdAt": "2026-11-28T10:01:00.000Z",
            "changes": {
                "previousAnalysisId": "an_before", "previousCompletedAt": "2026-11-28T10:00:00.000Z",
                "score": {"previous": 92, "current": 24, "delta": -68, "previousRiskLevel": "low", "currentRiskLevel": "critical"},
                "appeared": [{"signalId": "sig_1", "kind": "open_token_delegation", "severity": "critical", "title": "Open token delegation"}],
                "disappeared": [], "changed": [],
            },
            "delivery": None,
        },
        EVENT,
        COVERS[EVENT],
    )


HELD = {"transaction": b64(SENT), "account": ACCOUNT, "origin": ORIGIN}
HELD_SEQUENCE = {"transactions": [b64(SENT), b64(SECOND), b64(THIRD)], "account": ACCOUNT, "origin": ORIGIN}


def edit(data, change):
    """A deep copy of ``data`` with ``change`` applied to it."""
    data = copy.deepcopy(data)
    change(data)
    return data


def with_signature(data, **members):
    """``data`` with members of its signature replaced (``None``: removed)."""
    def change(d):
        for name, value in members.items():
            if value is None:
                d["signature"].pop(name, None)
            else:
                d["signature"][name] = value
    return edit(data, change)


def with_batch(data, change):
    """``data`` with ``change`` applied to its signature's ``batch`` (cleared to nothing: ``null``)."""
    def apply(d):
        change(d["signature"]["batch"])
        if not d["signature"]["batch"]:
            d["signature"]["batch"] = None
    return edit(data, apply)


def flipped_value(data):
    """The signature's value with its first byte changed (still 64 bytes of base64url)."""
    raw = bytearray(base64.urlsafe_b64decode(data["signature"]["value"] + "=="))
    raw[0] ^= 0x01
    return b64url(bytes(raw))


def cases():
    scan, analysis, event = scan_data(), analysis_data(), event_data()
    guarded = guarded_scan_data()
    guarded_members = {k: v for k, v in guarded.items() if k != "signature"}
    event_covers = sorted(COVERS[EVENT])
    covers = sorted(COVERS[SCAN])
    tampered = edit(scan, lambda d: d["findings"][0].update(severity="low"))  # one covered member changed
    short_covers = with_signature(scan, covers=covers[1:])
    in_batch = batched(scan)
    sequence = sequence_data()
    bundle = sequence_data(mode="bundle")
    sequence_members = {k: v for k, v in sequence.items() if k != "signature"}
    scan_members = {k: v for k, v in scan.items() if k != "signature"}
    held_in = lambda *transactions: {"transactions": [b64(t) for t in transactions]}  # noqa: E731
    out = []

    def case(reason, name, data, report_type=SCAN, keys="ours", binding=None, loose=False):
        entry = {"name": name, "type": report_type, "data": data, "keys": keys}
        if binding is not None:
            entry["binding"] = binding
        if loose:
            entry["loose"] = True
        entry["reason"] = reason
        out.append(entry)

    # Accepted.
    case(None, "a scan bound to its transaction, account and origin", scan, binding=HELD)
    case(None, "a scan bound to its transaction signed since", scan, binding={"transaction": b64(SIGNED_SINCE)})
    case(None, "a scan sent no origin, bound to none", scan_data(None), binding={"origin": None})
    case(None, "an analysis", analysis, ANALYSIS)
    case(None, "an analysis with an unsigned member added (only scans sign all their data)", {**analysis, "verdictOverride": "benign"}, ANALYSIS)
    case(None, "a monitor event", event, EVENT)
    case(None, "a monitor event, delivered since (its delivery is not signed)", {**event, "delivery": {"status": "DELIVERED"}}, EVENT)
    case(None, "a monitor event whose legacy type changed (kind is the signed one)", {**event, "type": "other"}, EVENT)
    case(None, "a scan signed in a batch of four, bound", in_batch, binding=HELD)
    case(None, "a scan whose batch path has 16 steps, the most read", deep_batched(scan, 16))
    case(None, "a guarded scan (xray.scan.v3) checked as a scan, bound", guarded, binding=HELD)
    case(None, "a guarded scan checked as a guarded scan", guarded, GUARDED_SCAN)
    case(None, "a guarded scan signed in a batch of four, checked as a scan, bound", batched(guarded), binding=HELD)
    case(None, "a sequence scan bound to its transactions, account and origin", sequence, SEQUENCE, binding=HELD_SEQUENCE)
    case(None, "a sequence scan bound to its transactions, the first signed since", sequence, SEQUENCE, binding=held_in(SIGNED_SINCE, SECOND, THIRD))
    case(None, "a sequence scan of one transaction, sent no origin, bound", sequence_data(None, (MESSAGE,)), SEQUENCE, binding={**held_in(SENT), "origin": None})
    case(None, "a scan bound to its signer", scan, binding={"signer": SIGNER})
    case(None, "a scan bound to its transaction, account, origin and signer", scan, binding={**HELD, "signer": SIGNER})
    case(None, "a guarded scan checked as a scan, bound to its signer", guarded, binding={**HELD, "signer": SIGNER})
    case(None, "a sequence scan bound to its signer", sequence, SEQUENCE, binding={"signer": SIGNER})
    case(None, "a sequence scan bound to its mode", sequence, SEQUENCE, binding={"mode": "sequence"})
    case(None, "a sequence scan bound to its transactions, account, origin, signer and mode", sequence, SEQUENCE, binding={**HELD_SEQUENCE, "signer": SIGNER, "mode": "sequence"})
    case(None, "a sequence scan signed in a batch of four, bound", batched(sequence), SEQUENCE, binding=HELD_SEQUENCE)
    case(None, "a bundle scan bound to its mode and signer", bundle, SEQUENCE, binding={**HELD_SEQUENCE, "signer": SIGNER, "mode": "bundle"})
    # malformed: the report, the key set or the binding is not the shape it has.
    case("malformed", "data is not an object", "a report", ANALYSIS)
    case("malformed", "data is a list", [analysis], ANALYSIS)
    case("malformed", "no signature (unsigned)", {k: v for k, v in analysis.items() if k != "signature"}, ANALYSIS)
    case("malformed", "the signature is not an object", {**analysis, "signature": "signed"}, ANALYSIS)
    case("malformed", "alg is not EdDSA", with_signature(analysis, alg="RS256"), ANALYSIS)
    case("malformed", "canon is not JCS", with_signature(analysis, canon="none"), ANALYSIS)
    case("malformed", "no type", with_signature(analysis, type=None), ANALYSIS)
    case("malformed", "no keyId", with_signature(analysis, keyId=None), ANALYSIS)
    case("malformed", "covers is not a list of names", with_signature(scan, covers=[1, 2]))
    case("malformed", "value is padded base64url", with_signature(analysis, value=analysis["signature"]["value"] + "=="), ANALYSIS)
    case("malformed", "value is not 64 bytes", with_signature(analysis, value=b64url(bytes(63))), ANALYSIS)
    case("malformed", "the key set has no keys list", analysis, ANALYSIS, keys="no keys list")
    case("malformed", "the key of that id is not Ed25519", analysis, ANALYSIS, keys="ours, not Ed25519")
    case("malformed", "the key of that id has an x of 31 bytes", analysis, ANALYSIS, keys="ours, x of 31 bytes")
    case("malformed", "the key of that id has stray bits in x's last digit", analysis, ANALYSIS, keys="ours, x with stray bits")
    # 64 bytes are 86 digits with 4 bits to spare.
    case("malformed", "stray bits in the value's last digit", with_signature(analysis, value=stray_bits(analysis["signature"]["value"], 0b0001)), ANALYSIS)
    case("malformed", "the transaction held is no transaction", scan, binding={"transaction": b64(BAD_COUNT)})
    case("malformed", "a binding member no binding has", scan, binding={"acount": ACCOUNT}, loose=True)
    case("malformed", "a binding of an analysis", analysis, ANALYSIS, binding={"account": ACCOUNT}, loose=True)
    case("malformed", "a sequence's transaction held is no transaction", sequence, SEQUENCE, binding=held_in(SENT, BAD_COUNT, THIRD))
    case("malformed", "a sequence bound with a scan's transaction member", sequence, SEQUENCE, binding={"transaction": b64(SENT)}, loose=True)
    case("malformed", "a scan bound with a sequence's transactions member", scan, binding=held_in(SENT), loose=True)
    case("malformed", "a sequence's transactions held, not a list", sequence, SEQUENCE, binding={"transactions": b64(SENT)}, loose=True)
    case("malformed", "a scan bound with a sequence's mode member", scan, binding={"mode": "sequence"}, loose=True)
    case("malformed", "a guarded scan bound with a sequence's mode member", guarded, binding={**HELD, "mode": "sequence"}, loose=True)
    case("malformed", "a signer held, not text", scan, binding={"signer": 7}, loose=True)
    case("malformed", "no signer held (null), one signed", scan, binding={"signer": None}, loose=True)
    case("malformed", "a sequence's signer held, not text", sequence, SEQUENCE, binding={"signer": [SIGNER]}, loose=True)
    case("malformed", "a sequence's mode held, not text", sequence, SEQUENCE, binding={"mode": True}, loose=True)
    case("malformed", "a binding of an analysis, its signer", analysis, ANALYSIS, binding={"signer": SIGNER}, loose=True)
    case("malformed", "a monitor event served unsigned", {k: v for k, v in event.items() if k != "signature"}, EVENT)
    case("malformed", "a batch that is null", with_batch(in_batch, lambda b: b.clear()))
    case("malformed", "a batch salt of 15 bytes", with_batch(in_batch, lambda b: b.update(salt=b64url(bytes(15)))))
    case("malformed", "a batch path step of another side", with_batch(in_batch, lambda b: b["path"].__setitem__(0, {"up": b["path"][0]["left"]})))
    case("malformed", "a batch path step in upper-case hex", with_batch(in_batch, lambda b: b["path"][0].update(left=b["path"][0]["left"].upper())))
    case("malformed", "a batch path step naming both sides", with_batch(in_batch, lambda b: b["path"][0].update(right=b["path"][0]["left"])))
    case("malformed", "a batch path past 16 steps", with_batch(in_batch, lambda b: b.update(path=b["path"] * 9)))
    case("malformed", "a batch path of 17 steps, signed", deep_batched(scan, 17))
    case("malformed", "stray bits in the batch salt's last digit", with_batch(in_batch, lambda b: b.update(salt=stray_bits(b["salt"], 0b01))))
    case("malformed", "a batch with a member more", with_batch(in_batch, lambda b: b.update(index=1)))
    # unknown_key
    case("unknown_key", "another server's key set", scan, keys="another server's")
    case("unknown_key", "an empty key set", analysis, ANALYSIS, keys="empty")
    # wrong_type
    case("wrong_type", "a scan checked as an analysis", scan, ANALYSIS)
    case("wrong_type", "an analysis checked as a scan", analysis)
    case("wrong_type", "a signature relabelled as another type", with_signature(analysis, type=SCAN), ANALYSIS)
    case("wrong_type", "a monitor event checked as an analysis", event, ANALYSIS)
    case("wrong_type", "an analysis checked as a monitor event", analysis, EVENT)
    case("wrong_type", "a guarded scan checked as an analysis", guarded, ANALYSIS)
    case("wrong_type", "a scan checked as a guarded scan (it signed no guards)", scan, GUARDED_SCAN)
    case("wrong_type", "a sequence scan checked as a scan", sequence)
    case("wrong_type", "a sequence scan checked as a scan, bound to its first transaction", sequence, binding=HELD)
    case("wrong_type", "a sequence scan checked as a guarded scan", sequence, GUARDED_SCAN)
    case("wrong_type", "a sequence scan checked as an analysis", sequence, ANALYSIS)
    case("wrong_type", "a scan checked as a sequence scan", scan, SEQUENCE)
    case("wrong_type", "a scan checked as a sequence scan, bound to its transaction", scan, SEQUENCE, binding=held_in(SENT))
    case("wrong_type", "a guarded scan checked as a sequence scan", guarded, SEQUENCE)
    case("wrong_type", "a sequence scan relabelled as a scan, checked as a sequence scan", with_signature(sequence, type=SCAN), SEQUENCE)
    # covers_mismatch
    case("covers_mismatch", "a covered member left out of covers", short_covers)
    case("covers_mismatch", "a member added to covers", with_signature(scan, covers=covers + ["xray"]))
    case("covers_mismatch", "a member named twice in covers", with_signature(scan, covers=covers[1:] + [covers[2]]))
    case("covers_mismatch", "a covered member missing from data", {k: v for k, v in scan.items() if k != "requestId"})
    case("covers_mismatch", "a scan's members signed as an analysis", signed(scan, ANALYSIS, COVERS[SCAN]), ANALYSIS)
    case("covers_mismatch", "a monitor event without account in covers", with_signature(event, covers=[n for n in event_covers if n != "account"]), EVENT)
    case("covers_mismatch", "a monitor event whose changes are gone", {k: v for k, v in event.items() if k != "changes"}, EVENT)
    case("covers_mismatch", "a monitor event signed without its account", signed(event, EVENT, [n for n in COVERS[EVENT] if n != "account"]), EVENT)
    case("covers_mismatch", "a guarded scan whose guards are gone", {k: v for k, v in guarded.items() if k != "guards"})
    case("covers_mismatch", "a guarded scan's type over a scan's covers", signed(guarded_members, GUARDED_SCAN, COVERS[SCAN]))
    case("covers_mismatch", "a scan's type over a guarded scan's covers", signed(guarded_members, SCAN, COVERS[GUARDED_SCAN]))
    # Every scan type signs all of its data: a member nobody signed is refused, not verified
    # unsigned beside the signed members (a client may read it there) — guards under a scan
    # signed xray.scan.v2 (which covers none) as any other.
    case("covers_mismatch", "a scan with an unsigned member added", {**scan, "xray": {"score": {"value": 100}}})
    case("covers_mismatch", "a scan with an unsigned verdictOverride added", {**scan, "verdictOverride": "benign"})
    case("covers_mismatch", "a scan with an unsigned member added, bound", {**scan, "verdictOverride": "benign"}, binding={**HELD, "signer": SIGNER})
    case("covers_mismatch", "a scan with an unsigned member of null added", {**scan, "verdictOverride": None})
    case("covers_mismatch", "a guarded scan with an unsigned verdictOverride added", {**guarded, "verdictOverride": "benign"})
    case("covers_mismatch", "a guarded scan with an unsigned verdictOverride added, checked as a guarded scan", {**guarded, "verdictOverride": "benign"}, GUARDED_SCAN)
    case("covers_mismatch", "a batched scan with an unsigned verdictOverride added", {**in_batch, "verdictOverride": "benign"})
    case("covers_mismatch", "a sequence scan with an unsigned member added", {**sequence, "xray": {"score": {"value": 100}}}, SEQUENCE)
    case("covers_mismatch", "a sequence scan with an unsigned verdictOverride added", {**sequence, "verdictOverride": "benign"}, SEQUENCE)
    case("covers_mismatch", "a sequence scan with an unsigned guards member added", {**sequence, "guards": guarded["guards"]}, SEQUENCE)
    case("covers_mismatch", "a scan with an unsigned guards member added", {**scan, "guards": guarded["guards"]})
    case("covers_mismatch", "a guarded scan relabelled as a scan, its guards left out of covers", with_signature(guarded, type=SCAN, covers=sorted(COVERS[SCAN])))
    case("covers_mismatch", "a sequence scan's members signed as a scan", signed(sequence_members, SCAN, COVERS[SEQUENCE]))
    case("covers_mismatch", "a sequence scan relabelled as a scan", with_signature(sequence, type=SCAN))
    case("covers_mismatch", "a scan's members signed as a sequence scan", signed(scan_members, SEQUENCE, COVERS[SCAN]), SEQUENCE)
    case("covers_mismatch", "a sequence scan whose applied is gone", {k: v for k, v in sequence.items() if k != "applied"}, SEQUENCE)
    case("covers_mismatch", "a sequence scan without mode in covers", with_signature(sequence, covers=[n for n in sorted(COVERS[SEQUENCE]) if n != "mode"]), SEQUENCE)
    # bad_signature
    case("bad_signature", "one covered member changed", tampered)
    case("bad_signature", "one byte of the signature changed", with_signature(analysis, value=flipped_value(analysis)), ANALYSIS)
    case("bad_signature", "an account forged to match the binding", {**scan, "account": "acct_other"}, binding={"account": "acct_other"})
    case("bad_signature", "a monitor event's score drop changed", edit(event, lambda d: d["changes"]["score"].update(delta=-1)), EVENT)
    case("bad_signature", "a monitor event for another account", {**event, "account": "acct_other"}, EVENT)
    case("bad_signature", "a monitor event of another analysis", {**event, "analysisId": "an_other"}, EVENT)
    case("bad_signature", "a monitor event with another id", {**event, "id": "evt_other"}, EVENT)
    case("bad_signature", "a monitor event of another kind", {**event, "kind": "other_change"}, EVENT)
    case("bad_signature", "a monitor event of another monitor", {**event, "monitorId": "mon_other"}, EVENT)
    case("bad_signature", "a monitor event about another wallet", {**event, "wallet": "11111111111111111111111111111111"}, EVENT)
    case("bad_signature", "a monitor event made at another time", {**event, "createdAt": "2020-01-01T00:00:00.000Z"}, EVENT)
    case("bad_signature", "a batched scan, one covered member changed", edit(in_batch, lambda d: d["findings"][0].update(severity="low")))
    case("bad_signature", "a batched scan, a path sibling changed", with_batch(in_batch, lambda b: b["path"][1].update(right="0" * 64)))
    case("bad_signature", "a batched scan, its path's sides swapped", with_batch(in_batch, lambda b: b.update(path=[{"right": b["path"][0]["left"]}, {"left": b["path"][1]["right"]}])))
    case("bad_signature", "a batched scan, another salt", with_batch(in_batch, lambda b: b.update(salt=b64url(bytes(16)))))
    case("bad_signature", "a batched scan without its batch (read as a direct signature)", with_signature(in_batch, batch=None))
    case("bad_signature", "a direct signature given a batch", with_signature(scan, batch=in_batch["signature"]["batch"]))
    case("bad_signature", "a sequence scan, one transaction's verdict changed", edit(sequence, lambda d: d["transactions"][2].update(verdict="malicious")), SEQUENCE)
    case("bad_signature", "a sequence scan, what applied changed", edit(sequence, lambda d: d["applied"].update(transactions=[0])), SEQUENCE)
    case("bad_signature", "a sequence scan, its mode changed", {**sequence, "mode": "bundle"}, SEQUENCE)
    case("bad_signature", "a sequence scan, its last transaction dropped", edit(sequence, lambda d: d["transactions"].pop()), SEQUENCE, binding=held_in(SENT, SECOND))
    case("bad_signature", "a guarded scan whose SOL guard was lowered", edit(guarded, lambda d: d["guards"]["guardInstructions"][0]["asserts"][0].update(lamports=1)))
    # digest_mismatch, account_mismatch, origin_mismatch: a verified scan about another request.
    case("digest_mismatch", "one byte of the transaction's message changed", scan, binding={"transaction": b64(CHANGED_MESSAGE)})
    case("digest_mismatch", "a guarded scan, one byte of the transaction's message changed", guarded, binding={"transaction": b64(CHANGED_MESSAGE)})
    case("digest_mismatch", "a sequence scan, one transaction fewer held", sequence, SEQUENCE, binding=held_in(SENT, SECOND))
    case("digest_mismatch", "a sequence scan, one transaction more held", sequence, SEQUENCE, binding=held_in(SENT, SECOND, THIRD, SENT))
    case("digest_mismatch", "a sequence scan, no transaction held", sequence, SEQUENCE, binding={"transactions": []})
    case("digest_mismatch", "a sequence scan, two transactions held swapped", sequence, SEQUENCE, binding=held_in(SECOND, SENT, THIRD))
    case("digest_mismatch", "a sequence scan, one transaction held swapped for another", sequence, SEQUENCE, binding=held_in(SENT, ELSEWHERE, THIRD))
    case("digest_mismatch", "a sequence scan, one byte of its second transaction's message changed", sequence, SEQUENCE, binding=held_in(SENT, SECOND_CHANGED, THIRD))
    case("digest_mismatch", "a sequence scan signed over two, three held", sequence_data(ORIGIN, (MESSAGE, SECOND_MESSAGE)), SEQUENCE, binding=HELD_SEQUENCE)
    case("digest_mismatch", "a sequence scan whose item signed no digest", signed(edit(sequence_members, lambda d: d["transactions"][1]["transaction"].pop("messageSha256")), SEQUENCE, COVERS[SEQUENCE]), SEQUENCE, binding=HELD_SEQUENCE)
    case("account_mismatch", "a sequence scan of another account", sequence, SEQUENCE, binding={**HELD_SEQUENCE, "account": "acct_other"})
    case("origin_mismatch", "a sequence scan, another origin", sequence, SEQUENCE, binding={**HELD_SEQUENCE, "origin": "phantom.app.claim-now.io"})
    case("origin_mismatch", "a sequence scan, no origin held, one signed", sequence, SEQUENCE, binding={"origin": None})
    case("account_mismatch", "another account", scan, binding={"account": "acct_other"})
    case("origin_mismatch", "another origin", scan, binding={"origin": "phantom.app.claim-now.io"})
    case("origin_mismatch", "no origin held, one signed", scan, binding={"origin": None})
    case("origin_mismatch", "an origin held, none signed", scan_data(None), binding={"origin": ORIGIN})
    case("signer_mismatch", "another signer", scan, binding={"signer": OTHER_SIGNER})
    case("signer_mismatch", "a scan bound to its request, another signer", scan, binding={**HELD, "signer": OTHER_SIGNER})
    case("signer_mismatch", "a signer held in another case", scan, binding={"signer": SIGNER.lower()})
    case("signer_mismatch", "a guarded scan, another signer", guarded, binding={"signer": OTHER_SIGNER})
    case("signer_mismatch", "a sequence scan, another signer", sequence, SEQUENCE, binding={**HELD_SEQUENCE, "signer": OTHER_SIGNER})
    case("signer_mismatch", "a sequence scan, an empty signer held", sequence, SEQUENCE, binding={"signer": ""})
    case("mode_mismatch", "a sequence scan signed sequence, bound to bundle", sequence, SEQUENCE, binding={**HELD_SEQUENCE, "mode": "bundle"})
    case("mode_mismatch", "a sequence scan signed bundle, bound to sequence", bundle, SEQUENCE, binding={"mode": "sequence"})
    case("mode_mismatch", "a sequence scan, a mode no scan has held", sequence, SEQUENCE, binding={"mode": "parallel"})
    # Precedence: wrong in two ways, the earlier reason.
    case("malformed", "precedence: a padded value, from another server", with_signature(scan, value=scan["signature"]["value"] + "=="), keys="another server's")
    case("malformed", "precedence: a member changed, the transaction held is none", tampered, binding={"transaction": b64(BAD_COUNT)})
    case("malformed", "precedence: a malformed batch, from another server", with_batch(in_batch, lambda b: b.update(salt="")), keys="another server's")
    case("malformed", "precedence: a malformed batch, checked as another type", with_batch(in_batch, lambda b: b.update(salt="")), ANALYSIS)
    case("unknown_key", "precedence: another server's, checked as another type", scan, ANALYSIS, keys="another server's")
    case("wrong_type", "precedence: another type, covers edited", short_covers, ANALYSIS)
    case("unknown_key", "precedence: unsigned guards added, from another server", {**scan, "guards": guarded["guards"]}, keys="another server's")
    case("wrong_type", "precedence: unsigned guards added, checked as another type", {**scan, "guards": guarded["guards"]}, ANALYSIS)
    case("covers_mismatch", "precedence: covers edited, a member changed", with_signature(tampered, covers=covers[1:]))
    case("bad_signature", "precedence: a member changed, another transaction", tampered, binding={"transaction": b64(CHANGED_MESSAGE)})
    case("digest_mismatch", "precedence: another transaction, another account", scan, binding={**HELD, "transaction": b64(CHANGED_MESSAGE), "account": "acct_other"})
    case("account_mismatch", "precedence: another account, another origin", scan, binding={"account": "acct_other", "origin": "evil.example"})
    case("malformed", "precedence: a sequence, a transaction held is none, from another server", sequence, SEQUENCE, keys="another server's", binding=held_in(BAD_COUNT))
    case("wrong_type", "precedence: a sequence checked as a scan, covers edited", with_signature(sequence, covers=sorted(COVERS[SEQUENCE])[1:]))
    case("bad_signature", "precedence: a sequence, a member changed, one transaction fewer held", edit(sequence, lambda d: d["findings"].clear()), SEQUENCE, binding=held_in(SENT, SECOND))
    case("digest_mismatch", "precedence: a sequence, transactions swapped, another account", sequence, SEQUENCE, binding={**held_in(SECOND, SENT, THIRD), "account": "acct_other"})
    case("account_mismatch", "precedence: a sequence, another account, another origin", sequence, SEQUENCE, binding={"account": "acct_other", "origin": "evil.example"})
    case("origin_mismatch", "precedence: another origin, another signer", scan, binding={"origin": "evil.example", "signer": OTHER_SIGNER})
    case("origin_mismatch", "precedence: a sequence, another origin, another signer", sequence, SEQUENCE, binding={"origin": "evil.example", "signer": OTHER_SIGNER})
    case("account_mismatch", "precedence: another account, another signer", scan, binding={"account": "acct_other", "signer": OTHER_SIGNER})
    case("digest_mismatch", "precedence: a sequence, transactions swapped, another signer, another mode", sequence, SEQUENCE, binding={**held_in(SECOND, SENT, THIRD), "signer": OTHER_SIGNER, "mode": "bundle"})
    case("signer_mismatch", "precedence: a sequence, another signer, another mode", sequence, SEQUENCE, binding={"signer": OTHER_SIGNER, "mode": "bundle"})
    case("origin_mismatch", "precedence: a sequence, another origin, another mode", sequence, SEQUENCE, binding={"origin": None, "mode": "bundle"})
    case("bad_signature", "precedence: a signer forged to match the binding, another mode", {**sequence, "signer": OTHER_SIGNER}, SEQUENCE, binding={"signer": OTHER_SIGNER, "mode": "bundle"})
    case("covers_mismatch", "precedence: an unsigned member added, a covered member changed", {**tampered, "verdictOverride": "benign"})
    case("covers_mismatch", "precedence: a sequence, an unsigned member added, its mode changed", {**sequence, "mode": "bundle", "verdictOverride": "benign"}, SEQUENCE)
    case("covers_mismatch", "precedence: an unsigned member added, another signer", {**scan, "verdictOverride": "benign"}, binding={"signer": OTHER_SIGNER})
    case("unknown_key", "precedence: an unsigned member added, from another server", {**scan, "verdictOverride": "benign"}, keys="another server's")
    case("wrong_type", "precedence: a sequence with an unsigned member added, checked as a scan", {**sequence, "verdictOverride": "benign"})
    case("malformed", "precedence: a signer held not text, an unsigned member added", {**scan, "verdictOverride": "benign"}, binding={"signer": 7}, loose=True)
    case("malformed", "precedence: a scan's mode held, another signer", scan, binding={"signer": OTHER_SIGNER, "mode": "bundle"}, loose=True)
    return out


def document():
    return {
        "about": "made by tests/signing/refusals.py (its docstring says how to read it); do not edit",
        "reasons": REASONS,
        "keySets": KEY_SETS,
        "cases": cases(),
    }


def text():
    """The document, one case (or key set) a line."""
    doc = document()
    line = lambda value: json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    key_sets = ",\n".join(f"  {line(name)}: {line(keys)}" for name, keys in doc["keySets"].items())
    cases = ",\n".join(f"  {line(case)}" for case in doc["cases"])
    return (
        f'{{"about": {line(doc["about"])},\n"reasons": {line(doc["reasons"])},\n'
        f'"keySets": {{\n{key_sets}\n}},\n"cases": [\n{cases}\n]}}\n'
    )


def main():
    if sys.argv[1:] == ["--check"]:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text():
            print(f"{OUT} is not current: run python3 tests/signing/refusals.py", file=sys.stderr)
            sys.exit(1)
        return
    OUT.write_text(text(), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
