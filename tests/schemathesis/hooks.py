"""Schemathesis hooks for docs/openapi.json: what the document states in words but JSON Schema
cannot state, taught to the generator so that its positive cases are truly valid requests.

- `format: solana-address`: base58 of exactly 32 bytes. Drawn as real wallets: 32 random bytes
  that are a point of the ed25519 curve (a wallet has a private key; an off-curve address is a
  program-derived address, `422 ACCOUNT_NOT_ELIGIBLE` by contract).
- A comparison's two wallets differ (`400 INVALID_REQUEST` by contract): JSON Schema has no
  keyword comparing two properties, so a case naming the same wallet twice is not generated.
- `format: solana-transaction` (the scan's `transaction`): base64 of a serialized Solana
  transaction. Drawn from real ones — every `xray ledger demo-tx` case (run.sh lists them in the
  file `XRAY_DEMO_TXS`), each also as a v0 message — so the demo ledger decodes and simulates
  them, and the scan answers 200 with findings and effects.
- The scan's `signer` signs the transaction (`400 INVALID_REQUEST` otherwise): a case — generated,
  or put together from the document's examples — whose `transaction` decodes and whose `signer`
  is an address names one of that transaction's signers instead. A `signer` that is not an
  address is left as it is (a negative case stays negative: `400 INVALID_ADDRESS`).
- A sequence's `signer` (default: the first transaction's fee payer) signs every one of its
  `transactions` (`400 INVALID_REQUEST` otherwise): in a case whose transactions all decode, each
  one the signer does not sign is replaced by a demo transaction it does (the pool holds several
  of each demo wallet's), and a `signer` that is an address but signs none of them names the
  first one's fee payer instead.
- `format: dapp-origin` (the scan's `origin`): a URL or bare host the service can judge or bind —
  a domain of at least two labels (with or without `https://`, a port and a path), `localhost`,
  an IP literal (loopback or public), a Unicode homograph or a browser extension's id. Anything else is `400 INVALID_REQUEST` by contract,
  so a positive body whose `origin` is other text (the fuzzing phase substitutes leaf values
  past the format's generator) names one of those instead; a negative body keeps its own.

Nothing here relaxes a check: every response is still checked against the document.
"""

import base64
import os
import re

import schemathesis
from schemathesis.core.parameters import ParameterLocation
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

ADDRESS = re.compile(r"[1-9A-HJ-NP-Za-km-z]{32,44}")


def compact_u16(raw: bytes, at: int) -> tuple[int, int]:
    """Solana's short vector length at `at`: (value, offset after it)."""
    value = shift = 0
    while True:
        byte = raw[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def signers(raw: bytes) -> list[str]:
    """The addresses that sign a serialized transaction: its first `num_required_signatures` keys."""
    count, at = compact_u16(raw, 0)
    at += 64 * count
    if raw[at] & 0x80:  # a versioned message's prefix
        at += 1
    required = raw[at]
    keys, at = compact_u16(raw, at + 3)
    found = [raw[at + 32 * i : at + 32 * (i + 1)] for i in range(min(required, keys))]
    return [base58(key) for key in found if len(key) == 32]


def signers_of(text) -> list[str]:
    """The signers of a base64 transaction; none when `text` is not one (a negative case)."""
    if not isinstance(text, str):
        return []
    if text in DEMO_TRANSACTIONS:
        return DEMO_TRANSACTIONS[text]
    try:
        return signers(base64.b64decode(text, validate=True))
    except (ValueError, IndexError):
        return []


def as_v0(raw: bytes) -> bytes:
    """The same transaction as a v0 message: the version prefix, and no lookup table."""
    count, at = compact_u16(raw, 0)
    at += 64 * count
    return raw[:at] + b"\x80" + raw[at:] + b"\x00"


def demo_transactions() -> dict[str, list[str]]:
    """Base64 transaction → its signers, for every line of `XRAY_DEMO_TXS` and its v0 form."""
    path = os.environ.get("XRAY_DEMO_TXS")
    if not path:
        raise RuntimeError("XRAY_DEMO_TXS is not set: run tests/schemathesis/run.sh, which writes it")
    pool = {}
    with open(path) as lines:
        for line in filter(None, map(str.strip, lines)):
            raw = base64.b64decode(line)
            for form in (raw, as_v0(raw)):
                pool[base64.b64encode(form).decode()] = signers(form)
    if not pool:
        raise RuntimeError(f"{path} holds no transaction")
    return pool


LABEL = st.from_regex(r"[a-z0-9](?:[a-z0-9-]{0,14}[a-z0-9])?", fullmatch=True)
DOMAIN = st.builds(
    lambda labels, tld: ".".join(labels + [tld]),
    st.lists(LABEL, min_size=1, max_size=3),
    st.sampled_from(["com", "io", "org", "xyz", "app", "fi", "so"]),
)
WEB_ORIGIN = st.builds(
    lambda scheme, domain, port, path: f"{scheme}{domain}{port}{path}",
    st.sampled_from(["", "https://", "http://"]),
    DOMAIN,
    st.sampled_from(["", ":443", ":8080"]),
    st.sampled_from(["", "/", "/swap?from=SOL"]),
)
OTHER_ORIGINS = (
    "http://localhost:3000",
    "https://127.0.0.1",
    "http://[::1]:8080",
    "https://203.0.113.7",
    "https://ph\u0430ntom.app",
    "chrome-extension://bfnaelmomeimhlpmgjnjophhpkkoljpa",
)
OTHER_ORIGIN = st.sampled_from(OTHER_ORIGINS)
schemathesis.openapi.format("dapp-origin", st.one_of(WEB_ORIGIN, OTHER_ORIGIN))
# What those two draw (and the document's example): a positive body's `origin` outside it did
# not come from the format's generator — the fuzzing phase's overlays substitute leaf values
# (seen: random text, seed 58484634658232302873814024065852383850) — and is not valid by contract.
WEB_ORIGIN_SHAPE = re.compile(r"(https?://)?[a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?(/[^\s]*)?")

DEMO_TRANSACTIONS = demo_transactions()
schemathesis.openapi.format("solana-transaction", st.sampled_from(sorted(DEMO_TRANSACTIONS)))


@schemathesis.hook
def filter_case(context, case):
    body = case.body
    if isinstance(body, dict) and "walletA" in body and "walletB" in body:
        return body["walletA"] != body["walletB"]
    return True


def with_its_signer(case):
    """`case` naming, as the scan's `signer`, one of its transaction's signers (see above)."""
    body = case.body
    if not isinstance(body, dict) or "transaction" not in body:
        return case
    signer = body.get("signer")
    if not isinstance(signer, str) or not ADDRESS.fullmatch(signer):
        return case
    known = signers_of(body["transaction"])
    if known and signer not in known:
        # Deterministic: the same generated case always names the same signer.
        case.body = {**body, "signer": known[len(signer) % len(known)]}
    return case


def signed_by(signer: str, index: int) -> str:
    """A demo transaction `signer` signs (deterministic by `index`)."""
    pool = sorted(text for text, signers in DEMO_TRANSACTIONS.items() if signer in signers)
    return pool[index % len(pool)]


def with_one_signer(case):
    """`case`'s sequence, every transaction signed by its signer (see above)."""
    body = case.body
    transactions = body.get("transactions") if isinstance(body, dict) else None
    if not isinstance(transactions, list) or not transactions or not all(isinstance(t, str) for t in transactions):
        return case
    known = [signers_of(text) for text in transactions]
    if not all(known):
        return case  # one is no transaction: a negative case stays negative
    signer = body.get("signer")
    if isinstance(signer, str) and ADDRESS.fullmatch(signer):
        if signer not in known[0]:
            signer = known[0][0]
            body = {**body, "signer": signer}
    elif signer is None:
        signer = known[0][0]  # the first one's fee payer
    else:
        return case  # not an address: 400 INVALID_ADDRESS, as it should
    fixed = [text if signer in signers else signed_by(signer, i) for i, (text, signers) in enumerate(zip(transactions, known))]
    case.body = {**body, "transactions": fixed}
    return case


def body_is_positive(case) -> bool:
    """Whether `case`'s body was generated to be valid (a negative one is left as it is)."""
    meta = case.meta
    if meta is None:
        return True
    body = meta.components.get(ParameterLocation.BODY)
    return (body.mode if body is not None else meta.generation.mode).is_positive


def with_a_judgeable_origin(case):
    """`case`, its positive body's `origin` what `format: dapp-origin` draws (see above)."""
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("origin"), str) or not body_is_positive(case):
        return case
    origin = body["origin"]
    if origin in OTHER_ORIGINS or WEB_ORIGIN_SHAPE.fullmatch(origin):
        return case
    # Deterministic: the same generated case always names the same origin.
    case.body = {**body, "origin": OTHER_ORIGINS[len(origin) % len(OTHER_ORIGINS)]}
    return case


@schemathesis.hook
def map_case(context, case):
    return with_a_judgeable_origin(with_one_signer(with_its_signer(case)))


@schemathesis.hook
def before_add_examples(context, examples):
    # The Examples phase combines property examples (an `Address` example as `signer`) without
    # `map_case`.
    examples[:] = [with_one_signer(with_its_signer(case)) for case in examples]
