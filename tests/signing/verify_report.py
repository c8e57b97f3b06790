#!/usr/bin/env python3
"""An independent verifier of Wallet X-Ray's signed reports, written from the README and
docs/openapi.json alone (no project code): Ed25519 from ``cryptography``, RFC 8785 (JCS) from
``rfc8785`` (pinned in requirements.txt beside this file).

Given a report (a poll's, webhook's or scan's ``{"data": …}`` body), the type it is expected to
be (``--type``: ``xray.analysis.v1``, ``xray.comparison.v1`` or ``xray.scan.v1``) and the key
set's URL, it:

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
   ``data`` is not among the verified members.

Prints ``verified <keyId>``, ``tampered copy refused``, ``as another type refused`` and
``added member not verified``; exits 1 otherwise. Run by ``tests/integration/api/signing.rs``
against a real server.

  python3 tests/signing/verify_report.py --keys-url http://127.0.0.1:8080/.well-known/xray-keys.json \\
      --type xray.analysis.v1 report.json
"""

import argparse
import base64
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
    "xray.scan.v1": [
        "verdict", "signer", "transaction", "findings", "effects", "instructions", "simulation",
        "counterparties", "engineVersions", "policy", "scannedAt", "requestId",
    ],
}
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
    parser.add_argument("report")
    args = parser.parse_args()
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
