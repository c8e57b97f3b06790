#!/usr/bin/env python3
"""An independent verifier of Wallet X-Ray's signed reports, written from the README and
docs/openapi.json alone (no project code): Ed25519 from ``cryptography``, RFC 8785 (JCS) from
``rfc8785`` (pinned in requirements.txt beside this file).

Given a report (a poll's or webhook's ``{"data": …}`` body) and the key set's URL, it:

1. fetches ``/.well-known/xray-keys.json`` (no API key) and finds the JWK named by
   ``data.signature.keyId`` (current or retired);
2. builds the object of exactly the members of ``data`` that ``signature.covers`` names,
   canonicalizes it with JCS and checks the signature;
3. changes one byte of the report's text (a digit inside the covered document) and checks that
   the changed report is refused.

Prints ``verified <keyId>`` and ``tampered copy refused``; exits 1 otherwise. Run by
``tests/integration/api/signing.rs`` against a real server.

  python3 tests/signing/verify_report.py --keys-url http://127.0.0.1:8080/.well-known/xray-keys.json report.json
"""

import argparse
import base64
import json
import sys
import urllib.request

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verifies(data, key_set):
    signature = data.get("signature") or {}
    if signature.get("alg") != "EdDSA" or signature.get("canon") != "JCS":
        return False
    try:
        covered = {name: data[name] for name in signature["covers"]}
    except KeyError:
        return False
    jwks = [k for k in key_set["keys"] if k.get("kid") == signature.get("keyId")]
    if len(jwks) != 1 or jwks[0].get("kty") != "OKP" or jwks[0].get("crv") != "Ed25519":
        return False
    key = Ed25519PublicKey.from_public_bytes(b64url(jwks[0]["x"]))
    try:
        key.verify(b64url(signature["value"]), rfc8785.dumps(covered))
        return True
    except InvalidSignature:
        return False


def tampered(text):
    """The report's text with one digit of its covered document changed (a byte, not a parse)."""
    body = json.loads(text)
    data = body["data"]
    document = next(name for name in data["signature"]["covers"] if isinstance(data[name], dict))
    start = text.index(f'"{document}"')
    for i in range(start, len(text)):
        if text[i].isdigit():
            return text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:]
    raise SystemExit("no digit to change in the document")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys-url", required=True)
    parser.add_argument("report")
    args = parser.parse_args()
    with urllib.request.urlopen(args.keys_url, timeout=10) as answer:
        key_set = json.load(answer)
    with open(args.report, encoding="utf-8") as f:
        text = f.read()
    data = json.loads(text)["data"]
    if not verifies(data, key_set):
        print("NOT verified")
        sys.exit(1)
    print(f"verified {data['signature']['keyId']}")
    if verifies(json.loads(tampered(text))["data"], key_set):
        print("tampered copy ACCEPTED")
        sys.exit(1)
    print("tampered copy refused")


if __name__ == "__main__":
    main()
