"""Schemathesis hooks for docs/openapi.json: what the document states in words but JSON Schema
cannot state, taught to the generator so that its positive cases are truly valid requests.

- `format: solana-address`: base58 of exactly 32 bytes. Drawn as real wallets: 32 random bytes
  that are a point of the ed25519 curve (a wallet has a private key; an off-curve address is a
  program-derived address, `422 ACCOUNT_NOT_ELIGIBLE` by contract).
- A comparison's two wallets differ (`400 INVALID_REQUEST` by contract): JSON Schema has no
  keyword comparing two properties, so a case naming the same wallet twice is not generated.

Nothing here relaxes a check: every response is still checked against the document.
"""

import schemathesis
from hypothesis import strategies as st

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
P = 2**255 - 19  # the ed25519 field prime
D = (-121665 * pow(121666, P - 2, P)) % P  # the curve constant d


def base58(raw: bytes) -> str:
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, digit = divmod(n, 58)
        out = ALPHABET[digit] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def on_curve(raw: bytes) -> bool:
    """RFC 8032 §5.1.3 decoding: y < p and (y² − 1) / (d·y² + 1) has a square root."""
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    if y >= P:
        return False
    x2 = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    return x2 == 0 or pow(x2, (P - 1) // 2, P) == 1


schemathesis.openapi.format("solana-address", st.binary(min_size=32, max_size=32).filter(on_curve).map(base58))


@schemathesis.hook
def filter_case(context, case):
    body = case.body
    if isinstance(body, dict) and "walletA" in body and "walletB" in body:
        return body["walletA"] != body["walletB"]
    return True
