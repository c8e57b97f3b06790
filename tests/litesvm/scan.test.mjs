// Part B with the server: one JSON-RPC shim over LiteSVM and one `xray serve --ledger rpc:<shim>`
// (fresh data dir, free ports, the case's attacker labelled `flagged`). For each case: set up its
// LiteSVM state, POST the transaction to /v1/developer/intelligence/transaction, then execute it
// for real in LiteSVM and hold the answer to the oracle: (a) `effects` deep-equal the oracle's from
// the real pre/post state, (b) every expected finding names its instruction (and no other finding
// appears), (c) the verdict.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import { CASES, ATTACKER } from "./cases.mjs";
import { startShim } from "./shim.mjs";
import { computeEffects, decimalsFrom, readSet, snapshot, wireOf, unsignedWire } from "./oracle.mjs";
import { callApi } from "./procs.mjs";
import { startScanServer, SCAN_PATH } from "./scanserver.mjs";
import { parseJson, rawAccount, setRawAccount, sendTransaction } from "./util.mjs";
import { runIsolated } from "./fixrun.mjs";
import { decodeTokenAccount } from "./layouts.mjs";

let shim;
let server;
let base;
let key;
let missing = false;
/** Cases the scan answered, with LiteSVM's state after executing them (for the fix test). */
const scanned = [];

before(async () => {
  shim = await startShim(new LiteSVM());
  server = await startScanServer(shim, { flagged: [ATTACKER.publicKey.toBase58()] });
  ({ base, key } = server);
}, { timeout: 65_000 });

after(async () => {
  await server?.stop();
  await shim?.close();
});

const scan = (body) => server.scan(body);

async function api(method, url, body) {
  const { status, text } = await callApi(base, key, method, url, body, { timeoutMs: 20_000 });
  return { status, json: text ? parseJson(text) : null, text };
}

/** The X-Ray of `wallet` through the API (the server reading the shim as its ledger). */
async function xrayOf(wallet) {
  const admitted = await api("POST", "/v1/developer/intelligence/wallet", { wallet, refresh: true });
  assert.ok([200, 202].includes(admitted.status), `analyze: ${admitted.status} ${admitted.text.slice(0, 500)}`);
  const id = admitted.json.data.analysisId;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const poll = await api("GET", `/v1/developer/intelligence/analysis/${id}?wait=10`);
    assert.equal(poll.status, 200, poll.text.slice(0, 500));
    const d = poll.json.data;
    if (d.status === "READY") return d.xray;
    assert.notEqual(d.status, "FAILED", `analysis failed: ${JSON.stringify(d.error)}`);
    assert.ok(Date.now() < deadline, "analysis not READY within 20 s");
  }
}

/** Execute `fixes` on the current state of `svm` in a LiteSVM of their own in a child process
 *  (fixrun.mjs says why), signature checks off, `wallet` paying; the
 *  accounts they name are written back into `svm` when they succeed. {ok, err, logs}. */
async function runFixes(svm, wallet, fixes) {
  const addresses = [...new Set([wallet, ...fixes.flatMap((ix) => ix.accounts.map((a) => a.pubkey))])];
  const r = await runIsolated({ accounts: addresses.map((a) => [a, rawAccount(svm, a)]), feePayer: wallet, instructions: fixes, read: addresses });
  if (r.ok) {
    for (const [a, raw] of r.post) {
      const before = rawAccount(svm, a);
      if (before?.executable || a.startsWith("Sysvar")) continue;
      setRawAccount(svm, a, raw ?? { lamports: 0n, owner: before?.owner ?? "11111111111111111111111111111111", data: Buffer.alloc(0), rentEpoch: 0n });
    }
  }
  return r;
}

// Works without the scan endpoint: the server's ledger client reads the shim's jsonParsed answers
// (getSignaturesForAddress, getTokenAccountsByOwner, getProgramAccounts, getMultipleAccounts …),
// finds what the real programs left in LiteSVM, and its fixes undo it there.
test("xray analyzes LiteSVM state through the shim, and its fixes work there", { timeout: 60_000 }, async (t) => {
  const first = shim.calls.length;
  t.after(() => {
    const calls = shim.calls.slice(first);
    const methods = [...new Set(calls.map((c) => c.method))].sort();
    t.diagnostic(`methods the server called: ${methods.join(", ")}`);
    const errors = calls.filter((c) => c.error);
    assert.deepEqual(errors.map((c) => `${c.method}: ${c.error.code} ${c.error.message}`), [], "the shim refused some of the server's calls");
  });
  await t.test("approve executed in LiteSVM -> open_token_delegation -> its revoke clears the delegate", { timeout: 25_000 }, async () => {
    const c = CASES.find((x) => x.name === "token_approve");
    const b = c.build();
    shim.setSvm(b.svm);
    const r = sendTransaction(b.svm, b.tx);
    assert.ok(!(r instanceof FailedTransactionMetadata), "approve failed");
    const x = await xrayOf(b.signer.toBase58());
    const sig = (x.signals ?? []).find((s) => s.kind === "open_token_delegation" && s.facts.tokenAccount === b.account.toBase58());
    assert.ok(sig, `no open_token_delegation for ${b.account.toBase58()}: ${(x.signals ?? []).map((s) => s.kind).join(", ")}`);
    assert.equal(sig.facts.delegate, b.delegate.toBase58());
    assert.equal(sig.facts.delegatedAmount, "500");
    assert.ok(sig.fixInstructions?.length, "no fix instructions");
    const fixed = await runFixes(b.svm, b.signer.toBase58(), sig.fixInstructions);
    assert.ok(fixed.ok, `the revoke failed: ${fixed.err}\n${fixed.logs.join("\n")}`);
    const after = decodeTokenAccount(rawAccount(b.svm, b.account));
    assert.equal(after.delegate, null);
    const again = await xrayOf(b.signer.toBase58());
    assert.ok(!(again.signals ?? []).some((s) => s.kind === "open_token_delegation"), "the delegation is still reported after the fix");
  });
  await t.test("nonce created in LiteSVM naming the wallet -> its fixes close it", { timeout: 25_000 }, async () => {
    const c = CASES.find((x) => x.name === "nonce_authorize");
    const b = c.build(); // a nonce the funder created, the wallet its authority; not executed
    shim.setSvm(b.svm);
    const x = await xrayOf(b.signer.toBase58());
    const sig = (x.signals ?? []).find((s) => s.facts?.nonceAccount === b.nonce.toBase58());
    assert.ok(sig, `no signal names nonce ${b.nonce.toBase58()}: ${(x.signals ?? []).map((s) => s.kind).join(", ")}`);
    t.diagnostic(`nonce signal: ${sig.kind}`);
    assert.ok(sig.fixInstructions?.length, `${sig.kind}: no fix instructions`);
    const fixed = await runFixes(b.svm, b.signer.toBase58(), sig.fixInstructions);
    assert.ok(fixed.ok, `the fix failed: ${fixed.err}\n${fixed.logs.join("\n")}`);
    const n = rawAccount(b.svm, b.nonce);
    assert.ok(!n || n.lamports === 0n, "the nonce account is still open after the fix");
  });
});

const describeFindings = (fs) => fs.map((f) => `${f.kind}@${f.instruction ?? "tx"}(${f.severity})`).join(", ") || "none";

test("the scan endpoint agrees with LiteSVM on every case", { timeout: 120_000 }, async (t) => {
  assert.ok(CASES.length >= 16);
  for (const c of CASES) {
    await t.test(c.name, { timeout: 20_000 }, async () => {
      if (missing) assert.fail("scan endpoint missing: POST " + SCAN_PATH + " answered 404");
      const b = c.build();
      const svm = b.svm;
      shim.setSvm(svm);
      const signer = b.signer.toBase58();
      const reads = readSet(svm, b.tx);
      const pre = snapshot(svm, reads);
      const wire = c.post === "unsigned" ? unsignedWire(b.tx) : wireOf(b.tx);

      const answer = await scan({ transaction: wire.toString("base64"), signer });
      if (answer.status === 404) {
        missing = true;
        assert.fail(`scan endpoint missing: POST ${SCAN_PATH} answered 404 (${answer.text.slice(0, 200)})`);
      }
      assert.equal(answer.status, 200, `POST ${SCAN_PATH}: ${answer.status} ${answer.text.slice(0, 1000)}`);
      const data = parseJson(answer.text).data;
      assert.ok(data, `no data in ${answer.text.slice(0, 500)}`);

      // Nothing the scan did changed the state; now execute for real.
      for (const a of reads) assert.deepEqual(snapshot(svm, [a]).get(a), pre.get(a), `the scan changed ${a}`);
      const result = sendTransaction(svm, b.tx);
      if (result instanceof FailedTransactionMetadata) assert.fail(`${c.name} failed in LiteSVM: ${result.err()}`);
      const post = snapshot(svm, reads);
      const oracle = computeEffects({ pre, post, signer, decimalsOf: decimalsFrom(svm) });

      // (a) effects
      assert.deepEqual(data.effects, JSON.parse(JSON.stringify(oracle)), `effects differ from LiteSVM's execution\n scan:   ${JSON.stringify(data.effects)}\n oracle: ${JSON.stringify(oracle)}`);
      // (b) findings
      const findings = data.findings ?? [];
      const unmatched = [...findings];
      for (const want of c.findings) {
        const i = unmatched.findIndex((f) => f.kind === want.kind && (f.instruction ?? null) === want.instruction);
        assert.ok(i >= 0, `expected finding ${want.kind} naming instruction ${want.instruction ?? "(none: transaction-wide)"}; got ${describeFindings(findings)}`);
        unmatched.splice(i, 1);
      }
      assert.deepEqual(unmatched.map((f) => `${f.kind}@${f.instruction ?? "tx"}`), [], `unexpected findings: ${describeFindings(unmatched)}`);
      // (c) verdict
      assert.equal(data.verdict, c.verdict, `verdict (findings: ${describeFindings(findings)})`);
      assert.equal(data.simulation?.status, "ok", `simulation: ${JSON.stringify(data.simulation)}`);
      scanned.push({ name: c.name, svm, signer, findings });
    });
  }
});

// Beyond the contract's (a)–(c): the scan's findings offer fixInstructions the signer can sign
// later; after the transaction ran, each must work on the state it left (the fix-instruction loop
// of Part A, for the scan).
test("every finding's fixInstructions work on the state the transaction leaves", { timeout: 60_000 }, async (t) => {
  if (missing) assert.fail(`scan endpoint missing: POST ${SCAN_PATH} answered 404`);
  assert.ok(scanned.length > 0, "no case was scanned");
  let fixes = 0;
  for (const { name, svm, signer, findings } of scanned) {
    for (const f of findings) {
      if (!f.fixInstructions?.length) continue;
      fixes++;
      await t.test(`${name}: ${f.kind}@${f.instruction ?? "tx"}`, { timeout: 20_000 }, async () => {
        for (const ix of f.fixInstructions) {
          for (const a of ix.accounts) if (a.isSigner) assert.equal(a.pubkey, signer, `fix signer ${a.pubkey} is not the signer`);
        }
        const r = await runFixes(svm, signer, f.fixInstructions);
        assert.ok(r.ok, `its fixInstructions (${f.fixInstructions.map((ix) => ix.description).join(" / ")}) fail after the transaction: ${r.err}\n${r.logs.join("\n")}`);
      });
    }
  }
  t.diagnostic(`${fixes} findings with fixInstructions`);
});
