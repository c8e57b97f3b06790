// Part B without the server: every case executes for real in LiteSVM, the oracle's effects of
// that execution are what the case says (written by hand), and the JSON-RPC shim answers like a
// node — its simulateTransaction post-state, decoded back to bytes, is LiteSVM's real post-state.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import { Keypair, SystemProgram, Transaction, PublicKey } from "@solana/web3.js";
import { CASES } from "./cases.mjs";
import { startShim, rpc, rpcResult, executeRecorded } from "./shim.mjs";
import { computeEffects, decimalsFrom, readSet, snapshot, wireOf, unsignedWire, messageAccounts } from "./oracle.mjs";
import { encodeFromUi, IDS, decodeTokenAccount, decodeMint } from "./layouts.mjs";
import { rawAccount, setRawAccount, track, seededKeypair, normalize, sendTransaction, airdrop } from "./util.mjs";

let shim;
before(async () => {
  shim = await startShim(new LiteSVM());
});
after(async () => {
  await shim?.close();
});

/** A node's UiAccount decoded back to raw: {lamports, owner, data, executable} (null stays null). */
function decodeUi(ui) {
  if (ui === null) return null;
  return { lamports: BigInt(ui.lamports), owner: ui.owner, data: encodeFromUi(ui), executable: ui.executable };
}

/** What an account's bytes mean. jsonParsed cannot carry bytes a program leaves stale (spl-token's
 *  Revoke and SetAuthority clear an option's tag and keep the old key behind it), so token
 *  accounts and mints compare by their decoded fields; every other account byte for byte. */
function meaning(raw) {
  const t = decodeTokenAccount(raw) ?? decodeMint(raw);
  const fields = t ? normalize(t) : { bytes: raw.data.toString("hex") };
  return { lamports: raw.lamports, owner: raw.owner, executable: raw.executable, space: raw.data.length, ...fields };
}

function sameAccount(ui, raw, where) {
  const exists = !!raw && raw.lamports > 0n;
  if (!exists) return assert.equal(ui, null, `${where}: a node shows no account, the shim showed one`);
  assert.ok(ui, `${where}: the account exists, the shim said null`);
  const kind = Array.isArray(ui.data) ? "base64" : `jsonParsed ${ui.data.program}/${ui.data.parsed.type}`;
  assert.deepEqual(meaning(decodeUi(ui)), meaning(raw), `${where}: the shim's ${kind} account, decoded, is not the real one`);
}

export function simulateParams(wire, addresses) {
  // What the scan sends (src/ledger/rpc/request.rs simulate_params).
  return [wire.toString("base64"), { encoding: "base64", sigVerify: false, replaceRecentBlockhash: true, commitment: "confirmed", accounts: { addresses, encoding: "jsonParsed" } }];
}

test("every case executes in LiteSVM; the oracle gives its effects; the shim's simulation is the real post-state", { timeout: 60_000 }, async (t) => {
  assert.ok(CASES.length >= 16, `${CASES.length} cases`);
  for (const c of CASES) {
    await t.test(c.name, { timeout: 15_000 }, async () => {
      const b = c.build();
      const svm = b.svm;
      shim.setSvm(svm);
      const signer = b.signer.toBase58();
      const reads = readSet(svm, b.tx);
      assert.ok(reads.includes(signer), "the signer is read");
      const { loaded } = messageAccounts(svm, b.tx);
      for (const a of loaded) assert.ok(reads.includes(a) || rawAccount(svm, a)?.executable, `loaded ${a} is read`);
      const pre = snapshot(svm, reads);

      // The shim's reads are the state (decoded from jsonParsed back to the same bytes).
      const read = await rpcResult(shim.url, "getMultipleAccounts", [reads, { encoding: "jsonParsed" }]);
      reads.forEach((a, i) => sameAccount(read.value[i], pre.get(a), `getMultipleAccounts ${a}`));

      const wire = c.post === "unsigned" ? unsignedWire(b.tx) : wireOf(b.tx);
      const sim = await rpcResult(shim.url, "simulateTransaction", simulateParams(wire, reads));
      assert.equal(sim.value.err, null, `simulation failed: ${JSON.stringify(sim.value.err)}\n${sim.value.logs.join("\n")}`);
      assert.equal(sim.value.accounts.length, reads.length);
      assert.ok(sim.value.unitsConsumed > 0 && sim.value.logs.length > 0);
      // Simulating changed nothing.
      for (const a of reads) assert.deepEqual(rawAccount(svm, a), pre.get(a), `simulation wrote ${a}`);

      const result = sendTransaction(svm, b.tx);
      if (result instanceof FailedTransactionMetadata) assert.fail(`${c.name} failed in LiteSVM: ${result.err()}\n${result.meta().logs().join("\n")}`);
      const post = snapshot(svm, reads);

      const effects = computeEffects({ pre, post, signer, decimalsOf: decimalsFrom(svm) });
      assert.ok(effects.length > 0, "no effects");
      assert.deepEqual(effects, c.effects(b));
      reads.forEach((a, i) => sameAccount(sim.value.accounts[i], post.get(a), `simulated ${a}`));
      c.check?.(b, svm);
    });
  }
});

test("oracle: kind order, account order, role order, created/closed alone", { timeout: 10_000 }, () => {
  const signer = seededKeypair("order/signer").publicKey.toBase58();
  const other = seededKeypair("order/other").publicKey.toBase58();
  const svm = new LiteSVM();
  const stakeData = (staker, withdrawer) => {
    const d = Buffer.alloc(200);
    d.writeUInt32LE(1, 0);
    d.set(new PublicKey(staker).toBytes(), 12);
    d.set(new PublicKey(withdrawer).toBytes(), 44);
    return d;
  };
  const nonceData = (authority) => {
    const d = Buffer.alloc(80);
    d.writeUInt32LE(1, 0);
    d.writeUInt32LE(1, 4);
    d.set(new PublicKey(authority).toBytes(), 8);
    return d;
  };
  const acct = (owner, data, lamports = 1_000_000n) => ({ lamports, owner, data, executable: false, rentEpoch: 0n });
  const keys = Array.from({ length: 4 }, (_, i) => seededKeypair(`order/${i}`).publicKey.toBase58()).sort();
  const pre = new Map([
    [signer, acct(IDS.system, Buffer.alloc(0), 10_000_000n)],
    [keys[3], acct(IDS.stake, stakeData(signer, signer))],
    [keys[1], acct(IDS.stake, stakeData(signer, signer))],
    [keys[2], acct(IDS.system, nonceData(signer))],
    [keys[0], null],
  ]);
  const post = new Map([
    [signer, acct(IDS.system, Buffer.alloc(0), 9_000_000n)],
    [keys[3], acct(IDS.stake, stakeData(other, other))],
    [keys[1], acct(IDS.stake, stakeData(signer, other))],
    [keys[2], null],
    [keys[0], acct(IDS.stake, stakeData(other, signer))],
  ]);
  const effects = computeEffects({ pre, post, signer, decimalsOf: () => 0 });
  assert.deepEqual(effects, [
    { kind: "sol", account: signer, deltaLamports: -1_000_000 },
    // keys[3] is no longer the signer's (neither role): its lamports go to its new withdrawer;
    // keys[1] (still staked by the signer) and keys[0] (withdrawn by it) stay the signer's.
    { kind: "sol_sent", to: other, lamports: 1_000_000 },
    { kind: "account_created", account: keys[0], owner: IDS.stake, lamports: 1_000_000 },
    { kind: "account_closed", account: keys[2], lamports: 1_000_000 },
    { kind: "stake_authority_change", account: keys[1], role: "withdrawer", from: signer, to: other },
    { kind: "stake_authority_change", account: keys[3], role: "staker", from: signer, to: other },
    { kind: "stake_authority_change", account: keys[3], role: "withdrawer", from: signer, to: other },
  ]);
  void svm;
});

test("shim: JSON-RPC 2.0 like a node (batch, errors, absent and emptied accounts, no state change)", { timeout: 20_000 }, async () => {
  const svm = new LiteSVM();
  shim.setSvm(svm);
  const payer = Keypair.generate();
  airdrop(svm, payer.publicKey, 5_000_000_000n);
  const absent = Keypair.generate().publicKey.toBase58();
  const emptied = Keypair.generate().publicKey.toBase58();
  setRawAccount(svm, emptied, { lamports: 0n, owner: IDS.system, data: Buffer.alloc(0), rentEpoch: 0n });

  assert.equal(await rpcResult(shim.url, "getHealth"), "ok");
  assert.equal(typeof (await rpcResult(shim.url, "getSlot")), "number");
  const bh = await rpcResult(shim.url, "getLatestBlockhash");
  assert.equal(bh.value.blockhash, svm.latestBlockhash());
  assert.deepEqual(await rpcResult(shim.url, "getSignaturesForAddress", [absent, { limit: 10 }]), []);
  const unknown = await rpc(shim.url, "getSlotLeader", []);
  assert.equal(unknown.error.code, -32601);
  assert.equal(unknown.id, 1);
  const parse = await fetch(shim.url, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" }).then((r) => r.json());
  assert.equal(parse.error.code, -32700);

  const batch = await rpc(shim.url, [
    { jsonrpc: "2.0", id: "a", method: "getAccountInfo", params: [payer.publicKey.toBase58(), { encoding: "jsonParsed" }] },
    { jsonrpc: "2.0", id: 7, method: "getMultipleAccounts", params: [[absent, emptied, payer.publicKey.toBase58()], { encoding: "jsonParsed" }] },
    { jsonrpc: "2.0", id: 8, method: "noSuchMethod", params: [] },
  ]);
  assert.equal(batch.length, 3);
  assert.deepEqual(batch.map((r) => r.id), ["a", 7, 8]);
  const wallet = batch[0].result.value;
  assert.deepEqual(wallet.data, ["", "base64"]);
  assert.equal(wallet.owner, IDS.system);
  assert.equal(wallet.lamports, 5_000_000_000);
  assert.equal(wallet.space, 0);
  assert.equal(typeof batch[0].result.context.slot, "number");
  assert.deepEqual(batch[1].result.value.slice(0, 2), [null, null]);
  assert.equal(batch[2].error.code, -32601);

  // A failing simulation: the node's error shape, the state untouched.
  const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: svm.latestBlockhash() }).add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(absent), lamports: 9_000_000_000 }));
  const wire = tx.serialize({ requireAllSignatures: false, verifySignatures: false });
  const before = rawAccount(svm, payer.publicKey);
  const failed = await rpcResult(shim.url, "simulateTransaction", simulateParams(wire, [payer.publicKey.toBase58(), absent]));
  assert.deepEqual(failed.value.err, { InstructionError: [0, { Custom: 1 }] });
  assert.equal(failed.value.accounts[0].lamports, 5_000_000_000);
  assert.equal(failed.value.accounts[1], null);
  assert.deepEqual(rawAccount(svm, payer.publicKey), before);

  // Without replaceRecentBlockhash an unknown blockhash is the node's BlockhashNotFound.
  const stale = new Transaction({ feePayer: payer.publicKey, recentBlockhash: Keypair.generate().publicKey.toBase58() }).add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(absent), lamports: 1_000_000_000 }));
  const staleWire = stale.serialize({ requireAllSignatures: false, verifySignatures: false });
  const r = await rpcResult(shim.url, "simulateTransaction", [staleWire.toString("base64"), { encoding: "base64", sigVerify: false }]);
  assert.equal(r.value.err, "BlockhashNotFound");
  const replaced = await rpcResult(shim.url, "simulateTransaction", [staleWire.toString("base64"), { encoding: "base64", replaceRecentBlockhash: true }]);
  assert.equal(replaced.value.err, null);
  assert.equal(replaced.value.replacementBlockhash.blockhash, svm.latestBlockhash());
  // A new account left below rent exemption: the node's InsufficientFundsForRent.
  const dust = new Transaction({ feePayer: payer.publicKey, recentBlockhash: svm.latestBlockhash() }).add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(absent), lamports: 1 }));
  const dusty = await rpcResult(shim.url, "simulateTransaction", simulateParams(dust.serialize({ requireAllSignatures: false, verifySignatures: false }), [absent]));
  assert.deepEqual(dusty.value.err, { InsufficientFundsForRent: { account_index: 1 } });
  const both = await rpc(shim.url, "simulateTransaction", [staleWire.toString("base64"), { encoding: "base64", sigVerify: true, replaceRecentBlockhash: true }]);
  assert.equal(both.error.code, -32602);

  // Enumerations over the addresses the harness wrote.
  track(svm, payer.publicKey);
  const system = await rpcResult(shim.url, "getProgramAccounts", [IDS.system, { encoding: "base64", filters: [{ dataSize: 0 }] }]);
  assert.ok(system.some((x) => x.pubkey === payer.publicKey.toBase58()));
  assert.ok(!system.some((x) => x.pubkey === emptied));
});

test("shim: history of recorded transactions (getSignaturesForAddress newest first, paged; getTransaction jsonParsed)", { timeout: 20_000 }, async () => {
  const svm = new LiteSVM();
  shim.setSvm(svm);
  const payer = seededKeypair("history/payer");
  const to = seededKeypair("history/to").publicKey;
  airdrop(svm, payer.publicKey, 5_000_000_000n);
  const send = (lamports) => new Transaction({ feePayer: payer.publicKey, recentBlockhash: svm.latestBlockhash() })
    .add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports }));
  const signed = (lamports) => { const tx = send(lamports); tx.sign(payer); return tx; };
  const first = executeRecorded(svm, signed(1_000_000));
  const second = executeRecorded(svm, signed(2_000_000));
  const unsigned = executeRecorded(svm, send(3_000), { sigverify: false });
  const list = await rpcResult(shim.url, "getSignaturesForAddress", [to.toBase58(), { limit: 10 }]);
  assert.deepEqual(list.map((e) => e.signature), [unsigned, second, first]);
  assert.ok(list[0].slot > list[1].slot && list[1].slot > list[2].slot, "each recorded transaction has a slot of its own");
  const page = await rpcResult(shim.url, "getSignaturesForAddress", [to.toBase58(), { limit: 1, before: unsigned }]);
  assert.deepEqual(page.map((e) => e.signature), [second]);
  const newer = await rpcResult(shim.url, "getSignaturesForAddress", [to.toBase58(), { until: first }]);
  assert.deepEqual(newer.map((e) => e.signature), [unsigned, second]);
  const t = await rpcResult(shim.url, "getTransaction", [second, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0 }]);
  assert.deepEqual(t.transaction.message.instructions[0].parsed, { info: { destination: to.toBase58(), lamports: 2_000_000, source: payer.publicKey.toBase58() }, type: "transfer" });
  assert.deepEqual(t.transaction.message.accountKeys.map((k) => [k.pubkey, k.signer, k.writable]), [
    [payer.publicKey.toBase58(), true, true], [to.toBase58(), false, true], [IDS.system, false, false],
  ]);
  assert.equal(t.meta.postBalances[1] - t.meta.preBalances[1], 2_000_000);
  assert.equal(t.meta.preBalances[0] - t.meta.postBalances[0], 2_005_000);
  assert.equal(t.version, "legacy");
  assert.equal(await rpcResult(shim.url, "getTransaction", ["1111111111111111111111111111111111111111111111111111111111111111", {}]), null);
});
