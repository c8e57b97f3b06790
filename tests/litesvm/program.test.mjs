// A dApp's program run in process: `xray serve --ledger rpc:<shim>` loads an upgradeable
// program's ELF from its program-data account (the program account's u32 2 + program-data
// address; the program-data account's 45-byte header — u32 3, u64 deploy slot, authority option —
// read with `dataSlice`, then the whole account, the ELF past the header) and runs it in its own
// SVM (`simulation.answeredBy: "runtime"`); without the program-data account it falls back to the
// node's `simulateTransaction` (`answeredBy: "node"`, `runtimeSkipped` naming the program-data).
//
// The program: the real SPL Memo v3 ELF (tests/fixtures/programs/spl_memo-3.0.0.so) deployed in
// the shim's LiteSVM at a fresh program id with litesvm's `addProgram`, which deploys with the
// upgradeable loader (a program account owned by BPFLoaderUpgradeab1e…, executable, naming the
// program-data PDA; the program-data account: deployed at the current slot, no upgrade authority,
// the ELF from byte 45, rent-exempt) — checked here byte for byte, so that the server sees what a
// node would serve; the clock is then moved one slot on (a program deployed before the slot that
// runs it). The
// transaction: unsigned, legacy, the wallet pays; Memo "hello" (no accounts) at that id, then a
// System transfer of 1 SOL to a fresh address. The oracle: the same unsigned transaction
// simulated in the shim's LiteSVM (signature checks off), its post-state held to the scan's
// `effects` with computeEffects (oracle.mjs), as scan.test.mjs does with a real execution.
//
// Cases: (1) the program deployed: the runtime answers, `status: ok`, effects = the oracle's, the
// program-data header was asked for base64 with `dataSlice` {offset 0, length 45}, no node simulation;
// (2) the same program id after its program-data account is removed from the shim (the server's
// runtime thread has just loaded that program at its deploy slot: the header, read every time,
// must find nothing, not the ELF it holds): the node answers, with what the shim answers (LiteSVM
// still runs the program from its own cache, so `ok`, effects = the oracle's); (3) a fresh program
// id whose program account names a program-data address that holds nothing: the node answers
// (LiteSVM: `InstructionError [0, UnsupportedProgramId]`, so `failed`).
//
// The shim's getMultipleAccounts ignores `dataSlice` (it answers the whole program-data account):
// the server reads only the header of what it gets.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import { Keypair, PublicKey, SystemProgram, Transaction, TransactionInstruction, VersionedTransaction, LAMPORTS_PER_SOL } from "@solana/web3.js";
import { startShim } from "./shim.mjs";
import { computeEffects, readSet, snapshot, unsignedWire } from "./oracle.mjs";
import { startScanServer, SCAN_PATH } from "./scanserver.mjs";
import { IDS, decodeUpgradeable } from "./layouts.mjs";
import { parseJson, rawAccount, setRawAccount, airdrop, track } from "./util.mjs";

const MEMO_ELF = readFileSync(new URL("../fixtures/programs/spl_memo-3.0.0.so", import.meta.url));
const LOADER = IDS.upgradeableLoader;
const FEE = 5000n; // one signature
const PROGRAM_DATA_HEADER = 45; // u32 tag 3, u64 slot, Option<Pubkey>

let shim;
let server;

before(async () => {
  shim = await startShim(new LiteSVM());
  server = await startScanServer(shim);
}, { timeout: 65_000 });

after(async () => {
  await server?.stop();
  await shim?.close();
});

/** A LiteSVM with the wallet funded (10 SOL), the shim now serving it. */
function freshSvm() {
  const svm = new LiteSVM();
  const wallet = Keypair.generate();
  const r = airdrop(svm, wallet.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
  assert.ok(!(r instanceof FailedTransactionMetadata), `airdrop failed: ${r?.err?.()}`);
  track(svm, wallet.publicKey);
  shim.setSvm(svm);
  return { svm, wallet };
}

/** Memo v3 deployed upgradeable at a fresh id by litesvm's addProgram: {id, programData}, both
 *  accounts checked to be what the upgradeable loader leaves. */
function deployMemo(svm) {
  const id = Keypair.generate().publicKey;
  svm.inner.addProgram(id.toBytes(), MEMO_ELF);
  const program = rawAccount(svm, id);
  assert.ok(program, "addProgram left no program account");
  assert.equal(program.owner, LOADER, "litesvm's addProgram did not deploy with the upgradeable loader");
  assert.equal(program.executable, true);
  const p = decodeUpgradeable(program);
  assert.equal(p?.type, "program", `program account: ${program.data.toString("hex")}`);
  const programData = new PublicKey(p.info.programData);
  const [pda] = PublicKey.findProgramAddressSync([id.toBytes()], new PublicKey(LOADER));
  assert.equal(programData.toBase58(), pda.toBase58(), "the program-data account is not the loader's PDA");
  const pd = rawAccount(svm, programData);
  assert.ok(pd, "addProgram left no program-data account");
  assert.equal(pd.owner, LOADER);
  assert.equal(pd.executable, false);
  const d = decodeUpgradeable(pd);
  assert.equal(d?.type, "programData", `program-data header: ${pd.data.subarray(0, PROGRAM_DATA_HEADER).toString("hex")}`);
  // addProgram deploys at the current slot; a chain's program was deployed before the slot that
  // runs it: one slot on.
  assert.equal(BigInt(d.info.slot), svm.getClock().slot, "addProgram's deploy slot");
  svm.warpToSlot(svm.getClock().slot + 1n);
  assert.equal(d.info.authority, null);
  assert.equal(Buffer.compare(pd.data.subarray(PROGRAM_DATA_HEADER), MEMO_ELF), 0, "the program-data account does not hold the ELF from byte 45");
  assert.ok(pd.lamports >= svm.minimumBalanceForRentExemption(BigInt(pd.data.length)), "the program-data account is not rent-exempt");
  track(svm, id, programData);
  return { id, programData };
}

/** Unsigned legacy transaction: Memo "hello" at `programId` (no accounts), then 1 SOL to a fresh
 *  address; the wallet pays. */
function memoAndTransfer(svm, wallet, programId) {
  const to = Keypair.generate().publicKey;
  const tx = new Transaction({ feePayer: wallet.publicKey, recentBlockhash: svm.latestBlockhash() }).add(
    new TransactionInstruction({ programId, keys: [], data: Buffer.from("hello", "utf8") }),
    SystemProgram.transfer({ fromPubkey: wallet.publicKey, toPubkey: to, lamports: LAMPORTS_PER_SOL }),
  );
  return { tx, to, wire: unsignedWire(tx) };
}

/** The oracle: the unsigned transaction simulated in the shim's LiteSVM (signature checks off, as
 *  the server's scan of an unsigned transaction); the signer's effects from its real pre-state and
 *  the simulation's post-state. {failed, err, logs, effects (null when it fails)}. */
function oracle(svm, tx, wire, signer) {
  const reads = readSet(svm, tx);
  const pre = snapshot(svm, reads);
  const sim = shim.simulateInSvm(VersionedTransaction.deserialize(wire), false);
  if (sim.failed) return { failed: true, err: sim.err, logs: sim.logs, effects: null, reads, pre };
  const post = new Map(reads.map((a) => [a, sim.post.has(a) ? sim.post.get(a) : pre.get(a)]));
  const decimalsOf = (mint) => {
    throw new Error(`no mint expected here (${mint})`);
  };
  return { failed: false, err: null, logs: sim.logs, effects: computeEffects({ pre, post, signer, decimalsOf }), reads, pre };
}

/** POST the scan; 200 and its `data`, the shim's calls made meanwhile. */
async function scanOf(wire, signer) {
  const first = shim.calls.length;
  const answer = await server.scan({ transaction: wire.toString("base64"), signer });
  assert.notEqual(answer.status, 404, `scan endpoint missing: POST ${SCAN_PATH} answered 404 (${answer.text.slice(0, 200)})`);
  assert.equal(answer.status, 200, `POST ${SCAN_PATH}: ${answer.status} ${answer.text.slice(0, 1000)}`);
  const data = parseJson(answer.text).data;
  assert.ok(data, `no data in ${answer.text.slice(0, 500)}`);
  const calls = shim.calls.slice(first);
  const errors = calls.filter((c) => c.error);
  assert.deepEqual(errors.map((c) => `${c.method}: ${c.error.code} ${c.error.message}`), [], "the shim refused some of the server's calls");
  return { data, calls };
}

const show = (x) => JSON.stringify(x);

/** Whether any getMultipleAccounts call of `calls` asked for `address`. */
const asked = (calls, address) => calls.some((c) => c.method === "getMultipleAccounts" && (c.params?.[0] ?? []).includes(address));

/** The parts of the answer every case checks: the first instruction names the program, and the
 *  scan changed nothing in the shim's LiteSVM. */
function common(data, programId, svm, o) {
  assert.equal(data.instructions?.[0]?.programId, programId.toBase58(), `instructions: ${show(data.instructions)}`);
  assert.equal(data.instructions?.[1]?.programId, SystemProgram.programId.toBase58(), `instructions: ${show(data.instructions)}`);
  for (const a of o.reads) assert.deepEqual(snapshot(svm, [a]).get(a), o.pre.get(a), `the scan changed ${a}`);
}

let deployed; // case 1's {svm, wallet, id, programData}: case 2 removes its program-data account

test("an upgradeable program (SPL Memo v3 at a fresh id) runs in the server's runtime", { timeout: 30_000 }, async (t) => {
  const { svm, wallet } = freshSvm();
  const { id, programData } = deployMemo(svm);
  const signer = wallet.publicKey.toBase58();
  const { tx, to, wire } = memoAndTransfer(svm, wallet, id);
  const o = oracle(svm, tx, wire, signer);
  assert.equal(o.failed, false, `the oracle's simulation failed: ${show(o.err)}\n${o.logs.join("\n")}`);
  assert.ok(o.logs.some((l) => l === 'Program log: Memo (len 5): "hello"'), `the memo did not run in LiteSVM:\n${o.logs.join("\n")}`);
  // The oracle itself: the fee and 1 SOL gone, 1 SOL sent.
  assert.deepEqual(o.effects, [
    { kind: "sol", account: signer, deltaLamports: -Number(BigInt(LAMPORTS_PER_SOL) + FEE) },
    { kind: "sol_sent", to: to.toBase58(), lamports: LAMPORTS_PER_SOL },
  ]);

  const { data, calls } = await scanOf(wire, signer);
  t.diagnostic(`simulation: ${show(data.simulation)}`);
  assert.equal(data.simulation?.status, "ok", `simulation: ${show(data.simulation)}`);
  assert.equal(data.simulation?.answeredBy, "runtime", `simulation: ${show(data.simulation)}`);
  assert.equal(data.simulation?.runtimeSkipped ?? null, null, `simulation: ${show(data.simulation)}`);
  assert.deepEqual(data.effects, JSON.parse(JSON.stringify(o.effects)), `effects differ from LiteSVM's simulation\n scan:   ${show(data.effects)}\n oracle: ${show(o.effects)}`);
  common(data, id, svm, o);
  // It read the program-data account from the shim (the ELF is nowhere else), and did not ask the
  // node to simulate.
  assert.ok(asked(calls, programData.toBase58()), `the server never read the program-data account ${programData.toBase58()}: ${show(calls.map((c) => c.method))}`);
  const reads = calls.filter((c) => c.method === "getMultipleAccounts" && (c.params?.[0] ?? []).includes(programData.toBase58()));
  assert.ok(
    reads.some((c) => c.params[1]?.encoding === "base64" && c.params[1]?.dataSlice?.offset === 0 && c.params[1]?.dataSlice?.length === PROGRAM_DATA_HEADER),
    `no base64 read of the program-data header (dataSlice 0..${PROGRAM_DATA_HEADER}): ${show(reads.map((c) => c.params[1]))}`,
  );
  t.diagnostic(`program-data reads: ${show(reads.map((c) => c.params[1]))}`);
  assert.ok(!calls.some((c) => c.method === "simulateTransaction"), "the node simulated it although the runtime answered");
  deployed = { svm, wallet, id, programData };
});

// The scan of `wire` was answered by the node (the shim), saying the program-data account is
// missing, and as the shim's own simulation answers.
async function assertNodeAnswered(t, { wire, signer, programData, o, id, svm }) {
  const { data, calls } = await scanOf(wire, signer);
  t.diagnostic(`simulation: ${show(data.simulation)}`);
  assert.equal(data.simulation?.answeredBy, "node", `simulation: ${show(data.simulation)}`);
  assert.match(data.simulation?.runtimeSkipped ?? "", /program-data/, `simulation: ${show(data.simulation)}`);
  assert.ok(data.simulation.runtimeSkipped.includes(programData.toBase58()), `runtimeSkipped does not name ${programData.toBase58()}: ${data.simulation.runtimeSkipped}`);
  assert.ok(calls.some((c) => c.method === "simulateTransaction"), "answeredBy node, but the node was never asked to simulate");
  assert.equal(data.simulation.status, o.failed ? "failed" : "ok", `the shim's simulation ${o.failed ? `failed (${show(o.err)})` : "succeeded"}; simulation: ${show(data.simulation)}`);
  if (!o.failed) assert.deepEqual(data.effects, JSON.parse(JSON.stringify(o.effects)), `effects differ from LiteSVM's simulation\n scan:   ${show(data.effects)}\n oracle: ${show(o.effects)}`);
  common(data, id, svm, o);
}

test("the same program after its program-data account is removed: the node answers", { timeout: 30_000 }, async (t) => {
  assert.ok(deployed, "case 1 did not run");
  const { svm, wallet, id, programData } = deployed;
  shim.setSvm(svm);
  setRawAccount(svm, programData, { lamports: 0n, owner: IDS.system, data: Buffer.alloc(0), executable: false });
  assert.equal(rawAccount(svm, programData), null, "the program-data account is still there");
  assert.equal(rawAccount(svm, id)?.owner, LOADER, "the program account went with it");
  const signer = wallet.publicKey.toBase58();
  const { tx, wire } = memoAndTransfer(svm, wallet, id);
  const o = oracle(svm, tx, wire, signer); // LiteSVM still runs the program from its own cache
  t.diagnostic(`the shim's own simulation: ${o.failed ? `failed ${show(o.err)}` : "ok"}`);

  await assertNodeAnswered(t, { wire, signer, programData, o, id, svm });
});

test("a program account naming a program-data address that holds nothing: the node answers", { timeout: 30_000 }, async (t) => {
  const { svm, wallet } = freshSvm();
  const id = Keypair.generate().publicKey;
  const programData = Keypair.generate().publicKey; // nothing there
  const data36 = Buffer.concat([Buffer.from([2, 0, 0, 0]), programData.toBuffer()]);
  setRawAccount(svm, id, { lamports: svm.minimumBalanceForRentExemption(36n), owner: LOADER, data: data36, executable: true });
  assert.equal(rawAccount(svm, programData), null);
  const signer = wallet.publicKey.toBase58();
  const { tx, wire } = memoAndTransfer(svm, wallet, id);
  const o = oracle(svm, tx, wire, signer);
  t.diagnostic(`the shim's own simulation: ${o.failed ? `failed ${show(o.err)}` : "ok"}`);

  await assertNodeAnswered(t, { wire, signer, programData, o, id, svm });
});
