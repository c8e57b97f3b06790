// Sequence scans against LiteSVM: `POST /v1/developer/intelligence/transaction` with
// `{"transactions": [...], "mode": "sequence" | "bundle"}` on `xray serve --ledger demo` (the demo
// ledger runs them in order on one state), held to the same transactions run one after the other
// in a LiteSVM of this test's own, over the demo's accounts read from `xray ledger serve --ledger
// demo` (jsonParsed, recreated byte for byte as fixes.test.mjs does; signature and blockhash
// checks off, no transaction history: the demo's transactions are unsigned, at a made-up
// blockhash, and all carry the same zero signature).
//
// For each sequence: (a) every transaction's `simulation.status` (ok / failed — with the runtime's
// error — / skipped: in a bundle, every one after a failure); (b) every transaction that ran, its
// `effects` deep-equal the oracle's (computeEffects) from LiteSVM's state before and after it;
// (c) the whole's `effects` equal the oracle's from the state before the first to the state after
// the last applied one, `applied.transactions` the ones that applied (a bundle with a failure:
// none, and no effects); (d) verdicts (a drain split in two: each part benign, the whole an
// asset_sweep not benign); (e) signed `xray.scan_sequence.v1`, each item bound to its message.
// Every sequence is asked twice: of `xray serve --ledger demo`, and of `xray serve --ledger
// rpc:<the demo's JSON-RPC server>`, whose rpc source runs it in process (the accounts' bytes
// read over JSON-RPC, `simulation.answeredBy: runtime`) — both held to the same oracle.
//
// A transaction that fails in LiteSVM (simulated first) is executed in mode sequence — it lands,
// pays its fee and applies nothing else, which the next one runs on — and not in a bundle
// (nothing of a bundle lands), as the server's sequence does.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import { VersionedTransaction } from "@solana/web3.js";
import { startDemoRpc, xray, requireBinary } from "./procs.mjs";
import { startScanServer } from "./scanserver.mjs";
import { rpcResult, errorJson } from "./shim.mjs";
import { IDS, encodeFromUi, decodeTokenAccount, decodeLookupTable } from "./layouts.mjs";
import { computeEffects, decimalsFrom, readSet, snapshot, messageAccounts } from "./oracle.mjs";
import { parseJson, rawAccount, setRawAccount } from "./util.mjs";

const SIGNATURE_TYPE = "xray.scan_sequence.v1";
const COVERS = ["verdict", "signer", "mode", "transactions", "findings", "effects", "applied", "counterparties", "engineVersions", "policy", "origin", "account", "scannedAt", "requestId"];
const VERDICTS = ["benign", "warning", "malicious"];

let demo; // xray ledger serve --ledger demo
let server; // xray serve --ledger demo
let overRpc; // xray serve --ledger rpc:<demo>: the rpc source runs the sequence in process
/** case -> base64 of its unsigned transaction (`xray ledger demo-tx <case>`). */
const wires = new Map();

const SEQUENCES = [
  { name: "a drain split in two: each part benign, the whole a sweep", cases: ["split-drain-1", "split-drain-2"], mode: "sequence", statuses: ["ok", "ok"], splitDrain: true },
  { name: "a SOL transfer, then a token transfer creating the same stranger's account", cases: ["sol-transfer", "token-transfer"], mode: "sequence", statuses: ["ok", "ok"] },
  { name: "89 % twice then 8 %: the second fails and applies nothing but its fee", cases: ["split-drain-1", "split-drain-1", "split-drain-2"], mode: "sequence", statuses: ["ok", "failed", "ok"] },
  { name: "the same as a bundle: the failure ends it, nothing applies", cases: ["split-drain-1", "split-drain-1", "split-drain-2"], mode: "bundle", statuses: ["ok", "failed", "skipped"] },
  { name: "approve, then set-owner on the same token account (the owner change clears the delegate)", cases: ["approve", "set-owner"], mode: "sequence", statuses: ["ok", "ok"] },
  { name: "close-authority, approve, set-owner, sol-transfer as a bundle that applies whole", cases: ["close-authority", "approve", "set-owner", "sol-transfer"], mode: "bundle", statuses: ["ok", "ok", "ok", "ok"] },
];

before(async () => {
  requireBinary();
  const cases = [...new Set(SEQUENCES.flatMap((s) => s.cases))];
  const built = cases.map(async (c) => {
    const r = await xray(["ledger", "demo-tx", c]);
    assert.equal(r.code, 0, `xray ledger demo-tx ${c}: ${r.stderr}`);
    wires.set(c, r.stdout.trim());
  });
  [demo, server] = await Promise.all([startDemoRpc(), startScanServer(null, { ledger: "demo" }), ...built]);
  overRpc = await startScanServer(null, { ledger: `rpc:${demo.url}` });
}, { timeout: 60_000 });

after(async () => {
  await Promise.all([server?.stop(), overRpc?.stop(), demo?.stop()]);
});

// ---------------------------------------------------------------------------------------------
// The demo's accounts in a fresh LiteSVM.

async function served(addresses) {
  const out = new Map();
  for (let i = 0; i < addresses.length; i += 100) {
    const part = addresses.slice(i, i + 100);
    const r = await rpcResult(demo.url, "getMultipleAccounts", [part, { encoding: "jsonParsed" }]);
    part.forEach((a, j) => out.set(a, r.value[j]));
  }
  return out;
}

const toRaw = (ui) => ({ lamports: BigInt(ui.lamports), owner: ui.owner, data: encodeFromUi(ui), executable: ui.executable, rentEpoch: BigInt(ui.rentEpoch) });

/** Recreates the demo's accounts at `addresses` in `svm` (each once: `loaded`); programs and
 *  sysvars are LiteSVM's own (the real ones; the demo serves stubs and placeholders). */
async function load(svm, addresses, loaded) {
  const wanted = [...new Set(addresses)].filter((a) => !loaded.has(a));
  for (const [address, ui] of await served(wanted)) {
    loaded.add(address);
    if (ui === null) continue;
    if (ui.executable) {
      assert.ok(rawAccount(svm, address)?.executable, `program ${address} is not loaded in LiteSVM`);
      continue;
    }
    if (ui.owner === IDS.sysvar || address.startsWith("Sysvar")) {
      assert.ok(rawAccount(svm, address), `sysvar ${address} missing in LiteSVM`);
      continue;
    }
    setRawAccount(svm, address, toRaw(ui));
  }
}

/** A LiteSVM holding every account the transactions name (static keys, lookup tables and the
 *  addresses loaded from them) and the mints of their token accounts, as the demo holds them. */
async function svmFor(txs) {
  const svm = new LiteSVM().withSigverify(false).withBlockhashCheck(false).withTransactionHistory(0n);
  const loaded = new Set();
  const tables = txs.flatMap((tx) => (tx.message.addressTableLookups ?? []).map((l) => l.accountKey.toBase58()));
  await load(svm, txs.flatMap((tx) => tx.message.staticAccountKeys.map((k) => k.toBase58())).concat(tables), loaded);
  for (const t of tables) assert.ok(decodeLookupTable(rawAccount(svm, t)), `lookup table ${t} not on the demo ledger`);
  const all = txs.flatMap((tx) => messageAccounts(svm, tx).all);
  await load(svm, all, loaded);
  const mints = all.map((a) => decodeTokenAccount(rawAccount(svm, a))?.mint).filter(Boolean);
  await load(svm, mints, loaded);
  return svm;
}

// ---------------------------------------------------------------------------------------------

/** The message bytes of a serialized transaction (after its signature section). */
function messageBytes(wire) {
  let count = 0;
  let shift = 0;
  let i = 0;
  for (;;) {
    const b = wire[i++];
    count |= (b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
  }
  return wire.subarray(i + 64 * count);
}

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const plain = (v) => JSON.parse(JSON.stringify(v));
const show = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : x));
const worst = (verdicts) => VERDICTS[Math.max(0, ...verdicts.map((v) => VERDICTS.indexOf(v)))];

/**
 * The sequence run in LiteSVM, as the server's contract says it runs: each transaction on the
 * state the applied ones before it left; a failed one applies nothing but its fee (in a bundle
 * not even that); in a bundle, every one
 * after a failure is skipped. {items: [{status, error, effects}], applied, whole}.
 */
function runInLiteSvm(svm, txs, wireBytes, signer, mode) {
  const decimalsOf = decimalsFrom(svm);
  const reads = txs.map((tx) => readSet(svm, tx));
  const union = [...new Set(reads.flat())];
  const first = snapshot(svm, union);
  const items = [];
  const applied = [];
  let failedAt = null;
  txs.forEach((tx, i) => {
    if (mode === "bundle" && failedAt !== null) return items.push({ status: "skipped" });
    const pre = snapshot(svm, reads[i]);
    const untouched = snapshot(svm, union);
    const sim = svm.inner.simulateVersionedTransaction(wireBytes[i]);
    if (sim instanceof FailedTransactionMetadata) {
      failedAt ??= i;
      assert.deepEqual(snapshot(svm, union), untouched, `LiteSVM's simulation of transaction ${i} changed its state`);
      // In a sequence it lands and fails: it pays its fee and nothing else applies (the next
      // one runs on that state). Nothing of a bundle lands: not executed.
      if (mode === "sequence") {
        const sent = svm.inner.sendVersionedTransaction(wireBytes[i]);
        assert.ok(sent instanceof FailedTransactionMetadata, `transaction ${i} failed simulated but not executed`);
      }
      return items.push({ status: "failed", error: errorJson(sim.err()), logs: sim.meta().logs() });
    }
    const sent = svm.inner.sendVersionedTransaction(wireBytes[i]);
    assert.ok(!(sent instanceof FailedTransactionMetadata), `transaction ${i} simulated ok but failed when executed: ${sent instanceof FailedTransactionMetadata ? show(errorJson(sent.err())) : ""}`);
    const post = snapshot(svm, reads[i]);
    applied.push(i);
    items.push({ status: "ok", effects: computeEffects({ pre, post, signer, decimalsOf }), unitsConsumed: Number(sent.computeUnitsConsumed()) });
  });
  const appliedNow = mode === "bundle" && failedAt !== null ? [] : applied;
  const whole = appliedNow.length ? computeEffects({ pre: first, post: snapshot(svm, union), signer, decimalsOf }) : [];
  return { items, applied: appliedNow, whole };
}

for (const [source, scanServer] of [["demo", () => server], ["rpc", () => overRpc]]) for (const s of SEQUENCES) {
  test(`${source}: ${s.mode} [${s.cases.join(", ")}]: ${s.name}`, { timeout: 20_000 }, async (t) => {
    const b64s = s.cases.map((c) => wires.get(c));
    const wireBytes = b64s.map((w) => Buffer.from(w, "base64"));
    const txs = wireBytes.map((w) => VersionedTransaction.deserialize(w));
    const signer = txs[0].message.staticAccountKeys[0].toBase58();

    const answer = await scanServer().scan({ transactions: b64s, mode: s.mode });
    assert.equal(answer.status, 200, `POST sequence: ${answer.status} ${answer.text.slice(0, 1000)}`);
    const data = parseJson(answer.text).data;
    assert.ok(data, `no data in ${answer.text.slice(0, 500)}`);

    const svm = await svmFor(txs);
    const oracle = runInLiteSvm(svm, txs, wireBytes, signer, s.mode);

    // The answer's shape.
    assert.deepEqual(Object.keys(data).filter((k) => k !== "signature").sort(), [...COVERS].sort(), "data's members");
    assert.equal(data.mode, s.mode);
    assert.equal(data.signer, signer);
    assert.equal(data.transactions.length, txs.length);
    // (e) signed as a sequence.
    assert.equal(data.signature?.type, SIGNATURE_TYPE, `signature: ${show(data.signature)}`);
    assert.deepEqual([...data.signature.covers].sort(), [...COVERS].sort(), "signature covers");

    // LiteSVM agrees with what this test expects of the demo's transactions (the statuses are
    // LiteSVM's, not taken from the server).
    assert.deepEqual(oracle.items.map((x) => x.status), s.statuses, `LiteSVM ran the sequence otherwise than expected: ${show(oracle.items)}`);

    data.transactions.forEach((item, i) => {
      const want = oracle.items[i];
      const where = `transaction ${i} (${s.cases[i]})`;
      assert.equal(item.index, i, `${where}: index`);
      assert.equal(item.transaction.messageSha256, sha256(messageBytes(wireBytes[i])), `${where}: messageSha256`);
      // (a) status; a failure's error is the runtime's.
      assert.equal(item.simulation.status, want.status, `${where}: simulation ${show(item.simulation)}; LiteSVM: ${show(want)}`);
      // Both sources run it in process, in the real runtime (rpc: on the node's accounts as bytes).
      if (want.status !== "skipped") assert.equal(item.simulation.answeredBy, "runtime", `${where}: ${show(item.simulation)}`);
      if (want.status === "failed") {
        assert.deepEqual(plain(item.simulation.error), plain(want.error), `${where}: the runtime's error\n server:  ${show(item.simulation.error)}\n LiteSVM: ${show(want.error)}`);
      }
      if (want.status === "skipped") {
        assert.match(item.simulation.reason ?? "", new RegExp(`transaction ${s.statuses.indexOf("failed")}\\b`), `${where}: the skip names the failed one`);
      }
      // (b) effects of each transaction that ran; none for one that did not.
      const effects = want.status === "ok" ? plain(want.effects) : [];
      assert.deepEqual(plain(item.effects), effects, `${where}: effects differ from LiteSVM's execution\n server: ${show(item.effects)}\n oracle: ${show(effects)}`);
      if (want.status === "ok" && item.simulation.unitsConsumed !== want.unitsConsumed) {
        t.diagnostic(`${where}: unitsConsumed server ${item.simulation.unitsConsumed}, LiteSVM ${want.unitsConsumed}`);
      }
    });

    // (c) what applies, and the whole's effects.
    assert.deepEqual(plain(data.applied.transactions), oracle.applied, `applied: ${show(data.applied)}`);
    if (oracle.applied.length === txs.length) assert.equal(data.applied.reason, undefined, "a reason though everything applies");
    else assert.ok(data.applied.reason, "no reason though some do not apply");
    assert.deepEqual(plain(data.effects), plain(oracle.whole), `the whole's effects differ from LiteSVM's\n server: ${show(data.effects)}\n oracle: ${show(oracle.whole)}`);
    if (oracle.applied.length === 0) assert.deepEqual(plain(data.findings), [], "findings of a whole that does not apply");

    // (d) verdicts: the whole's is the worst of every transaction's and of its own findings.
    const itemVerdicts = data.transactions.map((x) => x.verdict);
    assert.equal(VERDICTS.indexOf(data.verdict) >= VERDICTS.indexOf(worst(itemVerdicts)), true, `verdict ${data.verdict} milder than a transaction's (${itemVerdicts})`);
    if (s.splitDrain) {
      assert.deepEqual(itemVerdicts, ["benign", "benign"], `each part of the split drain alone is a payment: ${show(data.transactions.map((x) => x.findings))}`);
      const sweep = data.findings.find((f) => f.kind === "asset_sweep");
      assert.ok(sweep, `no asset_sweep of the whole: ${show(data.findings)}`);
      assert.notEqual(data.verdict, "benign", `the whole's verdict (findings ${show(data.findings)})`);
      t.diagnostic(`split drain: whole verdict ${data.verdict}, asset_sweep severity ${sweep.severity}`);
    }
    t.diagnostic(`verdicts: ${itemVerdicts.join(", ")} -> ${data.verdict}; findings of the whole: ${data.findings.map((f) => f.kind).join(", ") || "none"}`);
  });
}
