#!/usr/bin/env python3
"""An independent verifier of Wallet X-Ray's signed reports, written from the README and
docs/openapi.json alone (no project code): Ed25519 from ``cryptography``, RFC 8785 (JCS) from
``rfc8785`` (pinned in requirements.txt beside this file).

Given a report (a poll's, webhook's or scan's ``{"data": …}`` body), the type it is expected to
be (``--type``: ``xray.analysis.v1``, ``xray.comparison.v1`` or ``xray.scan.v2``) and the key
set's URL (``file://`` too), it:

1. fetches ``/.well-known/xray-keys.json`` (no API key) and finds the JWK named by
   ``data.signature.keyId`` (current or retired);
2. checks that ``signature.type`` is the expected type and ``signature.covers`` exactly that
   type's member list (the report's own claims are not trusted), builds the object of those
   members of ``data`` plus ``"type"`` (the type), turns integers outside ±(2^53 − 1) into
   floats (JCS's number rule; ``rfc8785`` refuses such integers), canonicalizes it with JCS
   and checks the signature; only those members count as verified;
3. changes one byte of the report's text (a digit inside the covered document) and checks that
   the changed report is refused;
4. checks that the report is refused as any other type, and that a member added to its
   ``data`` is not among the verified members;
5. for a scan, with any of ``--transaction BASE64|@FILE`` (the transaction sent to the scan,
   signed since or not), ``--account ACCT`` (the account whose key asked) and ``--origin HOST``
   (the origin host the scan judged; ``none``: the request sent no origin), checks the verified
   members against them: the SHA-256 of the transaction's message — its bytes after the
   signatures, a canonical compact-u16 count ``n`` then ``n`` × 64 bytes — is
   ``transaction.messageSha256``, ``account`` and ``origin`` are those given; then that the
   transaction with one byte of its message changed is refused, and (when it has signatures)
   that it with other signature bytes is still bound.

Prints ``verified <keyId>``, ``tampered copy refused``, ``as another type refused`` and
``added member not verified``, and with a binding ``bound to <what was given>``,
``changed message refused`` and ``re-signed transaction still bound``; exits 1 otherwise
(``NOT bound: <reason>`` when the binding is refused: ``digest_mismatch``, ``account_mismatch``,
``origin_mismatch`` or ``malformed``), 2 for a binding option with another type than a scan.
Run by ``tests/integration/api/signing.rs`` against a real server, and by
``tests/signing/test_binding.py`` against a scan signed with a key it makes.

  python3 tests/signing/verify_report.py --keys-url http://127.0.0.1:8080/.well-known/xray-keys.json \\
      --type xray.analysis.v1 report.json
  python3 tests/signing/verify_report.py --keys-url http://127.0.0.1:8080/.well-known/xray-keys.json \\
      --type xray.scan.v2 --transaction @tx.b64 --account acct_... --origin none scan.json
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
}
SCAN = "xray.scan.v2"
SIGNATURE_BYTES = 64
# The largest integer JCS (an IEEE double) holds exactly.
SAFE_INTEGER_MAX = 2**53 - 1


def b64url(text):
    # Unpadded base64url only, as the Rust and TypeScript verifiers read it.
    if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not unpadded base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


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


def verified(data, key_set, expected_type):
    """The covered members of ``data`` (a dict) when it is a signed report of ``expected_type``
    that verifies with a key of ``key_set``, else ``None``."""
    signature = data.get("signature") if isinstance(data, dict) else None
    if not isinstance(signature, dict) or not isinstance(key_set, dict):
        return None
    if signature.get("alg") != "EdDSA" or signature.get("canon") != "JCS":
        return None
    if signature.get("type") != expected_type:
        return None
    covers = signature.get("covers")
    expected = COVERS[expected_type]
    if not isinstance(covers, list) or not all(isinstance(name, str) for name in covers):
        return None
    if len(covers) != len(expected) or set(covers) != set(expected):
        return None
    if any(name not in data for name in expected):
        return None
    covered = {name: data[name] for name in expected}
    keys = key_set.get("keys")
    keys = [k for k in keys if isinstance(k, dict)] if isinstance(keys, list) else []
    # The first key of that id, as the other verifiers take it.
    jwk = next((k for k in keys if k.get("kid") == signature.get("keyId")), None)
    if jwk is None or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        return None
    try:
        key = Ed25519PublicKey.from_public_bytes(b64url(jwk.get("x")))
        message = rfc8785.dumps(as_jcs_numbers({**covered, "type": expected_type}))
        key.verify(b64url(signature.get("value")), message)
    except (InvalidSignature, TypeError, ValueError, OverflowError, rfc8785.CanonicalizationError):
        return None
    return covered


def base64_bytes(text):
    """Standard base64 as the scan endpoint reads it: padding optional, nothing else."""
    digits = text.rstrip("=")
    if not re.fullmatch(r"[A-Za-z0-9+/]*", digits):
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


def binding_refusal(covered, binding):
    """Why the verified members of a scan are not about ``binding`` (a dict of ``transaction``
    base64, ``account``, ``origin``: those given), else ``None``."""
    if "transaction" in binding:
        try:
            transaction = base64_bytes(binding["transaction"])
            digest = hashlib.sha256(transaction[signatures_end(transaction):]).hexdigest()
        except ValueError as error:
            return f"malformed ({error})"
        signed = covered["transaction"].get("messageSha256") if isinstance(covered["transaction"], dict) else None
        if digest != signed:
            return "digest_mismatch"
    if "account" in binding and covered["account"] != binding["account"]:
        return "account_mismatch"
    if "origin" in binding and covered["origin"] != binding["origin"]:
        return "origin_mismatch"
    return None


def tampered(text, expected_type):
    """The report's text with one digit of its covered document changed (a byte, not a parse)."""
    data = json.loads(text)["data"]
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
    parser.add_argument("--account", help="a scan's: the account whose key asked for it")
    parser.add_argument("--origin", help="a scan's: the origin host it judged ('none': the request sent none)")
    parser.add_argument("report")
    args = parser.parse_args()
    binding = {}
    if args.transaction is not None:
        sent = args.transaction
        if sent.startswith("@"):
            with open(sent[1:], encoding="utf-8") as f:
                sent = f.read()
        binding["transaction"] = sent.strip()
    if args.account is not None:
        binding["account"] = args.account
    if args.origin is not None:
        binding["origin"] = None if args.origin == "none" else args.origin
    if binding and args.type != SCAN:
        parser.error(f"--transaction, --account and --origin bind a {SCAN} only")
    with urllib.request.urlopen(args.keys_url, timeout=10) as answer:
        key_set = json.load(answer)
    with open(args.report, encoding="utf-8") as f:
        text = f.read()
    data = json.loads(text)["data"]
    covered = verified(data, key_set, args.type)
    if covered is None:
        print("NOT verified")
        sys.exit(1)
    print(f"verified {data['signature']['keyId']}")
    if binding:
        refusal = binding_refusal(covered, binding)
        if refusal is not None:
            print(f"NOT bound: {refusal}")
            sys.exit(1)
        print(f"bound to {', '.join(binding)}")
    if "transaction" in binding:
        transaction = base64_bytes(binding["transaction"])
        changed = bytearray(transaction)
        changed[-1] ^= 0x01
        if binding_refusal(covered, {"transaction": base64.b64encode(changed).decode()}) != "digest_mismatch":
            print("changed message ACCEPTED")
            sys.exit(1)
        print("changed message refused")
        start = signatures_end(transaction)
        # Its last signature's bytes made other, when it has one: as if signed after the scan.
        if start > SIGNATURE_BYTES:
            resigned = bytearray(transaction)
            last = slice(start - SIGNATURE_BYTES, start)
            resigned[last] = bytes(b ^ 0xFF for b in transaction[last])
            if binding_refusal(covered, {"transaction": base64.b64encode(resigned).decode()}) is not None:
                print("re-signed transaction NOT bound")
                sys.exit(1)
            print("re-signed transaction still bound")
    if verified(json.loads(tampered(text, args.type))["data"], key_set, args.type) is not None:
        print("tampered copy ACCEPTED")
        sys.exit(1)
    print("tampered copy refused")
    if any(verified(data, key_set, other) is not None for other in COVERS if other != args.type):
        print("as another type ACCEPTED")
        sys.exit(1)
    print("as another type refused")
    added = verified({**data, "addedMember": {"unsigned": True}}, key_set, args.type)
    if added is None or "addedMember" in added:
        print("added member VERIFIED (or the signed members no longer verify)")
        sys.exit(1)
    print("added member not verified")


if __name__ == "__main__":
    main()
