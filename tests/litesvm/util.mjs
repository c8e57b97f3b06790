// Small shared helpers: lossless JSON (u64 values such as rentEpoch = 2^64-1 do not fit a JS
// number), base58, deterministic keypairs, raw account snapshots of a LiteSVM instance.

import { createHash } from "node:crypto";
import bs58 from "bs58";
import { Keypair, PublicKey, Transaction } from "@solana/web3.js";
import { Account } from "litesvm";

export { bs58 };

// ---------------------------------------------------------------------------------------------
// JSON that keeps integers exact: parse gives a BigInt for an integer literal outside the safe
// range, stringify writes a BigInt as its digits. Everything else is plain JSON.

export function parseJson(text) {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const fail = (why) => {
    throw new SyntaxError(`JSON: ${why} at ${i}`);
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const out = {};
      ws();
      if (text[i] === "}") return i++, out;
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a key");
        const k = string();
        ws();
        if (text[i++] !== ":") fail("expected ':'");
        out[k] = value();
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "}") return i++, out;
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const out = [];
      ws();
      if (text[i] === "]") return i++, out;
      for (;;) {
        out.push(value());
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "]") return i++, out;
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    if (text.startsWith("true", i)) return (i += 4), true;
    if (text.startsWith("false", i)) return (i += 5), false;
    if (text.startsWith("null", i)) return (i += 4), null;
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail("unexpected character");
    i += m[0].length;
    if (m[2] === undefined && m[3] === undefined) {
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    return Number(m[0]);
  };
  const string = () => {
    const start = i;
    i++;
    while (i < text.length) {
      if (text[i] === "\\") i += 2;
      else if (text[i] === '"') break;
      else i++;
    }
    if (i >= text.length) fail("unterminated string");
    i++;
    return JSON.parse(text.slice(start, i));
  };
  const out = value();
  ws();
  if (i !== text.length) fail("trailing characters");
  return out;
}

export function stringify(v) {
  if (v === null || v === undefined) return "null";
  switch (typeof v) {
    case "bigint":
      return v.toString();
    case "number":
      if (!Number.isFinite(v)) throw new Error(`cannot encode ${v} as JSON`);
      return JSON.stringify(v);
    case "string":
    case "boolean":
      return JSON.stringify(v);
    case "object":
      if (Array.isArray(v)) return `[${v.map(stringify).join(",")}]`;
      return `{${Object.entries(v)
        .filter(([, x]) => x !== undefined)
        .map(([k, x]) => `${JSON.stringify(k)}:${stringify(x)}`)
        .join(",")}}`;
    default:
      throw new Error(`cannot encode a ${typeof v} as JSON`);
  }
}

/** A u64 as a JSON-ready value: a number when exact, else a BigInt. */
export function u64Json(v) {
  const b = BigInt(v);
  return b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
}

/** Deep equality that treats a BigInt and a number of the same integer value as equal. */
export function normalize(v) {
  if (typeof v === "bigint") return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : `${v}n`;
  if (Array.isArray(v)) return v.map(normalize);
  if (v && typeof v === "object" && !(v instanceof Uint8Array)) {
    const out = {};
    for (const k of Object.keys(v).sort()) if (v[k] !== undefined) out[k] = normalize(v[k]);
    return out;
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Keys

export const b58 = (bytes) => bs58.encode(bytes);
export const pk = (x) => (x instanceof PublicKey ? x : new PublicKey(x));
export const keyString = (bytes) => new PublicKey(bytes).toBase58();

/** A keypair derived from a name: the same every run (labels files name such addresses). */
export function seededKeypair(name) {
  return Keypair.fromSeed(createHash("sha256").update(`xray-litesvm:${name}`).digest());
}

// ---------------------------------------------------------------------------------------------
// Raw accounts of a LiteSVM instance, exact (litesvm 1.x's JS wrapper answers @solana/kit's
// EncodedAccount, without rentEpoch, and its setAccount writes rentEpoch 0; the inner binding
// keeps and takes every field, u64s as BigInt).

/** {lamports, owner, data, executable, rentEpoch} or null. */
export function rawAccount(svm, address) {
  const a = svm.inner.getAccount(pk(address).toBytes());
  return a ? fromInner(a) : null;
}

export function fromInner(a) {
  return {
    lamports: a.lamports(),
    owner: keyString(a.owner()),
    data: Buffer.from(a.data()),
    executable: a.executable(),
    rentEpoch: a.rentEpoch(),
  };
}

export function setRawAccount(svm, address, acct) {
  svm.inner.setAccount(
    pk(address).toBytes(),
    new Account(BigInt(acct.lamports), Uint8Array.from(acct.data), pk(acct.owner).toBytes(), !!acct.executable, BigInt(acct.rentEpoch ?? 0)),
  );
  track(svm, address);
}

// ---------------------------------------------------------------------------------------------
// Transactions into a LiteSVM instance. litesvm 1.x's JS wrapper speaks @solana/kit (an address is
// a base58 string, `sendTransaction` takes kit's {messageBytes, signatures}); the harness builds
// with @solana/web3.js v1, so it hands the binding (`svm.inner`) wire bytes, as litesvm 0.8.0's
// wrapper did for web3.js transactions.

/** Executes a web3.js Transaction (serialized fully signed; signatures verified when the instance
 *  verifies them) or VersionedTransaction. TransactionMetadata | FailedTransactionMetadata. */
export function sendTransaction(svm, tx) {
  if (tx instanceof Transaction) {
    return svm.inner.sendLegacyTransaction(tx.serialize({ requireAllSignatures: true, verifySignatures: svm.inner.getSigverify() }));
  }
  return svm.inner.sendVersionedTransaction(tx.serialize());
}

/** LiteSVM's airdrop to a PublicKey or base58 address. TransactionMetadata | FailedTransactionMetadata. */
export function airdrop(svm, address, lamports) {
  return svm.inner.airdrop(pk(address).toBytes(), BigInt(lamports));
}

/** Addresses a shim can enumerate (getProgramAccounts, getTokenAccountsByOwner): LiteSVM has no
 *  account index, so every address a harness writes or sends a transaction over is remembered. */
export function track(svm, ...addresses) {
  svm.__known ??= new Set();
  for (const a of addresses) svm.__known.add(pk(a).toBase58());
}

export function exists(acct) {
  return !!acct && acct.lamports > 0n;
}

/** Promise that rejects after ms: bound every wait. */
export function withTimeout(promise, ms, what) {
  let t;
  return Promise.race([
    promise.finally(() => clearTimeout(t)),
    new Promise((_, reject) => {
      t = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]);
}
