#!/usr/bin/env python3
"""The scan binding of both Python verifiers, without a server: a scan's answer (``xray.scan.v2``)
signed here with a fresh Ed25519 key, as the server signs it (JCS of the covered members plus
``"type"``), and its JWK set in a file. Checks that ``examples/client.py`` — its ``verify_report``
and ``message_sha256``, imported, and its ``verify`` command — and ``tests/signing/verify_report.py``
(run with ``--keys-url file://…``) accept the scan bound to its transaction (signed since or not),
account, origin and signer, and refuse it for a one-byte change of the message, another account,
another origin, ``none`` against a host, another signer (``signer_mismatch``), a malformed
signature count, a signer that is not text, a ``mode`` (a sequence's) or a binding of another
type, and a member added to its ``data`` that nobody signed (``covers_mismatch``, any scan type).
Both also give every case of the shared refusal table (``refusals.json``, checked current
against ``refusals.py``) the reason it names, and both commands say why from a file as a user
holds it: not JSON, one byte changed, covers edited, another ``--type``, another server's keys;
verify a monitor event's webhook body (``xray.monitor_event.v1``) as a receiver holds it;
verify a scan asked with guards (``xray.scan.v3``) as a scan, bound, and as a guarded scan; and
verify a sequence scan (``xray.scan_sequence.v1``) bound to its transactions, each in its place —
one fewer or more, two swapped, one replaced or changed is ``digest_mismatch`` — its signer and its
mode (another is ``signer_mismatch``, ``mode_mismatch``), never as a scan, nor a scan as it
(``wrong_type``).

Prints one line per case and ``N passed, M failed``; exits 1 when a case failed. Needs what the
verifiers need (``pip install -r tests/signing/requirements.txt``).

  python3 tests/signing/test_binding.py
"""

import base64
import hashlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLIENT = ROOT / "examples" / "client.py"
VERIFIER = ROOT / "tests" / "signing" / "verify_report.py"
REFUSALS = ROOT / "tests" / "signing" / "refusals.py"
SCAN = "xray.scan.v2"
# A scan's covers (README, "Signed reports"), written here so that a verifier's own table is tested.
SCAN_COVERS = [
    "verdict", "signer", "account", "origin", "transaction", "findings", "effects", "instructions",
    "simulation", "counterparties", "engineVersions", "policy", "scannedAt", "requestId",
]
# A scan asked with guards: the same members and ``guards``.
GUARDED_SCAN = "xray.scan.v3"
GUARDED_SCAN_COVERS = SCAN_COVERS[:12] + ["guards"] + SCAN_COVERS[12:]
ANALYSIS_COVERS = ["analysisId", "wallet", "completedAt", "xray"]
SEQUENCE = "xray.scan_sequence.v1"
SEQUENCE_COVERS = [
    "verdict", "signer", "mode", "transactions", "findings", "effects", "applied", "counterparties",
    "engineVersions", "policy", "origin", "account", "scannedAt", "requestId",
]
EVENT = "xray.monitor_event.v1"
EVENT_COVERS = ["id", "kind", "account", "monitorId", "wallet", "analysisId", "createdAt", "changes"]
ACCOUNT = "acct_3JqTmXb1QW7CeT4kz9pNvd"
SIGNER = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z"
OTHER_SIGNER = "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ"
# One (zero) signature, then the message b"xray": hashlib.sha256(b"xray").hexdigest(). The
# TypeScript client's unit tests hold the same vector.
VECTOR = "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB4cmF5"
VECTOR_DIGEST = "1a46e6a68c37e8f969bab5d6fe6ce7b4deda2a17d80e1a7142e9c005b108f608"

KEY = Ed25519PrivateKey.generate()
PUBLIC = KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
KID = hashlib.sha256(PUBLIC).hexdigest()[:16]
KEY_SET = {
    "keys": [
        {
            "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": KID,
            "x": base64.urlsafe_b64encode(PUBLIC).decode().rstrip("="), "status": "current",
            "createdAt": "2026-11-28T10:00:00.000Z", "retiredAt": None,
        }
    ]
}
# A legacy transaction as sent to the scan: two signature slots, unsigned, then its message.
MESSAGE = os.urandom(180)
UNSIGNED = bytes([2]) + bytes(128) + MESSAGE
SENT = base64.b64encode(UNSIGNED).decode()
# A sequence of three transactions as sent (one signature slot each, unsigned), and one in none.
SEQUENCE_MESSAGES = [os.urandom(150), os.urandom(170), os.urandom(190)]
SEQUENCE_TXS = [bytes([1]) + bytes(64) + m for m in SEQUENCE_MESSAGES]
SEQUENCE_SENT = [base64.b64encode(tx).decode() for tx in SEQUENCE_TXS]
ELSEWHERE = base64.b64encode(bytes([1]) + bytes(64) + os.urandom(170)).decode()


def signed(data, report_type, covers):
    """``data`` with the signature the server would give it."""
    members = {name: data[name] for name in covers}
    value = KEY.sign(rfc8785.dumps({**members, "type": report_type}))
    signature = {
        "keyId": KID, "alg": "EdDSA", "canon": "JCS", "type": report_type, "covers": sorted(covers),
        "value": base64.urlsafe_b64encode(value).decode().rstrip("="),
    }
    return {**data, "signature": signature}


def scan(origin):
    """A scan's answer for UNSIGNED, asked by ACCOUNT from ``origin`` (``None``: no origin)."""
    data = {
        "verdict": "warning",
        "signer": SIGNER,
        "account": ACCOUNT,
        "origin": origin,
        "transaction": {
            "version": "legacy", "signed": False, "feePayer": SIGNER, "accounts": 4, "lookupTables": [],
            "accountsRead": 3, "messageSha256": hashlib.sha256(MESSAGE).hexdigest(),
            "signatures": [{"signer": SIGNER, "status": "missing"}, {"signer": SIGNER, "status": "missing"}],
        },
        "findings": [{"kind": "token_approval", "severity": "high", "instruction": 0}],
        "effects": [{"kind": "sol", "lamports": -5000}],
        "instructions": [{"index": 0, "program": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"}],
        "simulation": {"status": "skipped", "reason": "a fixture"},
        "counterparties": {"status": "read", "transactions": 25},
        "engineVersions": {"scan": "1"},
        "policy": {"id": "default", "version": 0},
        "scannedAt": "2026-11-28T10:00:00.123Z",
        "requestId": "test-binding.1",
    }
    return signed(data, SCAN, SCAN_COVERS)


def sequence_scan(origin, messages=None, mode="sequence"):
    """A sequence scan's answer for ``messages`` (default SEQUENCE_MESSAGES) in that order, asked by
    ACCOUNT from ``origin`` in ``mode``, signed as ``xray.scan_sequence.v1``."""
    messages = SEQUENCE_MESSAGES if messages is None else messages
    items = [
        {
            "index": i, "verdict": "benign",
            "transaction": {
                "version": "legacy", "signed": False, "feePayer": SIGNER, "accounts": 3, "lookupTables": [],
                "accountsRead": 2, "messageSha256": hashlib.sha256(m).hexdigest(),
                "signatures": [{"signer": SIGNER, "status": "missing"}],
            },
            "findings": [], "effects": [{"kind": "sol", "lamports": -5000}], "instructions": [],
            "simulation": {"status": "ok", "slot": 300000001},
        }
        for i, m in enumerate(messages)
    ]
    data = {
        "verdict": "malicious", "signer": SIGNER, "mode": mode, "transactions": items,
        "findings": [{"kind": "asset_sweep", "severity": "critical", "title": "Sweeps", "detail": "…", "facts": {}}],
        "effects": [{"kind": "sol", "lamports": -24000000000}],
        "applied": {"transactions": list(range(len(items)))},
        "counterparties": {"status": "read", "transactions": 25}, "engineVersions": {"scan": "1"},
        "policy": {"id": "default", "version": 0}, "origin": origin, "account": ACCOUNT,
        "scannedAt": "2026-11-28T10:00:00.456Z", "requestId": "test-binding.sequence",
    }
    return signed(data, SEQUENCE, SEQUENCE_COVERS)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


client = load(CLIENT, "xray_example_client")
independent_module = load(VERIFIER, "xray_independent_verifier")
refusals = load(REFUSALS, "xray_refusals")


def expect(actual, wanted, what):
    if actual != wanted:
        raise AssertionError(f"{what}: {actual!r}, not {wanted!r}")


def refusal(data, report_type=SCAN, binding=None):
    """``client.verify_report``'s reason for refusing, or ``None`` when it accepts."""
    try:
        client.verify_report(data, KEY_SET, report_type, binding)
    except client.ReportRefused as refused:
        return refused.reason
    return None


def resigned():
    """UNSIGNED with both signature slots filled: as signed after the scan."""
    return bytes([2]) + os.urandom(128) + MESSAGE


def changed_at(i):
    """UNSIGNED with byte ``i`` changed."""
    transaction = bytearray(UNSIGNED)
    transaction[i] ^= 0x01
    return bytes(transaction)


MALFORMED = {
    "empty": b"",
    "count cut short": bytes([0x80]),
    "count 0 in two bytes": bytes([0x80, 0x00]) + bytes(64),
    "count 1 in three bytes": bytes([0x81, 0x80, 0x00]) + bytes(64),
    "a third count byte that continues": bytes([0x80, 0x80, 0x81, 0x00]) + bytes(64),
    "count past 0xffff": bytes([0xFF, 0xFF, 0x04]),
    "0xffff signatures in 3 bytes": bytes([0xFF, 0xFF, 0x03]),
    "2 signatures in 64 bytes": bytes([0x02]) + bytes(64) + b"message",
}
MALFORMED_TEXT = {"not base64": "%%%", "base64url": "AQ_-", "stray bits": "AB", "a length no base64 has": "AQAAA"}

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


@case
def message_digest_vectors():
    expect(client.message_sha256(VECTOR), VECTOR_DIGEST, "the vector")
    expect(client.message_sha256(VECTOR + "="), VECTOR_DIGEST, "padded")
    expect(client.message_sha256(base64.b64decode(VECTOR)), VECTOR_DIGEST, "as bytes")
    many = bytes([0x80, 0x01]) + bytes(128 * 64) + b"xray"
    expect(client.message_sha256(many), VECTOR_DIGEST, "128 signatures (a two-byte count)")
    expect(client.message_sha256(UNSIGNED), hashlib.sha256(MESSAGE).hexdigest(), "the fixture")


@case
def message_digest_refuses_malformed():
    for what, transaction in [*MALFORMED.items(), *MALFORMED_TEXT.items()]:
        try:
            client.message_sha256(transaction)
        except ValueError:
            continue
        raise AssertionError(f"{what}: accepted")


@case
def client_accepts_bound_scan():
    data = scan("phantom.app")
    key_id, covered = client.verify_report(data, KEY_SET, SCAN, {"transaction": SENT, "account": ACCOUNT, "origin": "phantom.app"})
    expect((key_id, covered["account"], covered["origin"]), (KID, ACCOUNT, "phantom.app"), "verified")
    expect(refusal(data, binding={"transaction": UNSIGNED}), None, "bytes")
    expect(refusal(data, binding={"transaction": resigned()}), None, "signed after the scan")
    expect(refusal(data, binding={"account": ACCOUNT}), None, "the account alone")
    expect(refusal(data, binding={"signer": SIGNER}), None, "the signer alone")
    key_id, covered = client.verify_report(data, KEY_SET, SCAN, {"transaction": SENT, "account": ACCOUNT, "origin": "phantom.app", "signer": SIGNER})
    expect((key_id, covered["signer"]), (KID, SIGNER), "bound to its signer too")
    expect(refusal(data, binding={}), None, "no binding")
    expect(refusal(scan(None), binding={"transaction": SENT, "origin": None}), None, "no origin")


@case
def client_refuses_other_request():
    data = scan("phantom.app")
    for i in range(129, len(UNSIGNED)):
        expect(refusal(data, binding={"transaction": changed_at(i)}), "digest_mismatch", f"message byte {i - 129}")
    recounted = bytes([1]) + UNSIGNED[1:]
    expect(refusal(data, binding={"transaction": recounted}), "digest_mismatch", "another count")
    expect(refusal(data, binding={"account": "acct_other"}), "account_mismatch", "another account")
    expect(refusal(data, binding={"origin": "phantom.app.claim-now.io"}), "origin_mismatch", "another origin")
    expect(refusal(data, binding={"origin": None}), "origin_mismatch", "no origin expected")
    expect(refusal(scan(None), binding={"origin": "phantom.app"}), "origin_mismatch", "an origin expected")
    held = {"transaction": SENT, "account": ACCOUNT, "origin": "phantom.app"}
    expect(refusal(data, binding={**held, "signer": OTHER_SIGNER}), "signer_mismatch", "another signer")
    expect(refusal(data, binding={"signer": SIGNER.lower()}), "signer_mismatch", "the signer in another case")
    # In order: the digest, the account, the origin, then the signer.
    expect(refusal(data, binding={"origin": None, "signer": OTHER_SIGNER}), "origin_mismatch", "another origin and signer")
    expect(refusal(data, binding={"account": "acct_other", "signer": OTHER_SIGNER}), "account_mismatch", "another account and signer")
    expect(refusal(data, binding={"transaction": changed_at(200), "signer": OTHER_SIGNER}), "digest_mismatch", "another message and signer")


@case
def client_checks_signature_first_and_refuses_unusable_binding():
    data = scan("phantom.app")
    forged = {**data, "account": "acct_other"}
    expect(refusal(forged, binding={"account": "acct_other"}), "bad_signature", "a forged account")
    for what, transaction in [*MALFORMED.items(), *MALFORMED_TEXT.items()]:
        expect(refusal(data, binding={"transaction": transaction}), "malformed", what)
    expect(refusal(data, binding={"acount": ACCOUNT}), "malformed", "a misspelt member")
    # A signer that is not text, a sequence's mode for a scan: malformed, before the report.
    for signer in (7, None, [SIGNER], {"address": SIGNER}):
        expect(refusal(data, binding={"signer": signer}), "malformed", f"a signer of {signer!r}")
    expect(refusal(data, binding={"mode": "sequence"}), "malformed", "a mode for a scan")
    expect(refusal({**data, "verdict": "benign"}, binding={"signer": 7}), "malformed", "a signer not text, a forgery")
    forged_signer = {**data, "signer": OTHER_SIGNER}
    expect(refusal(forged_signer, binding={"signer": OTHER_SIGNER}), "bad_signature", "a forged signer")
    # A member nobody signed beside the signed ones: refused, before the signature and the binding.
    expect(refusal({**data, "verdictOverride": "benign"}), "covers_mismatch", "an unsigned member added")
    expect(refusal({**data, "verdictOverride": "benign"}, binding={"signer": OTHER_SIGNER}), "covers_mismatch", "an unsigned member, another signer")
    analysis = signed(
        {"analysisId": "an_1", "wallet": SIGNER, "completedAt": "2026-11-28T10:00:00.000Z", "xray": {}},
        "xray.analysis.v1",
        ANALYSIS_COVERS,
    )
    expect(refusal(analysis, "xray.analysis.v1"), None, "an analysis")
    expect(refusal(analysis, "xray.analysis.v1", {"account": ACCOUNT}), "malformed", "an analysis bound")
    v1 = signed(scan("phantom.app"), "xray.scan.v1", [n for n in SCAN_COVERS if n not in ("account", "origin")])
    expect(refusal(v1), "wrong_type", "a v1 scan")


@case
def client_binds_a_sequence_scan_to_its_transactions():
    data = sequence_scan("phantom.app")
    held = {"transactions": SEQUENCE_SENT, "account": ACCOUNT, "origin": "phantom.app"}
    key_id, covered = client.verify_report(data, KEY_SET, SEQUENCE, held)
    expect((key_id, sorted(covered)), (KID, sorted(SEQUENCE_COVERS)), "verified, its signed members")
    resigned_all = [bytes([1]) + os.urandom(64) + m for m in SEQUENCE_MESSAGES]
    expect(refusal(data, SEQUENCE, {"transactions": resigned_all}), None, "signed after the scan (bytes)")
    expect(refusal(data, SEQUENCE, {"account": ACCOUNT}), None, "the account alone")
    expect(refusal(data, SEQUENCE, {**held, "signer": SIGNER, "mode": "sequence"}), None, "its signer and mode too")
    expect(refusal(sequence_scan("phantom.app", mode="bundle"), SEQUENCE, {"mode": "bundle"}), None, "a bundle, bound to bundle")
    first, second, third = SEQUENCE_SENT
    changed = bytearray(SEQUENCE_TXS[1])
    changed[-1] ^= 0x01
    for what, transactions in {
        "one fewer": [first, second], "one more": [first, second, third, first], "none": [],
        "two swapped": [second, first, third], "one replaced": [first, ELSEWHERE, third],
        "one changed": [first, bytes(changed), third],
    }.items():
        expect(refusal(data, SEQUENCE, {"transactions": transactions}), "digest_mismatch", what)
    expect(refusal(data, SEQUENCE, {**held, "account": "acct_other"}), "account_mismatch", "another account")
    expect(refusal(data, SEQUENCE, {"origin": None}), "origin_mismatch", "no origin held")
    expect(refusal(sequence_scan(None), SEQUENCE, {**held, "origin": None}), None, "none sent, none held")
    expect(refusal(data, SEQUENCE, {**held, "signer": OTHER_SIGNER}), "signer_mismatch", "another signer")
    expect(refusal(data, SEQUENCE, {**held, "mode": "bundle"}), "mode_mismatch", "signed sequence, bundle held")
    expect(refusal(sequence_scan("phantom.app", mode="bundle"), SEQUENCE, {"mode": "sequence"}), "mode_mismatch", "signed bundle, sequence held")
    # In order: the origin before the signer, the signer before the mode.
    expect(refusal(data, SEQUENCE, {"origin": None, "signer": OTHER_SIGNER, "mode": "bundle"}), "origin_mismatch", "another origin, signer and mode")
    expect(refusal(data, SEQUENCE, {"signer": OTHER_SIGNER, "mode": "bundle"}), "signer_mismatch", "another signer and mode")
    expect(refusal({**data, "mode": "bundle"}, SEQUENCE, {"mode": "bundle"}), "bad_signature", "a forged mode")
    for what, bad in {"a signer not text": {"signer": 7}, "a mode not text": {"mode": None}, "a mode of a list": {"mode": ["sequence"]}}.items():
        expect(refusal(data, SEQUENCE, bad), "malformed", what)
    # A member nobody signed beside the signed ones: refused (covers_mismatch), whatever it holds.
    expect(refusal({**data, "verdictOverride": "benign"}, SEQUENCE, held), "covers_mismatch", "an unsigned member added")
    expect(refusal({**data, "verdictOverride": "benign", "mode": "bundle"}, SEQUENCE), "covers_mismatch", "an unsigned member, a changed mode")
    # Never a scan, nor a scan a sequence; the bindings of one are not the other's.
    for as_type in (SCAN, GUARDED_SCAN, "xray.analysis.v1"):
        expect(refusal(data, as_type), "wrong_type", f"as {as_type}")
    expect(refusal(scan("phantom.app"), SEQUENCE), "wrong_type", "a scan as a sequence")
    expect(refusal(data, SEQUENCE, {"transaction": first}), "malformed", "a scan's binding member")
    expect(refusal(scan("phantom.app"), SCAN, {"transactions": [SENT]}), "malformed", "a sequence's binding member")
    expect(refusal(data, SEQUENCE, {"transactions": first}), "malformed", "not a list")
    expect(refusal(data, SEQUENCE, {"transactions": [first, MALFORMED["count 0 in two bytes"]]}), "malformed", "one is none")


def run(*args):
    """(exit code, stdout) of a Python script."""
    done = subprocess.run([sys.executable, "-B", *map(str, args)], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout


def client_verify(report, *options):
    code, out = run(CLIENT, "verify", "--type", "scan", "--keys", WORK / "keys.json", report, *options)
    return code, json.loads(out) if out.strip() else None


@case
def client_command():
    code, verdict = client_verify(
        WORK / "scan.json", "--transaction", f"@{WORK / 'tx.b64'}", "--account", ACCOUNT, "--origin", "phantom.app", "--signer", SIGNER
    )
    expect((code, verdict["verified"], "reason" in verdict), (0, True, False), f"bound {verdict}")
    expect((verdict["data"]["account"], verdict["data"]["signer"]), (ACCOUNT, SIGNER), "the signed account and signer")
    refused = {
        "account_mismatch": ["--account", "acct_other"],
        "signer_mismatch": ["--signer", OTHER_SIGNER],
        "digest_mismatch": ["--transaction", base64.b64encode(changed_at(len(UNSIGNED) - 1)).decode()],
        "origin_mismatch": ["--origin", "none"],
        "malformed": ["--transaction", base64.b64encode(MALFORMED["count 0 in two bytes"]).decode()],
    }
    for reason, options in refused.items():
        code, verdict = client_verify(WORK / "scan.json", *options)
        expect((code, verdict["verified"], verdict.get("reason")), (1, False, reason), " ".join(options))
    code, verdict = client_verify(WORK / "scan-no-origin.json", "--origin", "none", "--transaction", SENT)
    expect((code, verdict["verified"]), (0, True), "no origin")
    code, _ = run(CLIENT, "verify", "--type", "analysis", "--keys", WORK / "keys.json", "--account", ACCOUNT, WORK / "scan.json")
    expect(code, 2, "a binding of an analysis")
    code, _ = run(CLIENT, "verify", "--type", "analysis", "--keys", WORK / "keys.json", "--signer", SIGNER, WORK / "scan.json")
    expect(code, 2, "a signer for an analysis")
    code, _ = run(CLIENT, "verify", "--type", "scan", "--keys", WORK / "keys.json", "--mode", "sequence", WORK / "scan.json")
    expect(code, 2, "a mode for a scan")


def independent(report, *options):
    return run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", SCAN, *options, report)


@case
def independent_verifier():
    code, out = independent(
        WORK / "scan.json", "--transaction", f"@{WORK / 'tx.b64'}", "--account", ACCOUNT, "--origin", "phantom.app", "--signer", SIGNER
    )
    expect(code, 0, out)
    for says in [
        f"verified {KID}", "bound to transaction, account, origin, signer", "changed message refused",
        "re-signed transaction still bound", "tampered copy refused", "as another type refused",
        "added member not verified (refused: covers_mismatch)",
    ]:
        expect(says in out, True, f"{says!r} in {out!r}")
    code, out = independent(WORK / "scan.json")
    expect((code, "bound" in out), (0, False), f"without a binding: {out}")
    code, out = independent(WORK / "scan.json", "--transaction", base64.b64encode(resigned()).decode())
    expect(code, 0, f"signed after the scan: {out}")
    refused = {
        "account_mismatch": ["--account", "acct_other"],
        "digest_mismatch": ["--transaction", base64.b64encode(changed_at(200)).decode()],
        "origin_mismatch": ["--origin", "none"],
        "signer_mismatch": ["--signer", OTHER_SIGNER],
        "malformed": ["--transaction", base64.b64encode(MALFORMED["count 1 in three bytes"]).decode()],
    }
    for reason, options in refused.items():
        code, out = independent(WORK / "scan.json", *options)
        expect((code, f"NOT verified: {reason}" in out), (1, True), f"{options}: {out}")
    code, out = independent(WORK / "scan-no-origin.json", "--origin", "none")
    expect(code, 0, f"no origin: {out}")
    code, out = independent(WORK / "scan-no-origin.json", "--origin", "phantom.app")
    expect((code, "NOT verified: origin_mismatch" in out), (1, True), f"an origin expected: {out}")
    code, _ = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", "xray.analysis.v1", "--account", ACCOUNT, WORK / "scan.json")
    expect(code, 2, "a binding of an analysis")
    code, _ = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", "xray.analysis.v1", "--signer", SIGNER, WORK / "scan.json")
    expect(code, 2, "a signer for an analysis")
    code, _ = independent(WORK / "scan.json", "--mode", "sequence")
    expect(code, 2, "a mode for a scan")


@case
def refusal_table_is_current():
    expect(REFUSALS.with_name("refusals.json").read_text(encoding="utf-8") == refusals.text(), True, "refusals.json is what refusals.py makes")
    expect(refusals.REASONS, list(client.REFUSAL_REASONS), "the client's reasons, in order")
    expect(refusals.REASONS, independent_module.REASONS, "the independent verifier's reasons, in order")


def table_cases():
    table = json.loads(REFUSALS.with_name("refusals.json").read_text(encoding="utf-8"))
    return table, table["cases"]


@case
def client_gives_every_refusal_its_reason():
    table, cases = table_cases()
    for c in cases:
        expect(refusal_of_client(c, table), c["reason"], c["name"])
    expect(sorted({c["reason"] for c in cases} - {None}), sorted(table["reasons"]), "every reason has a case")
    # The Rust verifier skips the loose cases: every reason needs one it is given too.
    strict = {c["reason"] for c in cases if not c.get("loose")} - {None}
    expect(sorted(strict), sorted(table["reasons"]), "every reason has a case that is not loose")


def refusal_of_client(c, table):
    try:
        client.verify_report(c["data"], table["keySets"][c["keys"]], c["type"], c.get("binding"))
    except client.ReportRefused as refused:
        return refused.reason
    return None


@case
def independent_verifier_gives_every_refusal_its_reason():
    table, cases = table_cases()
    for c in cases:
        got = independent_module.reason_of(c["data"], table["keySets"][c["keys"]], c["type"], c.get("binding"))
        expect(got, c["reason"], c["name"])


@case
def both_commands_say_why():
    """Each reason through the commands themselves, from a file as a user holds it."""
    text = (WORK / "scan.json").read_text()
    other_keys = WORK / "other-keys.json"
    other_keys.write_text(json.dumps(refusals.KEY_SETS["another server's"]))
    files = {
        "not JSON": text[: len(text) // 2],
        "one byte changed": text.replace('"warning"', '"warninh"', 1),
        "covers edited": text.replace('"account",', "", 1),
    }
    for name, content in files.items():
        (WORK / f"{name}.json").write_text(content)
    runs = [
        ("malformed", "not JSON", "scan", WORK / "keys.json"),
        ("bad_signature", "one byte changed", "scan", WORK / "keys.json"),
        ("covers_mismatch", "covers edited", "scan", WORK / "keys.json"),
        ("wrong_type", None, "analysis", WORK / "keys.json"),
        ("unknown_key", None, "scan", other_keys),
    ]
    for reason, name, short_type, keys in runs:
        report = WORK / (f"{name}.json" if name else "scan.json")
        code, out = run(CLIENT, "verify", "--type", short_type, "--keys", keys, report)
        verdict = json.loads(out)
        expect((code, verdict["verified"], verdict["reason"], verdict["keyId"]), (1, False, reason, None), f"client: {name or reason}")
        expect(isinstance(verdict["detail"], str) and verdict["detail"] != "", True, f"client detail: {verdict}")
        code, out = run(VERIFIER, "--keys-url", keys.as_uri(), "--type", client.REPORT_TYPES[short_type], report)
        expect((code, out.strip()), (1, f"NOT verified: {reason}"), f"independent: {name or reason}")


@case
def both_commands_verify_a_guarded_scan_as_a_scan():
    """A scan asked with guards (``xray.scan.v3``: a scan's members and ``guards``), through both
    commands: verified as a scan (``--type scan`` / ``xray.scan.v2``), bound to its request, its
    guards among the signed members, and as a guarded scan (``xray.scan.v3``); a plain scan is
    not a guarded one, a guarded scan is no analysis, lowering a guard is ``bad_signature``, and a
    plain scan carrying guards nobody signed is ``covers_mismatch``."""
    data = {k: v for k, v in scan("phantom.app").items() if k != "signature"}
    data["guards"] = {
        "slippageBps": 50, "solToleranceLamports": 0, "status": "added",
        "guardInstructions": [{
            "programId": "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95",
            "accounts": [{"address": SIGNER, "isSigner": False, "isWritable": False}],
            "data": "BgACALDHXaIFAAAABAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "asserts": [
                {"kind": "lamports_at_least", "lamports": 24198891440},
                {"kind": "account_owner", "owner": "11111111111111111111111111111111"},
            ],
        }],
        "guardedTransaction": SENT,
    }
    guarded = signed(data, GUARDED_SCAN, GUARDED_SCAN_COVERS)
    report = WORK / "guarded-scan.json"
    report.write_text(json.dumps({"data": guarded}, indent=2))
    held = ["--transaction", f"@{WORK / 'tx.b64'}", "--account", ACCOUNT, "--origin", "phantom.app"]
    code, verdict = client_verify(report, *held)
    expect((code, verdict["verified"], verdict["type"]), (0, True, GUARDED_SCAN), f"client, as a scan: {verdict}")
    expect(verdict["data"]["guards"], data["guards"], "the signed guards")
    code, out = run(CLIENT, "verify", "--type", GUARDED_SCAN, "--keys", WORK / "keys.json", report, *held)
    expect((code, json.loads(out)["verified"]), (0, True), f"client, as a guarded scan: {out}")
    code, out = independent(report, *held, "--signer", SIGNER)
    expect(code, 0, out)
    for says in [
        f"verified {KID}", "bound to transaction, account, origin, signer", "tampered copy refused", "as another type refused",
        "added member not verified (refused: covers_mismatch)",
    ]:
        expect(says in out, True, f"{says!r} in {out!r}")
    code, out = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", GUARDED_SCAN, *held, report)
    expect((code, "as another type refused" in out), (0, True), f"independent, as a guarded scan: {out}")
    lowered = WORK / "guarded-lowered.json"
    lowered.write_text(json.dumps({"data": {**guarded, "guards": {**data["guards"], "solToleranceLamports": 1}}}))
    # A plain scan (xray.scan.v2) carrying guards nobody signed: covers_mismatch, not verified.
    unsigned_guards = WORK / "scan-unsigned-guards.json"
    unsigned_guards.write_text(json.dumps({"data": {**scan("phantom.app"), "guards": data["guards"]}}))
    # A guarded scan (xray.scan.v3) carrying a member it does not cover: refused the same.
    unsigned_member = WORK / "guarded-unsigned-member.json"
    unsigned_member.write_text(json.dumps({"data": {**guarded, "verdictOverride": "benign"}}))
    for reason, path, as_type in [
        ("wrong_type", WORK / "scan.json", GUARDED_SCAN),
        ("wrong_type", report, "xray.analysis.v1"),
        ("bad_signature", lowered, SCAN),
        ("covers_mismatch", unsigned_guards, SCAN),
        ("covers_mismatch", unsigned_member, SCAN),
        ("covers_mismatch", unsigned_member, GUARDED_SCAN),
    ]:
        code, out = run(CLIENT, "verify", "--type", as_type, "--keys", WORK / "keys.json", path)
        expect((code, json.loads(out)["reason"]), (1, reason), f"client: {path.name} as {as_type}")
        code, out = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", as_type, path)
        expect((code, out.strip()), (1, f"NOT verified: {reason}"), f"independent: {path.name} as {as_type}")


@case
def both_commands_verify_a_monitor_events_webhook_body():
    """A monitor's webhook body (``{"data": {"event": …}}``) and one event alone, through both
    commands: verified as ``monitor_event``; a changed score drop is ``bad_signature``, the same
    file as an analysis ``wrong_type``."""
    event = refusals.event_data()
    event = signed({k: v for k, v in event.items() if k != "signature"}, EVENT, EVENT_COVERS)
    body = WORK / "event-webhook.json"
    body.write_text(json.dumps({"data": {"event": event}}, indent=2))
    alone = WORK / "event-alone.json"
    alone.write_text(json.dumps({"data": event}))
    changed = WORK / "event-changed.json"
    changed.write_text(json.dumps({"data": {"event": {**event, "changes": {**event["changes"], "score": {**event["changes"]["score"], "delta": -1}}}}}))
    for report in (body, alone):
        code, out = run(CLIENT, "verify", "--type", "monitor_event", "--keys", WORK / "keys.json", report)
        verdict = json.loads(out)
        expect((code, verdict["verified"], verdict["data"]["account"]), (0, True, ACCOUNT), f"client: {report.name}")
        expect("type" in verdict["data"] or "delivery" in verdict["data"], False, "only the signed members")
        code, out = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", EVENT, report)
        expect((code, "tampered copy refused" in out, "as another type refused" in out), (0, True, True), f"independent: {out}")
    for reason, report, short_type in [("bad_signature", changed, "monitor_event"), ("wrong_type", alone, "analysis")]:
        code, out = run(CLIENT, "verify", "--type", short_type, "--keys", WORK / "keys.json", report)
        expect((code, json.loads(out)["reason"]), (1, reason), f"client: {reason}")
        code, out = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", client.REPORT_TYPES[short_type], report)
        expect((code, out.strip()), (1, f"NOT verified: {reason}"), f"independent: {reason}")


@case
def both_commands_verify_a_sequence_scan():
    """A sequence scan's answer through both commands: verified as ``scan_sequence`` /
    ``xray.scan_sequence.v1`` bound to its transactions (a file, one a line; or commas), account
    and origin; one fewer or two swapped is ``digest_mismatch``; as a scan ``wrong_type``, and a
    scan as a sequence ``wrong_type``; ``--transaction`` for a sequence or ``--transactions`` for a
    scan is a usage error."""
    report = WORK / "sequence.json"
    report.write_text(json.dumps({"data": sequence_scan("phantom.app")}, indent=2))
    (WORK / "txs.b64").write_text("\n".join(SEQUENCE_SENT) + "\n")
    held = [
        "--transactions", f"@{WORK / 'txs.b64'}", "--account", ACCOUNT, "--origin", "phantom.app", "--signer", SIGNER,
        "--mode", "sequence",
    ]
    code, out = run(CLIENT, "verify", "--type", "scan_sequence", "--keys", WORK / "keys.json", report, *held)
    verdict = json.loads(out)
    expect((code, verdict["verified"], verdict["type"]), (0, True, SEQUENCE), f"client: {verdict}")
    expect((verdict["data"]["signer"], verdict["data"]["mode"]), (SIGNER, "sequence"), "the signed signer and mode")
    expect(len(verdict["data"]["transactions"]), 3, "the signed transactions")
    code, out = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", SEQUENCE, *held, report)
    expect(code, 0, out)
    for says in [
        f"verified {KID}", "bound to transactions, account, origin, signer, mode", "other transactions refused",
        "tampered copy refused", "as another type refused", "added member not verified (refused: covers_mismatch)",
    ]:
        expect(says in out, True, f"{says!r} in {out!r}")
    first, second, third = SEQUENCE_SENT
    for reason, options in [
        ("signer_mismatch", ["--signer", OTHER_SIGNER]),
        ("mode_mismatch", ["--mode", "bundle"]),
        ("signer_mismatch", ["--signer", OTHER_SIGNER, "--mode", "bundle"]),
        ("origin_mismatch", ["--origin", "none", "--signer", OTHER_SIGNER]),
    ]:
        code, out = run(CLIENT, "verify", "--type", "scan_sequence", "--keys", WORK / "keys.json", report, *options)
        expect((code, json.loads(out)["reason"]), (1, reason), f"client: {options}")
        code, out = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", SEQUENCE, *options, report)
        expect((code, out.strip()), (1, f"NOT verified: {reason}"), f"independent: {options}")
    for reason, transactions in [("digest_mismatch", f"{first},{second}"), ("digest_mismatch", f"{second},{first},{third}")]:
        code, out = run(CLIENT, "verify", "--type", "scan_sequence", "--keys", WORK / "keys.json", report, "--transactions", transactions)
        expect((code, json.loads(out)["reason"]), (1, reason), f"client: {transactions[:20]}")
        code, out = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", SEQUENCE, "--transactions", transactions, report)
        expect((code, out.strip()), (1, f"NOT verified: {reason}"), f"independent: {transactions[:20]}")
    for path, short_type, full_type in [(report, "scan", SCAN), (WORK / "scan.json", "scan_sequence", SEQUENCE)]:
        code, out = run(CLIENT, "verify", "--type", short_type, "--keys", WORK / "keys.json", path)
        expect((code, json.loads(out)["reason"]), (1, "wrong_type"), f"client: {path.name} as {short_type}")
        code, out = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", full_type, path)
        expect((code, out.strip()), (1, "NOT verified: wrong_type"), f"independent: {path.name} as {full_type}")
    code, _ = run(CLIENT, "verify", "--type", "scan_sequence", "--keys", WORK / "keys.json", "--transaction", first, report)
    expect(code, 2, "client: --transaction for a sequence")
    code, _ = run(CLIENT, "verify", "--type", "scan", "--keys", WORK / "keys.json", "--transactions", first, WORK / "scan.json")
    expect(code, 2, "client: --transactions for a scan")
    code, _ = run(VERIFIER, "--keys-url", (WORK / "keys.json").as_uri(), "--type", SEQUENCE, "--transaction", first, report)
    expect(code, 2, "independent: --transaction for a sequence")


def main():
    global WORK
    failed = 0
    with tempfile.TemporaryDirectory(prefix="xray-binding.") as work:
        WORK = pathlib.Path(work)
        (WORK / "keys.json").write_text(json.dumps(KEY_SET))
        (WORK / "scan.json").write_text(json.dumps({"data": scan("phantom.app")}, indent=2))
        (WORK / "scan-no-origin.json").write_text(json.dumps({"data": scan(None)}, indent=2))
        (WORK / "tx.b64").write_text(SENT + "\n")
        for fn in CASES:
            try:
                fn()
                print(f"ok {fn.__name__}")
            except Exception as error:  # a case's failure, whatever it raised, is reported, not fatal
                failed += 1
                print(f"FAILED {fn.__name__}: {error!r}")
    print(f"{len(CASES) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
