#!/usr/bin/env python3
"""Validate the program registry, src/labels/programs.toml (docs/program-registry.md).

Checks every [[label]] entry:
  - only the fields the labels loader accepts (address, name, category, tags, source);
  - `address` is base58 that decodes to exactly 32 bytes (own decoder, no dependency);
  - no address is listed twice in the file, nor also in src/labels/default.toml
    (the registry is served next to the builtin labels and must not repeat one);
  - `name` is non-empty and used once;
  - `category` is "program" and `tags` holds exactly one registry category from the allowed list;
  - `source` lists at least two sources, each `owner/repo path@<12 hex digits>`, from at least
    two different owners (independent publishers).

With --mirrors DIR (a directory of `owner+name/repo` git snapshots, as `fetch` leaves them),
also checks that every cited file, at the cited commit, contains the address as a whole token
(base58 alone cannot catch a dropped last character: 43 and 44 characters both decode to 32 bytes).

Prints one line per failing entry and a summary `N passed, M failed`; exits 1 on any failure.
Usage: python3 scripts/check_programs.py [--file PATH] [--default PATH] [--mirrors DIR]
"""

import argparse
import os
import re
import subprocess
import sys
import tomllib

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

CATEGORIES = {
    "dex", "amm", "aggregator", "nft_marketplace", "nft", "lending", "staking",
    "liquid_staking", "governance", "bridge", "oracle", "wallet_infrastructure",
    "perpetuals", "launchpad", "payments", "token", "infrastructure", "defi",
}
FIELDS = {"address", "name", "category", "tags", "source"}
SOURCE_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)/([A-Za-z0-9_.-]+) (\S+)@([0-9a-f]{12})$")


def base58_decode(text):
    """Bytes of a base58 string (Bitcoin alphabet), or None if a character is not base58."""
    number = 0
    for char in text:
        digit = ALPHABET.find(char)
        if digit < 0:
            return None
        number = number * 58 + digit
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    leading_zeros = len(text) - len(text.lstrip("1"))
    return b"\x00" * leading_zeros + body


def contains_token(text, address):
    """True when address occurs in text as a whole base58 token (a truncated id does not match)."""
    pattern = r"(?<![1-9A-HJ-NP-Za-km-z])" + re.escape(address) + r"(?![1-9A-HJ-NP-Za-km-z])"
    return re.search(pattern, text) is not None


def default_addresses(path):
    if not os.path.exists(path):
        return set()
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return {entry.get("address") for entry in data.get("label", [])}


def file_at_commit(mirrors, owner, repo, commit, path):
    """The text of path at the commit whose hash starts with `commit`, or None."""
    for name in os.listdir(mirrors):
        if name.lower() == f"{owner}+{repo}".lower():
            git_dir = os.path.join(mirrors, name, "repo")
            full = subprocess.run(["git", "-C", git_dir, "rev-parse", "--verify", "-q", f"{commit}^{{commit}}"],
                                  capture_output=True, text=True).stdout.strip()
            if not full:
                return None
            shown = subprocess.run(["git", "-C", git_dir, "show", f"{full}:{path}"], capture_output=True, text=True)
            return shown.stdout if shown.returncode == 0 else None
    return None


def check(entries, builtin, mirrors):
    failures = []
    seen_addresses = {}
    seen_names = {}
    for index, entry in enumerate(entries, start=1):
        label = f"label #{index} ({entry.get('address', '?')})"
        errors = []
        unknown = set(entry) - FIELDS
        if unknown:
            errors.append(f"unknown fields {sorted(unknown)}")
        address = entry.get("address")
        if not isinstance(address, str):
            errors.append("no address")
        else:
            decoded = base58_decode(address)
            if decoded is None:
                errors.append("address is not base58")
            elif len(decoded) != 32:
                errors.append(f"address decodes to {len(decoded)} bytes, not 32")
            if address in seen_addresses:
                errors.append(f"address also listed as label #{seen_addresses[address]}")
            seen_addresses.setdefault(address, index)
            if address in builtin:
                errors.append("address already in the builtin labels (src/labels/default.toml)")
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            errors.append("no name")
        elif name in seen_names:
            errors.append(f"name also used by label #{seen_names[name]}")
        else:
            seen_names[name] = index
        if entry.get("category") != "program":
            errors.append(f"category is {entry.get('category')!r}, not 'program'")
        tags = entry.get("tags")
        if not (isinstance(tags, list) and len(tags) == 1 and tags[0] in CATEGORIES):
            errors.append(f"tags must be one registry category from {sorted(CATEGORIES)}, got {tags!r}")
        source = entry.get("source")
        parts = [part.strip() for part in source.split(";")] if isinstance(source, str) else []
        owners = set()
        for part in parts:
            match = SOURCE_RE.match(part)
            if not match:
                errors.append(f"source {part!r} is not 'owner/repo path@<12 hex>'")
                continue
            owner, repo, path, commit = match.groups()
            owners.add(owner.lower())
            if mirrors and isinstance(address, str):
                text = file_at_commit(mirrors, owner, repo, commit, path)
                if text is None:
                    errors.append(f"source {part!r}: file not found in the mirrors")
                elif not contains_token(text, address):
                    errors.append(f"source {part!r}: the file does not contain the address as a whole token")
        if len(parts) < 2:
            errors.append(f"{len(parts)} source(s); at least two are required")
        elif len(owners) < 2:
            errors.append("all sources come from one owner; two independent publishers are required")
        if errors:
            failures.append((label, errors))
    return failures


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=os.path.join(root, "src", "labels", "programs.toml"))
    parser.add_argument("--default", default=os.path.join(root, "src", "labels", "default.toml"))
    parser.add_argument("--mirrors", help="directory of owner+name/repo git snapshots to re-check every source")
    args = parser.parse_args()

    with open(args.file, "rb") as f:
        data = tomllib.load(f)
    problems = []
    if data.get("version") != 1:
        problems.append(f"version is {data.get('version')!r}, not 1")
    unknown_top = set(data) - {"version", "label"}
    if unknown_top:
        problems.append(f"unknown top-level keys {sorted(unknown_top)}")
    entries = data.get("label", [])
    if not entries:
        problems.append("no [[label]] entries")
    for problem in problems:
        print(f"FAIL file: {problem}")

    failures = check(entries, default_addresses(args.default), args.mirrors)
    for label, errors in failures:
        for error in errors:
            print(f"FAIL {label}: {error}")
    failed = len(failures)
    passed = len(entries) - failed
    by_category = {}
    for entry in entries:
        tag = (entry.get("tags") or ["?"])[0]
        by_category[tag] = by_category.get(tag, 0) + 1
    print("categories: " + ", ".join(f"{k} {v}" for k, v in sorted(by_category.items())))
    print(f"{passed} passed, {failed} failed" + (f" ({len(problems)} file problem(s))" if problems else ""))
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
