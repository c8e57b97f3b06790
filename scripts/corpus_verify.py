#!/usr/bin/env python3
"""Re-check the real-transaction corpus (tests/corpus/real.jsonl, real-failed.jsonl).

For every line: the base64 decodes; the bytes parse as a Solana transaction by the wire
format (legacy or v0) with nothing left over; every non-zero signature verifies (Ed25519)
against the message bytes with the key at its index, and at least one does; `signature` is
the first signature; `version` matches the message; `programs` are the top-level program ids;
a v0 entry's `loadedAddresses` (when given) has as many writable/readonly addresses as the
lookups index; names and signatures are unique; the source names a repository, a path and a
40-hex commit. Prints "N passed, M failed" and exits non-zero on any failure.

Usage: scripts/corpus_verify.py [FILE.jsonl ...]   (default: both corpus files)
Needs only the Python standard library and `cryptography`.
"""
import base64
import json
import os
import re
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58encode(b: bytes) -> str:
    n = int.from_bytes(b, "big")
    s = ""
    while n:
        n, r = divmod(n, 58)
        s = B58[r] + s
    return "1" * (len(b) - len(b.lstrip(b"\0"))) + s


def compact_u16(buf: bytes, i: int):
    value = shift = 0
    for _ in range(3):
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i
    raise ValueError("compact-u16 longer than 3 bytes")


def take(buf: bytes, i: int, n: int):
    if i + n > len(buf):
        raise ValueError("truncated")
    return buf[i:i + n], i + n


def parse(raw: bytes) -> dict:
    i = 0
    nsig, i = compact_u16(raw, i)
    if nsig == 0 or nsig > 127:
        raise ValueError(f"signature count {nsig}")
    sigs = []
    for _ in range(nsig):
        s, i = take(raw, i, 64)
        sigs.append(s)
    msg_start = i
    version = "legacy"
    if raw[i] & 0x80:
        if raw[i] & 0x7F != 0:
            raise ValueError(f"unsupported message version {raw[i] & 0x7f}")
        version = "v0"
        i += 1
    header, i = take(raw, i, 3)
    nkeys, i = compact_u16(raw, i)
    keys = []
    for _ in range(nkeys):
        k, i = take(raw, i, 32)
        keys.append(k)
    blockhash, i = take(raw, i, 32)
    nix, i = compact_u16(raw, i)
    ixs = []
    for _ in range(nix):
        (pid,), i = take(raw, i, 1)
        na, i = compact_u16(raw, i)
        accs, i = take(raw, i, na)
        nd, i = compact_u16(raw, i)
        data, i = take(raw, i, nd)
        ixs.append((pid, list(accs), data))
    lookups = []
    if version == "v0":
        nl, i = compact_u16(raw, i)
        for _ in range(nl):
            table, i = take(raw, i, 32)
            nw, i = compact_u16(raw, i)
            w, i = take(raw, i, nw)
            nr, i = compact_u16(raw, i)
            r, i = take(raw, i, nr)
            lookups.append((table, list(w), list(r)))
    if i != len(raw):
        raise ValueError(f"{len(raw) - i} trailing bytes")
    if header[0] != nsig:
        raise ValueError(f"header wants {header[0]} signatures, transaction has {nsig}")
    if header[0] > nkeys:
        raise ValueError("more signers than keys")
    return dict(sigs=sigs, message=raw[msg_start:], version=version, header=list(header),
                keys=keys, blockhash=blockhash, ixs=ixs, lookups=lookups)


def check(entry: dict, seen_names: set, seen_sigs: set) -> list:
    errors = []
    for field in ("name", "transaction", "signature", "version", "programs", "what", "source"):
        if field not in entry:
            errors.append(f"missing {field}")
    if errors:
        return errors
    if entry["name"] in seen_names:
        errors.append("duplicate name")
    seen_names.add(entry["name"])
    if entry["signature"] in seen_sigs:
        errors.append("duplicate signature")
    seen_sigs.add(entry["signature"])
    try:
        raw = base64.b64decode(entry["transaction"], validate=True)
    except Exception as e:  # noqa: BLE001
        return errors + [f"base64: {e}"]
    try:
        tx = parse(raw)
    except Exception as e:  # noqa: BLE001
        return errors + [f"wire format: {e}"]
    nonzero = 0
    for k, sig in enumerate(tx["sigs"]):
        if sig == bytes(64):
            continue
        nonzero += 1
        try:
            Ed25519PublicKey.from_public_bytes(tx["keys"][k]).verify(sig, tx["message"])
        except InvalidSignature:
            errors.append(f"signature {k} does not verify")
    if nonzero == 0:
        errors.append("no signature to verify")
    if b58encode(tx["sigs"][0]) != entry["signature"]:
        errors.append("signature field is not the first signature")
    if tx["version"] != entry["version"]:
        errors.append(f"version {entry['version']} but message is {tx['version']}")
    keys = [b58encode(k) for k in tx["keys"]]
    la = entry.get("loadedAddresses")
    if tx["version"] == "v0":
        if "loadedAddresses" not in entry:
            errors.append("v0 entry without loadedAddresses (null when unknown)")
        if la is not None:
            nw = sum(len(w) for _, w, _ in tx["lookups"])
            nr = sum(len(r) for _, _, r in tx["lookups"])
            if len(la.get("writable", [])) != nw or len(la.get("readonly", [])) != nr:
                errors.append(f"loadedAddresses sizes {len(la.get('writable', []))}/{len(la.get('readonly', []))}"
                              f" but lookups index {nw}/{nr}")
            keys = keys + la.get("writable", []) + la.get("readonly", [])
    elif la is not None:
        errors.append("legacy entry with loadedAddresses")
    programs = []
    for pid, accs, _ in tx["ixs"]:
        if pid >= len(keys):
            errors.append(f"program index {pid} outside the account keys")
            programs.append(None)
        else:
            programs.append(keys[pid])
        if any(a >= len(keys) for a in accs) and (tx["version"] == "legacy" or la is not None):
            errors.append("instruction account index outside the account keys")
    if programs != entry["programs"]:
        errors.append(f"programs differ: {programs} != {entry['programs']}")
    src = entry["source"]
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*", src.get("repository", "")):
        errors.append("source.repository is not owner/name")
    if not src.get("path"):
        errors.append("source.path missing")
    if not re.fullmatch(r"[0-9a-f]{40}", src.get("commit", "")):
        errors.append("source.commit is not 40 hex")
    return errors


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    files = argv[1:] or [os.path.join(here, "..", "tests", "corpus", f)
                         for f in ("real.jsonl", "real-failed.jsonl")]
    passed = failed = 0
    names, sigs = set(), set()
    for path in files:
        if not os.path.exists(path) and not argv[1:]:
            continue
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    errors = check(entry, names, sigs)
                except Exception as e:  # noqa: BLE001
                    errors = [f"unreadable line: {e}"]
                    entry = {}
                if errors:
                    failed += 1
                    print(f"FAIL {os.path.basename(path)}:{lineno} {entry.get('name', '?')}: {'; '.join(errors)}")
                else:
                    passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
