#!/usr/bin/env python3
"""An independent verifier of Wallet X-Ray's signed reports, written from the README and
docs/openapi.json alone (no project code): Ed25519 from ``cryptography``, RFC 8785 (JCS) from
``rfc8785`` (pinned in requirements.txt beside this file).

Given a report (a poll's, webhook's or scan's ``{"data": …}`` body; a monitor event's webhook
body ``{"data": {"event": …}}``, whose event is what is signed), the type it is expected to be
(``--type``: ``xray.analysis.v1``, ``xray.comparison.v1``, ``xray.scan.v2``, ``xray.scan.v3``,
``xray.scan_sequence.v1`` or ``xray.monitor_event.v1``) and the key set's URL (``file://`` too), it:

1. fetches ``/.well-known/xray-keys.json`` (no API key) and finds the JWK named by
   ``data.signature.keyId`` (current or retired);
2. checks that ``signature.type`` is the expected type and ``signature.covers`` exactly that
   type's member list (the report's own claims are not trusted) — a scan has two types:
   ``xray.scan.v2`` expected is a scan, either ``xray.scan.v2`` or ``xray.scan.v3`` (one asked
   with ``guards``), the signature's type among those two fixing the exact list, never another
   type; ``xray.scan.v3`` expected is a guarded scan only; a sequence scan
   (``xray.scan_sequence.v1``) is never a scan, nor a scan one —; for every scan type, that
   ``data`` has no member besides that list and ``signature`` (a member nobody signed, such as
   ``guards`` beside an ``xray.scan.v2`` signature, is ``covers_mismatch``; an analysis, a
   comparison or a monitor event may carry unsigned members), builds the object of those
   members of ``data`` plus ``"type"`` (the type), turns integers outside ±(2^53 − 1) into
   floats (JCS's number rule; ``rfc8785`` refuses such integers), canonicalizes it with JCS
   and checks the signature — over those bytes, or for a batched signature (a scan's: ``batch``
   with a salt and a Merkle path) over the envelope of the root they lead to; only those
   members count as verified;
3. for a scan, with any of ``--transaction BASE64|@FILE`` (the transaction sent to the scan,
   signed since or not), ``--account ACCT`` (the account whose key asked), ``--origin HOST``
   (the origin host the scan judged; ``none``: the request sent no origin) and ``--signer
   ADDRESS`` (the wallet it asked about, base58), checks the verified members against them, in
   this order: the SHA-256 of the transaction's message — its bytes after the signatures, a
   canonical compact-u16 count ``n`` then ``n`` × 64 bytes — is ``transaction.messageSha256``,
   ``account``, ``origin`` and ``signer`` are those given; then that the
   transaction with one byte of its message changed is refused (``digest_mismatch``), and
   (when it has signatures) that it with other signature bytes is still bound; for a sequence
   scan, ``--transactions B64,B64,…|@FILE`` (one base64 a line) instead of ``--transaction``: the
   signed ``transactions`` must have exactly as many items, item *i*'s
   ``transaction.messageSha256`` the digest of transaction *i*'s message — and ``--mode
   sequence|bundle`` too (a sequence scan's only: the signed ``mode``, checked last); then that
   one fewer held, one byte of the last one's message changed and (with two or more) two
   swapped are refused (``digest_mismatch``);
4. changes one byte of the report's text (a digit inside the covered document) and checks that
   the changed report is refused (``bad_signature``);
5. checks that the report is refused as any other type that is not its own (``wrong_type``; a
   guarded scan is a scan too, a sequence scan is not), and that a member added to its
   ``data`` is not verified: a scan's (any scan type's) refused (``covers_mismatch``), another
   report's left out of the verified members.

A refusal names the first reason that applies, in the README's order ("Signed reports": why a
verifier refuses): ``malformed`` (the report, key set or transaction given is not its shape; an
unsigned report too; a binding member its type's binding has not, a binding's ``signer`` or
``mode`` that is not text), ``unknown_key``, ``wrong_type``, ``covers_mismatch``, ``bad_signature``, then a
scan's ``digest_mismatch``, ``account_mismatch``, ``origin_mismatch``, ``signer_mismatch``, and a
sequence scan's ``mode_mismatch`` (``check``).

Prints ``verified <keyId>`` (with a binding ``bound to <what was given>``, ``changed message
refused`` and ``re-signed transaction still bound``), ``tampered copy refused``, ``as another
type refused`` and ``added member not verified`` (a scan's: ``… (refused: covers_mismatch)``); or
``NOT verified: <reason>`` and exits 1 (1 too when a self-check fails); 2 for a binding option
with another type than a scan (``--mode``: than a sequence scan).
Run by ``tests/integration/api/signing.rs`` against a real server, and by
``tests/signing/test_binding.py`` against a scan signed with a key it makes.

  python3 tests/signing/verify_report.py --keys-url http://127.0.0.1:8080/.well-known/xray-keys.json \\
      --type xray.analysis.v1 report.json
  python3 tests/signing/verify_report.py --keys-url http://127.0.0.1:8080/.well-known/xray-keys.json \\
      --type xray.scan.v2 --transaction @tx.b64 --account acct_... --origin none --signer <base58> scan.json
  python3 tests/signing/verify_report.py --keys-url http://127.0.0.1:8080/.well-known/xray-keys.json \\
      --type xray.scan_sequence.v1 --transactions @txs.b64 --account acct_... --origin none \\
      --signer <base58> --mode sequence sequence.json
(a scan asked with ``guards``, ``xray.scan.v3``, verifies with ``--type xray.scan.v2`` too).
"""

import argparse
import base64
import hashlib
import json
import re
import sys
import urllib.request

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

# The members each type's signature covers, exactly (README, "Signed reports").
COVERS = {
    "xray.analysis.v1": ["analysisId", "wallet", "completedAt", "xray"],
    "xray.comparison.v1": ["pairId", "walletA", "walletB", "completedAt", "comparison"],
    "xray.scan.v2": [
        "verdict", "signer", "account", "origin", "transaction", "findings", "effects", "instructions",
        "simulation", "counterparties", "engineVersions", "policy", "scannedAt", "requestId",
    ],
    # A scan asked with guards: a scan's members and ``guards``.
    "xray.scan.v3": [
        "verdict", "signer", "account", "origin", "transaction", "findings", "effects", "instructions",
        "simulation", "counterparties", "engineVersions", "policy", "guards", "scannedAt", "requestId",
    ],
    # A sequence scan (``transactions``): each transaction's verdict, transaction (its
    # messageSha256), findings, effects, instructions and simulation inside ``transactions``.
    "xray.scan_sequence.v1": [
        "verdict", "signer", "mode", "transactions", "findings", "effects", "applied", "counterparties",
        "engineVersions", "policy", "origin", "account", "scannedAt", "requestId",
    ],
    "xray.monitor_event.v1": [
        "id", "kind", "account", "monitorId", "wallet", "analysisId", "createdAt", "changes",
    ],
}
SCAN = "xray.scan.v2"
GUARDED_SCAN = "xray.scan.v3"
# A scan's two types: expecting ``SCAN`` (a scan) accepts either, its signature's type picking
# its covers; expecting ``GUARDED_SCAN`` accepts a guarded scan only. A binding applies to both.
SCAN_TYPES = (SCAN, GUARDED_SCAN)
# A sequence scan: neither scan type accepts it, nor it them; bound to ``transactions``.
SEQUENCE = "xray.scan_sequence.v1"
EVENT = "xray.monitor_event.v1"
# Why a report is refused, in the order checked (README, "Signed reports"): the first that applies.
REASONS = [
    "malformed", "unknown_key", "wrong_type", "covers_mismatch", "bad_signature",
    "digest_mismatch", "account_mismatch", "origin_mismatch", "signer_mismatch", "mode_mismatch",
]
# What a scan can be bound to, and a sequence scan.
BINDING = ("transaction", "account", "origin", "signer")
SEQUENCE_BINDING = ("transactions", "account", "origin", "signer", "mode")
# Binding members that must be text when given.
TEXT_BINDING = ("signer", "mode")
SIGNATURE_BYTES = 64
# A batched signature's envelope type and the longest path a verifier reads.
BATCH_TYPE = "xray.batch.v1"
PATH_STEPS_MAX = 16
# The largest integer JCS (an IEEE double) holds exactly.
SAFE_INTEGER_MAX = 2**53 - 1


class Refused(Exception):
    """A refusal: ``reason`` is one of ``REASONS``."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def b64url(text, length):
    """Unpadded base64url of ``length`` bytes only, as the Rust and TypeScript verifiers read it."""
    if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z0-9_-]*", text) or len(text) % 4 == 1:
        raise Refused("malformed")
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    # Decoding drops stray bits of the last digit (Rust refuses them): encoding back shows them.
    if len(raw) != length or base64.urlsafe_b64encode(raw).decode().rstrip("=") != text:
        raise Refused("malformed")
    return raw


def loads(text):
    """JSON proper: no ``NaN``/``Infinity``, no number past a double (JCS could not write it)."""
    def refuse(_):
        raise ValueError("not JSON")

    def finite(digits):
        if abs(float(digits)) == float("inf"):
            raise ValueError("past a double")
        return float(digits)

    return json.loads(text, parse_constant=refuse, parse_float=finite)


def as_jcs_numbers(value):
    """``value`` with every integer outside ±(2^53 − 1) as the double JCS reads it as."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > SAFE_INTEGER_MAX:
        return float(value)
    if isinstance(value, dict):
        return {k: as_jcs_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_jcs_numbers(v) for v in value]
    return value


def accepts(expected_type, signed_type):
    """Whether a report signed as ``signed_type`` is one of ``expected_type``: the same type, or
    either scan type when a scan (``SCAN``) is expected."""
    return signed_type == expected_type or (expected_type == SCAN and signed_type in SCAN_TYPES)


def check(data, key_set, expected_type, binding=None):
    """The covered members of ``data`` when it is a signed report of ``expected_type`` that
    verifies with a key of ``key_set`` (and, a scan's, is about ``binding``: a dict of
    ``transaction`` base64, ``account``, ``origin``, ``signer`` (text), those given; a sequence
    scan's: of ``transactions``, a list of base64 in the order sent, ``account``, ``origin``,
    ``signer`` and ``mode`` (text)); else ``Refused`` with the first reason, in the README's
    order, that applies. Expecting a scan (``SCAN``), a guarded scan (``GUARDED_SCAN``) is one
    too, checked against its own covers; a sequence scan (``SEQUENCE``) is neither. A scan of
    any type whose ``data`` carries a member it does not cover (``signature`` aside) is
    ``covers_mismatch``."""
    binding = binding or {}
    # malformed: the binding, the report, the key set
    members = SEQUENCE_BINDING if expected_type == SEQUENCE else BINDING
    if any(name not in members for name in binding) or (binding and expected_type not in (*SCAN_TYPES, SEQUENCE)):
        raise Refused("malformed")
    if any(name in binding and not isinstance(binding[name], str) for name in TEXT_BINDING):
        raise Refused("malformed")
    if "transaction" in binding:
        digest = held_digest(binding["transaction"])
    if "transactions" in binding:
        if not isinstance(binding["transactions"], list):
            raise Refused("malformed")
        digests = [held_digest(transaction) for transaction in binding["transactions"]]
    signature = data.get("signature") if isinstance(data, dict) else None
    if not isinstance(signature, dict) or signature.get("alg") != "EdDSA" or signature.get("canon") != "JCS":
        raise Refused("malformed")
    if not isinstance(signature.get("type"), str) or not isinstance(signature.get("keyId"), str):
        raise Refused("malformed")
    covers = signature.get("covers")
    if not isinstance(covers, list) or not all(isinstance(name, str) for name in covers):
        raise Refused("malformed")
    value = b64url(signature.get("value"), 64)
    batch = batch_of(signature)
    keys = key_set.get("keys") if isinstance(key_set, dict) else None
    if not isinstance(keys, list):
        raise Refused("malformed")
    # unknown_key: the first key of that id, as the other verifiers take it
    jwk = next((k for k in keys if isinstance(k, dict) and k.get("kid") == signature["keyId"]), None)
    if jwk is None:
        raise Refused("unknown_key")
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        raise Refused("malformed")
    key = Ed25519PublicKey.from_public_bytes(b64url(jwk.get("x"), 32))
    # wrong_type, covers_mismatch: the signature's type, when it is one the expected type accepts
    if not accepts(expected_type, signature["type"]):
        raise Refused("wrong_type")
    report_type = signature["type"]
    expected = COVERS[report_type]
    if len(covers) != len(expected) or set(covers) != set(expected) or any(n not in data for n in expected):
        raise Refused("covers_mismatch")
    # A scan (any scan type) signs all of its data: a member it does not cover is refused, not
    # verified unsigned beside the signed members (a client may read it there) — guards beside
    # an xray.scan.v2 signature, which covers none, too.
    if report_type in (*SCAN_TYPES, SEQUENCE) and any(n not in expected and n != "signature" for n in data):
        raise Refused("covers_mismatch")
    covered = {name: data[name] for name in expected}
    # bad_signature
    try:
        key.verify(value, signed_message(rfc8785.dumps(as_jcs_numbers({**covered, "type": report_type})), batch))
    except InvalidSignature:
        raise Refused("bad_signature") from None
    except (TypeError, ValueError, OverflowError, rfc8785.CanonicalizationError):
        raise Refused("malformed") from None
    # the binding, on what the signature attests
    if "transaction" in binding:
        signed = covered["transaction"].get("messageSha256") if isinstance(covered["transaction"], dict) else None
        if digest != signed:
            raise Refused("digest_mismatch")
    # A sequence's: exactly as many transactions judged as held, each message in its place.
    if "transactions" in binding:
        items = covered["transactions"]
        if not isinstance(items, list) or len(items) != len(digests):
            raise Refused("digest_mismatch")
        for item, held in zip(items, digests):
            transaction = item.get("transaction") if isinstance(item, dict) else None
            if not isinstance(transaction, dict) or transaction.get("messageSha256") != held:
                raise Refused("digest_mismatch")
    if "account" in binding and covered["account"] != binding["account"]:
        raise Refused("account_mismatch")
    if "origin" in binding and covered["origin"] != binding["origin"]:
        raise Refused("origin_mismatch")
    if "signer" in binding and covered["signer"] != binding["signer"]:
        raise Refused("signer_mismatch")
    if "mode" in binding and covered["mode"] != binding["mode"]:
        raise Refused("mode_mismatch")
    return covered


def held_digest(text):
    """SHA-256 (hex) of the message of a transaction held (base64); ``malformed`` when it is none."""
    try:
        transaction = base64_bytes(text)
        return hashlib.sha256(transaction[signatures_end(transaction):]).hexdigest()
    except ValueError:
        raise Refused("malformed") from None


def batch_of(signature):
    """A batched signature's ``(salt, path)`` — ``batch: {"salt": 16 bytes base64url, "path":
    [{"left"|"right": 64 lowercase hex digits}…]}``, at most 16 steps, nothing else — or
    ``None`` for a direct signature (no ``batch`` member)."""
    if "batch" not in signature:
        return None
    batch = signature["batch"]
    if not isinstance(batch, dict) or set(batch) != {"salt", "path"}:
        raise Refused("malformed")
    salt = b64url(batch["salt"], 16)
    path = batch["path"]
    if not isinstance(path, list) or len(path) > PATH_STEPS_MAX:
        raise Refused("malformed")
    steps = []
    for step in path:
        if not isinstance(step, dict) or len(step) != 1:
            raise Refused("malformed")
        ((side, digits),) = step.items()
        if side not in ("left", "right") or not isinstance(digits, str) or not re.fullmatch(r"[0-9a-f]{64}", digits):
            raise Refused("malformed")
        steps.append((side, bytes.fromhex(digits)))
    return salt, steps


def signed_message(message, batch):
    """What the Ed25519 signature is over: the report's message, or — batched — the envelope of
    the root its salted leaf's path leads to: ``leaf = SHA-256(0x00 ‖ salt ‖ message)``, each
    step ``SHA-256(0x01 ‖ left ‖ right)``, the envelope the JCS of ``{"root": hex, "type":
    "xray.batch.v1"}``."""
    if batch is None:
        return message
    salt, steps = batch
    node = hashlib.sha256(b"\x00" + salt + message).digest()
    for side, sibling in steps:
        pair = sibling + node if side == "left" else node + sibling
        node = hashlib.sha256(b"\x01" + pair).digest()
    return rfc8785.dumps({"root": node.hex(), "type": BATCH_TYPE})


def reason_of(data, key_set, expected_type, binding=None):
    """``check``'s reason for refusing, or ``None`` when it accepts."""
    try:
        check(data, key_set, expected_type, binding)
    except Refused as refused:
        return refused.reason
    return None


def base64_bytes(text):
    """Standard base64 as the scan endpoint reads it: padding optional, nothing else."""
    if not isinstance(text, str):
        raise ValueError("not base64")
    digits = text.rstrip("=")
    if not re.fullmatch(r"[A-Za-z0-9+/]*", digits) or len(digits) % 4 == 1:
        raise ValueError("not base64")
    raw = base64.b64decode(digits + "=" * (-len(digits) % 4))
    # Decoding drops stray bits of the last digit: encoding back shows them.
    if base64.b64encode(raw).decode().rstrip("=") != digits:
        raise ValueError("not base64")
    return raw


def signatures_end(transaction):
    """Where a serialized transaction's message starts: after its compact-u16 signature count
    ``n`` (1–3 bytes of 7 bits, least significant first, 0x80 when another follows; canonical,
    at most 0xffff) and ``n`` signatures. ``ValueError`` when malformed."""
    count = 0
    for i in range(3):
        if i >= len(transaction):
            raise ValueError("the signature count is cut short")
        byte = transaction[i]
        if byte == 0 and i > 0:
            raise ValueError("the signature count is not canonical")
        count |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            break
    else:
        raise ValueError("the signature count is longer than 3 bytes")
    if count > 0xFFFF:
        raise ValueError("the signature count is past 0xffff")
    end = i + 1 + SIGNATURE_BYTES * count
    if end > len(transaction):
        raise ValueError(f"{count} signatures do not fit in {len(transaction)} bytes")
    return end


def signed_object(body, expected_type):
    """What ``body``'s signature is in: its ``data``, or — a monitor event's webhook body (or
    redelivery answer), ``{"data": {"event": …}}`` — the event in it."""
    data = body.get("data") if isinstance(body, dict) else None
    if expected_type == EVENT and isinstance(data, dict) and "signature" not in data and isinstance(data.get("event"), dict):
        return data["event"]
    return data


def tampered(text, expected_type):
    """The report's text with one digit of its covered document changed (a byte, not a parse)."""
    data = signed_object(json.loads(text), expected_type)
    document = next(name for name in COVERS[expected_type] if isinstance(data[name], dict))
    # The member's name followed by a colon: its key, not its mention in ``covers``.
    start = re.search(rf'"{document}"\s*:', text).end()
    for i in range(start, len(text)):
        if text[i].isdigit():
            return text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:]
    raise SystemExit("no digit to change in the document")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys-url", required=True)
    parser.add_argument("--type", required=True, choices=sorted(COVERS), help="the type the report must be")
    parser.add_argument("--transaction", help="a scan's: the transaction sent, base64 (@FILE: read from FILE)")
    parser.add_argument(
        "--transactions",
        help="a sequence scan's: the transactions sent, in order, base64 separated by commas (@FILE: one a line)",
    )
    parser.add_argument("--account", help="a scan's: the account whose key asked for it")
    parser.add_argument("--origin", help="a scan's: the origin host it judged ('none': the request sent none)")
    parser.add_argument("--signer", help="a scan's or sequence scan's: the signer it asked about (base58 address)")
    parser.add_argument("--mode", help="a sequence scan's: the mode it asked for (sequence or bundle)")
    parser.add_argument("report")
    args = parser.parse_args()
    binding = {}
    if args.transaction is not None:
        sent = args.transaction
        if sent.startswith("@"):
            with open(sent[1:], encoding="utf-8") as f:
                sent = f.read()
        binding["transaction"] = sent.strip()
    if args.transactions is not None:
        sent = args.transactions
        if sent.startswith("@"):
            with open(sent[1:], encoding="utf-8") as f:
                binding["transactions"] = [line.strip() for line in f if line.strip()]
        else:
            binding["transactions"] = [part.strip() for part in sent.split(",")]
    if args.account is not None:
        binding["account"] = args.account
    if args.origin is not None:
        binding["origin"] = None if args.origin == "none" else args.origin
    if args.signer is not None:
        binding["signer"] = args.signer
    if args.mode is not None:
        binding["mode"] = args.mode
    if binding and args.type not in (*SCAN_TYPES, SEQUENCE):
        parser.error(
            f"--transaction(s), --account, --origin, --signer and --mode bind a scan ({', '.join(SCAN_TYPES)}) "
            "or a sequence scan only"
        )
    if "mode" in binding and args.type != SEQUENCE:
        parser.error(f"--mode binds a sequence scan ({SEQUENCE}) only")
    if "transaction" in binding and args.type == SEQUENCE:
        parser.error("a sequence scan is bound with --transactions")
    if "transactions" in binding and args.type != SEQUENCE:
        parser.error(f"--transactions binds a sequence scan ({SEQUENCE}) only: a scan's is --transaction")
    with urllib.request.urlopen(args.keys_url, timeout=10) as answer:
        key_set = json.load(answer)
    with open(args.report, "rb") as f:
        text = f.read()
    try:
        body = loads(text)
    except ValueError:  # UnicodeDecodeError too
        body = None
    data = signed_object(body, args.type)
    try:
        covered = check(data, key_set, args.type, binding)
    except Refused as refused:
        print(f"NOT verified: {refused.reason}")
        sys.exit(1)
    print(f"verified {data['signature']['keyId']}")
    if binding:
        print(f"bound to {', '.join(binding)}")
    if "transaction" in binding:
        transaction = base64_bytes(binding["transaction"])
        changed = bytearray(transaction)
        changed[-1] ^= 0x01
        if reason_of(data, key_set, args.type, {"transaction": base64.b64encode(changed).decode()}) != "digest_mismatch":
            print("changed message ACCEPTED (or refused for another reason)")
            sys.exit(1)
        print("changed message refused")
        start = signatures_end(transaction)
        # Its last signature's bytes made other, when it has one: as if signed after the scan.
        if start > SIGNATURE_BYTES:
            resigned = bytearray(transaction)
            last = slice(start - SIGNATURE_BYTES, start)
            resigned[last] = bytes(b ^ 0xFF for b in transaction[last])
            if reason_of(data, key_set, args.type, {"transaction": base64.b64encode(resigned).decode()}) is not None:
                print("re-signed transaction NOT bound")
                sys.exit(1)
            print("re-signed transaction still bound")
    if "transactions" in binding:
        held = binding["transactions"]
        last = bytearray(base64_bytes(held[-1]))
        last[-1] ^= 0x01
        others = {
            "one fewer": held[:-1],
            "the last one's message changed": [*held[:-1], base64.b64encode(last).decode()],
        }
        if len(held) > 1:
            others["two swapped"] = [held[1], held[0], *held[2:]]
        for what, transactions in others.items():
            # Two equal messages swapped are the same sequence: nothing to refuse.
            if what == "two swapped" and held_digest(held[0]) == held_digest(held[1]):
                continue
            if reason_of(data, key_set, args.type, {"transactions": transactions}) != "digest_mismatch":
                print(f"{what} ACCEPTED (or refused for another reason)")
                sys.exit(1)
        print(f"other transactions refused ({', '.join(others)})")
    if reason_of(signed_object(loads(tampered(text.decode(), args.type)), args.type), key_set, args.type) != "bad_signature":
        print("tampered copy ACCEPTED (or refused for another reason than bad_signature)")
        sys.exit(1)
    print("tampered copy refused")
    signed_type = data["signature"]["type"]
    others = [other for other in COVERS if other != args.type and not accepts(other, signed_type)]
    if any(reason_of(data, key_set, other) != "wrong_type" for other in others):
        print("as another type ACCEPTED (or refused for another reason than wrong_type)")
        sys.exit(1)
    print("as another type refused")
    # A scan (any scan type) signs all of its data: a member added is refused; another report's
    # is left out of the verified members.
    added = {**data, "addedMember": {"unsigned": True}}
    if signed_type in (*SCAN_TYPES, SEQUENCE):
        if reason_of(added, key_set, args.type) != "covers_mismatch":
            print("added member ACCEPTED (or refused for another reason than covers_mismatch)")
            sys.exit(1)
        print("added member not verified (refused: covers_mismatch)")
        return
    try:
        covered = check(added, key_set, args.type)
    except Refused:
        covered = None
    if covered is None or "addedMember" in covered:
        print("added member VERIFIED (or the signed members no longer verify)")
        sys.exit(1)
    print("added member not verified")


if __name__ == "__main__":
    main()
