// Guards (the scan's `guards`: Lighthouse assertions, and the transaction with them appended)
// against LiteSVM, with `xray serve --ledger rpc:<shim>` as scan.test.mjs starts it.
//
// NO LIGHTHOUSE PROGRAM RUNS HERE: there is no Lighthouse binary (.so) on this machine and no way
// to build SBF, so neither a guard nor the guarded transaction is executed by Lighthouse. What is
// checked instead, for every non-malicious case of cases.mjs and a few set up here (a token
// transfer that creates the recipient's ATA, a transfer between two token accounts of the
// signer's, a v0 token transfer whose token accounts are loaded from a lookup table), each
// scanned unsigned with `guards: {slippageBps: 50}`:
//   (a) every guard instruction decodes with lighthouse-sdk's own decoders (nothing left over,
//       re-encodes to the same bytes) into exactly the assertions its `asserts` names — variant,
//       value, operator, log level Silent — and equals the instruction the sdk builds from them;
//   (b) `guardedTransaction`: same header but for one more read-only unsigned key (the Lighthouse
//       program, when absent), no new signer or writable account, the original instructions
//       first and, resolved to addresses (through the lookup tables), identical; then the guards,
//       each naming its target; ≤ 1232 bytes. Then run in LiteSVM with a stand-in program at the
//       Lighthouse address (SPL Memo v2's ELF, which refuses a guard: its account is no signer):
//       the original instructions run there unchanged and it fails at the first guard;
//   (c) each assertion, evaluated here as Lighthouse reads an account (lamports; a token account
//       only when Token or Token-2022 owns it: owner at 32, amount u64 LE at 64, delegate COption
//       at 72, close authority COption at 129), holds on LiteSVM's real post-state of the original
//       transaction, tightly (the predicted values are the real ones) — and fails on tampered
//       runs of it: one lamport more sent (lamports), the token account handed to another owner
//       (owner), one token more than the slippage allows sent (amount; exactly the slippage
//       holds);
//   (d) the answer's signature is `xray.scan.v3` and covers `guards`.
// Then: malicious cases → withheld, no instructions; a failing simulation → withheld; a signed
// transaction → the same guards, `guardedTransaction` null with TRANSACTION_SIGNED; the SOL
// tolerance; a scan without `guards` keeps `xray.scan.v2`; `guards` of another shape is refused.
// One file past ~600 lines: one shim and one server serve every check, and each case runs (a)–(d)
// in turn on fresh copies of its state.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import {
  PublicKey, Transaction, SystemProgram, TransactionMessage, VersionedTransaction, AddressLookupTableProgram,
  AddressLookupTableAccount, LAMPORTS_PER_SOL,
} from "@solana/web3.js";
import {
  AuthorityType, createSetAuthorityInstruction, createTransferCheckedInstruction,
  createAssociatedTokenAccountIdempotentInstruction, getAssociatedTokenAddressSync,
} from "@solana/spl-token";
import { AccountRole, none, some } from "@solana/kit";
import {
  LIGHTHOUSE_PROGRAM_ADDRESS, LighthouseInstruction, identifyLighthouseInstruction, LogLevel, IntegerOperator,
  EquatableOperator, getAssertAccountInfoInstructionDataDecoder, getAssertAccountInfoInstructionDataEncoder,
  getAssertTokenAccountMultiInstructionDataDecoder, getAssertTokenAccountMultiInstructionDataEncoder,
  getAssertAccountInfoInstruction, getAssertTokenAccountMultiInstruction,
} from "lighthouse-sdk";
import { CASES, ATTACKER, World } from "./cases.mjs";
import { startShim, errorJson } from "./shim.mjs";
import { startScanServer, SCAN_PATH } from "./scanserver.mjs";
import { messageAccounts, readSet, snapshot, unsignedWire, wireOf } from "./oracle.mjs";
import { IDS, decodeTokenAccount, decodeMint } from "./layouts.mjs";
import { parseJson, rawAccount, sendTransaction, airdrop, seededKeypair, keyString } from "./util.mjs";

const SOL = LAMPORTS_PER_SOL;
const SLIPPAGE_BPS = 50;
const PACKET_BYTES_MAX = 1232;
const TOKEN_PROGRAMS = [IDS.token, IDS.token2022];
const MEMO_V2 = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
/** Where tampered runs send what they take (funded in each run), and the owner they hand to. */
const SINK = seededKeypair("guards/sink").publicKey;
const NEW_OWNER = seededKeypair("guards/new-owner").publicKey;
const TAMPER_FUNDER = seededKeypair("guards/tamper-funder");

// ---------------------------------------------------------------------------------------------
// Benign transactions set up here (cases.mjs's World; names apart from its cases').

const NEW_CASES = [
  {
    name: "guards_transfer_creating_ata",
    what: "createAssociatedTokenAccountIdempotent for the recipient, then transferChecked 1.25 of 5 tokens to it",
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 6 });
      const from = w.tokenAccount(m, signer.publicKey, 5_000_000n, "from");
      const recipient = w.key("recipient").publicKey;
      const ata = getAssociatedTokenAddressSync(m.mint, recipient);
      const tx = w.legacy([
        createAssociatedTokenAccountIdempotentInstruction(signer.publicKey, ata, recipient, m.mint),
        createTransferCheckedInstruction(from, m.mint, ata, signer.publicKey, 1_250_000n, 6),
      ], [signer]);
      return { svm: w.svm, signer: signer.publicKey, tx };
    },
  },
  {
    name: "guards_self_transfer",
    what: "transferChecked of 400 between two token accounts of the signer's",
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 2 });
      const a = w.tokenAccount(m, signer.publicKey, 1000n, "a");
      const b = w.tokenAccount(m, signer.publicKey, 0n, "b");
      return { svm: w.svm, signer: signer.publicKey, tx: w.legacy([createTransferCheckedInstruction(a, m.mint, b, signer.publicKey, 400n, 2)], [signer]) };
    },
  },
  {
    name: "guards_v0_token_lookup",
    what: "a v0 transferChecked whose two token accounts and mint are loaded from a lookup table",
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 6 });
      const from = w.tokenAccount(m, signer.publicKey, 1_000_000n, "from");
      const to = w.tokenAccount(m, w.key("recipient").publicKey, 0n, "to");
      // As cases.mjs's v0_lookup_table: recent slot 0, the addresses usable from the next slot.
      w.svm.warpToSlot(1n);
      const [create, table] = AddressLookupTableProgram.createLookupTable({ authority: w.funder.publicKey, payer: w.funder.publicKey, recentSlot: 0 });
      w.setup([create]);
      w.setup([AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: w.funder.publicKey, payer: w.funder.publicKey, addresses: [w.key("filler").publicKey, to, m.mint, from] })]);
      w.svm.warpToSlot(2n);
      const alt = new AddressLookupTableAccount({ key: table, state: AddressLookupTableAccount.deserialize(rawAccount(w.svm, table).data) });
      const message = new TransactionMessage({ payerKey: signer.publicKey, recentBlockhash: w.svm.latestBlockhash(), instructions: [createTransferCheckedInstruction(from, m.mint, to, signer.publicKey, 400_000n, 6)] })
        .compileToV0Message([alt]);
      assert.ok(!message.staticAccountKeys.some((k) => k.equals(from) || k.equals(to)), "the token accounts must come from the table");
      const tx = new VersionedTransaction(message);
      tx.sign([signer]);
      return { svm: w.svm, signer: signer.publicKey, tx };
    },
  },
];

const GUARDED = [...CASES.filter((c) => c.verdict !== "malicious"), ...NEW_CASES];

// ---------------------------------------------------------------------------------------------
// The server

let shim;
let server;

before(async () => {
  shim = await startShim(new LiteSVM());
  server = await startScanServer(shim, { flagged: [ATTACKER.publicKey.toBase58()] });
}, { timeout: 65_000 });

after(async () => {
  await server?.stop();
  await shim?.close();
});

/** The scan's `data` (status 200 required). */
async function scanData(body) {
  const r = await server.scan(body);
  assert.equal(r.status, 200, `POST ${SCAN_PATH}: ${r.status} ${r.text.slice(0, 1000)}`);
  const data = parseJson(r.text).data;
  assert.ok(data, `no data in ${r.text.slice(0, 500)}`);
  return data;
}

/** (d) and the shape of `guards` for what was asked. */
function checkSignedGuards(data, { slippageBps, solToleranceLamports }) {
  assert.equal(data.signature?.type, "xray.scan.v3", `signature: ${JSON.stringify(data.signature)}`);
  assert.ok(data.signature.covers.includes("guards"), `covers: ${data.signature.covers}`);
  const g = data.guards;
  assert.ok(g, "no guards in the answer");
  assert.equal(g.slippageBps, slippageBps);
  assert.equal(g.solToleranceLamports, solToleranceLamports);
  return g;
}

// ---------------------------------------------------------------------------------------------
// (a) decoding with lighthouse-sdk

const DECODERS = {
  [LighthouseInstruction.AssertAccountInfo]: [getAssertAccountInfoInstructionDataDecoder(), getAssertAccountInfoInstructionDataEncoder()],
  [LighthouseInstruction.AssertTokenAccountMulti]: [getAssertTokenAccountMultiInstructionDataDecoder(), getAssertTokenAccountMultiInstructionDataEncoder()],
};
const TOKEN_ASSERT_KINDS = ["token_owner", "token_delegate", "token_close_authority", "token_amount_at_least"];
const option = (k) => (k === null ? none() : some(k));

/** The sdk's instruction for `asserts` on `target`: {kind, args} (args as its builders take them). */
function sdkInstructionFor(target, asserts) {
  if (asserts.length === 1 && asserts[0].kind === "lamports_at_least") {
    const assertion = { __kind: "Lamports", value: BigInt(asserts[0].lamports), operator: IntegerOperator.GreaterThanOrEqual };
    return { kind: LighthouseInstruction.AssertAccountInfo, ix: getAssertAccountInfoInstruction({ targetAccount: target, logLevel: LogLevel.Silent, assertion }), data: { discriminator: 5, logLevel: LogLevel.Silent, assertion } };
  }
  assert.deepEqual(asserts.map((a) => a.kind), TOKEN_ASSERT_KINDS, "a token guard asserts owner, delegate, close authority, amount, in this order");
  const [owner, delegate, closeAuthority, amount] = asserts;
  const assertions = [
    { __kind: "Owner", value: owner.owner, operator: EquatableOperator.Equal },
    { __kind: "Delegate", value: option(delegate.delegate), operator: EquatableOperator.Equal },
    { __kind: "CloseAuthority", value: option(closeAuthority.closeAuthority), operator: EquatableOperator.Equal },
    { __kind: "Amount", value: BigInt(amount.amount), operator: IntegerOperator.GreaterThanOrEqual },
  ];
  assert.match(amount.amount, /^(0|[1-9]\d*)$/, "a token amount is a u64 as a string");
  return { kind: LighthouseInstruction.AssertTokenAccountMulti, ix: getAssertTokenAccountMultiInstruction({ targetAccount: target, logLevel: LogLevel.Silent, assertions }), data: { discriminator: 10, logLevel: LogLevel.Silent, assertions } };
}

/** (a) for one guard instruction; {target, kind, decoded}. */
function decodeGuard(ix, i) {
  const where = `guardInstructions[${i}] (${JSON.stringify(ix.asserts)})`;
  assert.equal(ix.programId, LIGHTHOUSE_PROGRAM_ADDRESS, `${where}: program`);
  assert.equal(ix.accounts.length, 1, `${where}: one account, its target`);
  const [meta] = ix.accounts;
  assert.equal(meta.isSigner, false, `${where}: the target signs`);
  assert.equal(meta.isWritable, false, `${where}: the target is writable`);
  const data = Buffer.from(ix.data, "base64");
  assert.equal(data.toString("base64"), ix.data, `${where}: data is not canonical standard base64`);
  const kind = identifyLighthouseInstruction(data);
  assert.ok(DECODERS[kind], `${where}: instruction ${kind}, neither AssertAccountInfo nor AssertTokenAccountMulti`);
  const [decoder, encoder] = DECODERS[kind];
  const [decoded, end] = decoder.read(data, 0);
  assert.equal(end, data.length, `${where}: ${data.length - end} bytes after the assertions`);
  assert.deepEqual(Buffer.from(encoder.encode(decoded)), data, `${where}: the sdk re-encodes it otherwise`);
  const want = sdkInstructionFor(meta.address, ix.asserts);
  assert.equal(kind, want.kind, `${where}: instruction kind`);
  assert.deepEqual(decoded, want.data, `${where}: decoded data is not its asserts`);
  assert.deepEqual(Buffer.from(want.ix.data), data, `${where}: the sdk's instruction for its asserts has other bytes`);
  assert.equal(want.ix.programAddress, ix.programId);
  assert.deepEqual(want.ix.accounts, [{ address: meta.address, role: AccountRole.READONLY }]);
  return { target: meta.address, kind, decoded, data };
}

// ---------------------------------------------------------------------------------------------
// (c) the assertions, as Lighthouse checks them, over a raw account (null: absent)

function coptionKey(data, at) {
  const tag = data.readUInt32LE(at);
  if (tag === 0) return null;
  if (tag === 1) return keyString(data.subarray(at + 4, at + 36));
  return `COption tag ${tag}`;
}
const optionValue = (o) => (o.__option === "Some" ? o.value : null);

/** [{what, holds, actual}] for each assertion of a decoded guard on `acct`. */
function evaluate(guard, acct) {
  if (guard.kind === LighthouseInstruction.AssertAccountInfo) {
    const a = guard.decoded.assertion;
    const lamports = acct?.lamports ?? 0n;
    return [{ what: "lamports", holds: lamports >= a.value, actual: `${lamports} lamports, at least ${a.value} asserted` }];
  }
  return guard.decoded.assertions.map((a) => {
    const what = { Owner: "owner", Delegate: "delegate", CloseAuthority: "closeAuthority", Amount: "amount" }[a.__kind];
    if (!acct || acct.lamports === 0n || !TOKEN_PROGRAMS.includes(acct.owner)) {
      return { what, holds: false, actual: `not a token account (${acct ? `owner ${acct.owner}, ${acct.lamports} lamports` : "absent"})` };
    }
    const d = acct.data;
    if (d.length < 165) return { what, holds: false, actual: `${d.length} bytes` };
    switch (a.__kind) {
      case "Owner": {
        const owner = keyString(d.subarray(32, 64));
        return { what, holds: owner === a.value, actual: `owner ${owner}, ${a.value} asserted` };
      }
      case "Amount": {
        const amount = d.readBigUInt64LE(64);
        return { what, holds: amount >= a.value, actual: `amount ${amount}, at least ${a.value} asserted` };
      }
      case "Delegate": {
        const k = coptionKey(d, 72);
        return { what, holds: k === optionValue(a.value), actual: `delegate ${k}, ${optionValue(a.value)} asserted` };
      }
      case "CloseAuthority": {
        const k = coptionKey(d, 129);
        return { what, holds: k === optionValue(a.value), actual: `close authority ${k}, ${optionValue(a.value)} asserted` };
      }
      default:
        throw new Error(`unexpected token assertion ${a.__kind}`);
    }
  });
}

/** Every assertion of `guards` on `svm`'s state: [{target, what, holds, actual}]. */
const evaluateAll = (svm, guards) => guards.flatMap((g) => evaluate(g, rawAccount(svm, g.target)).map((r) => ({ target: g.target, ...r })));

// ---------------------------------------------------------------------------------------------
// (b) the guarded transaction

/** The message's lookup tables, as web3.js compiles and decompiles with them. */
function lookupTables(svm, message) {
  return (message.addressTableLookups ?? []).map((l) => new AddressLookupTableAccount({ key: l.accountKey, state: AddressLookupTableAccount.deserialize(rawAccount(svm, l.accountKey).data) }));
}

/** Each instruction with addresses for indices; each account's flags. */
function resolved(svm, tx) {
  const { all } = messageAccounts(svm, tx);
  const m = tx.message;
  const instructions = m.compiledInstructions.map((ix) => ({
    programId: all[ix.programIdIndex],
    accounts: ix.accountKeyIndexes.map((i) => all[i]),
    data: Buffer.from(ix.data).toString("hex"),
  }));
  const flags = new Map(all.map((a, i) => [a, { signer: m.isAccountSigner(i), writable: m.isAccountWritable(i) }]));
  return { all, instructions, flags };
}

function checkGuardedTransaction(svm, wire, g, guards) {
  assert.equal(typeof g.guardedTransaction, "string", `no guarded transaction: ${JSON.stringify(g.guardedTransactionError)}`);
  assert.equal(g.guardedTransactionError, undefined);
  const bytes = Buffer.from(g.guardedTransaction, "base64");
  assert.ok(bytes.length <= PACKET_BYTES_MAX, `the guarded transaction is ${bytes.length} bytes`);
  const orig = VersionedTransaction.deserialize(wire);
  const guarded = VersionedTransaction.deserialize(bytes);
  assert.deepEqual(Buffer.from(guarded.serialize()), bytes, "the guarded transaction does not round-trip through web3.js");
  const [o, m] = [orig.message, guarded.message];
  assert.equal(guarded.version, orig.version);
  assert.deepEqual(guarded.signatures.map((s) => Buffer.from(s).toString("hex")), orig.signatures.map((s) => Buffer.from(s).toString("hex")), "signatures");
  assert.equal(m.recentBlockhash, o.recentBlockhash);
  const origKeys = o.staticAccountKeys.map((k) => k.toBase58());
  const added = !origKeys.includes(LIGHTHOUSE_PROGRAM_ADDRESS);
  assert.deepEqual(m.staticAccountKeys.map((k) => k.toBase58()), added ? [...origKeys, LIGHTHOUSE_PROGRAM_ADDRESS] : origKeys, "static keys");
  assert.deepEqual(m.header, { ...o.header, numReadonlyUnsignedAccounts: o.header.numReadonlyUnsignedAccounts + (added ? 1 : 0) }, "header");
  const lookups = (x) => (x.addressTableLookups ?? []).map((l) => ({ table: l.accountKey.toBase58(), w: [...l.writableIndexes], r: [...l.readonlyIndexes] }));
  assert.deepEqual(lookups(m), lookups(o), "lookup tables");

  const before = resolved(svm, orig);
  const after = resolved(svm, guarded);
  assert.deepEqual(after.all, added ? [...before.all.slice(0, origKeys.length), LIGHTHOUSE_PROGRAM_ADDRESS, ...before.all.slice(origKeys.length)] : before.all, "accounts (static, then loaded)");
  for (const [a, f] of before.flags) assert.deepEqual(after.flags.get(a), f, `${a}: signer / writable changed`);
  assert.deepEqual(after.flags.get(LIGHTHOUSE_PROGRAM_ADDRESS), { signer: false, writable: false }, "the Lighthouse program signs or is writable");
  const n = before.instructions.length;
  assert.equal(after.instructions.length, n + guards.length, "instructions: the original ones and one per guard");
  assert.deepEqual(after.instructions.slice(0, n), before.instructions, "the original instructions, resolved, changed");
  guards.forEach((guard, i) => {
    assert.deepEqual(after.instructions[n + i], { programId: LIGHTHOUSE_PROGRAM_ADDRESS, accounts: [guard.target], data: guard.data.toString("hex") }, `appended instruction ${n + i} is not guardInstructions[${i}]`);
  });
  return { guarded, originalInstructions: n };
}

/** The guarded transaction in a fresh copy of the case's state with SPL Memo v2's ELF at the
 *  Lighthouse address (a stand-in: no Lighthouse binary here). Memo v2 accepts an instruction
 *  whose data is UTF-8 and whose every account signs (a signer of the message: the signer's
 *  lamports guard), and refuses any other; so the run must get past the original instructions
 *  (run within the guarded message, its lookup-table indices moved) and then succeed or fail
 *  exactly where Memo v2 refuses the first guard. */
function runWithStandIn(c, guarded, firstGuard, guards) {
  const svm = c.build().svm;
  svm.inner.addProgram(new PublicKey(LIGHTHOUSE_PROGRAM_ADDRESS).toBytes(), Uint8Array.from(rawAccount(svm, MEMO_V2).data));
  const { flags } = resolved(svm, guarded);
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  const accepts = (g) => {
    if (!flags.get(g.target).signer) return false;
    try {
      utf8.decode(g.data);
      return true;
    } catch {
      return false;
    }
  };
  const refused = guards.findIndex((g) => !accepts(g));
  const before = svm.inner.getSigverify();
  svm.withSigverify(false);
  let r;
  try {
    r = svm.inner.simulateVersionedTransaction(guarded.serialize());
  } finally {
    svm.withSigverify(before);
  }
  const failed = r instanceof FailedTransactionMetadata;
  const logs = r.meta().logs().join("\n");
  const err = failed ? errorJson(r.err()) : null;
  assert.ok(logs.includes(`Program ${LIGHTHOUSE_PROGRAM_ADDRESS} invoke [1]`), `the stand-in did not run (${JSON.stringify(err)}):\n${logs}`);
  if (refused < 0) assert.equal(err, null, `with the stand-in accepting every guard, it fails:\n${logs}`);
  else assert.equal(err?.InstructionError?.[0], firstGuard + refused, `with the stand-in refusing guard ${refused}, it fails with ${JSON.stringify(err)}, not at instruction ${firstGuard + refused}:\n${logs}`);
  return refused < 0 ? "every guard accepted, succeeded" : `failed at instruction ${firstGuard + refused} (guard ${refused})`;
}

// ---------------------------------------------------------------------------------------------
// Tampered runs

/** `tx` with `extra` instructions after its own, unsigned (random signatures, verification off),
 *  executed in `svm`; must succeed. */
function executeVariant(svm, tx, extra) {
  const v = VersionedTransaction.deserialize(wireOf(tx));
  const tables = lookupTables(svm, v.message);
  const { instructions } = TransactionMessage.decompile(v.message, { addressLookupTableAccounts: tables });
  const message = new TransactionMessage({ payerKey: v.message.staticAccountKeys[0], recentBlockhash: v.message.recentBlockhash, instructions: [...instructions, ...extra] });
  const variant = new VersionedTransaction(v.version === "legacy" ? message.compileToLegacyMessage() : message.compileToV0Message(tables));
  assert.equal(variant.message.header.numRequiredSignatures, v.message.header.numRequiredSignatures, "a tamper must not add a signer (it would change the fee)");
  variant.signatures = variant.signatures.map(() => Uint8Array.from(randomBytes(64)));
  const before = svm.inner.getSigverify();
  svm.withSigverify(false);
  let r;
  try {
    r = sendTransaction(svm, variant);
  } finally {
    svm.withSigverify(before);
  }
  if (r instanceof FailedTransactionMetadata) assert.fail(`the tampered transaction failed: ${JSON.stringify(errorJson(r.err()))}\n${r.meta().logs().join("\n")}`);
}

/** The tampers for the guards of one case, from the honest run's post-state (`svm`). */
function tampersFor(svm, signer, guards, { solTolerance = 0n } = {}) {
  const out = [];
  const sol = guards.find((g) => g.kind === LighthouseInstruction.AssertAccountInfo);
  if (sol) {
    assert.equal(sol.target, signer, "the lamports guard is the signer's");
    const send = (lamports) => () => [SystemProgram.transfer({ fromPubkey: new PublicKey(signer), toPubkey: SINK, lamports })];
    if (solTolerance > 0n) out.push({ label: `${solTolerance} lamports more sent (the tolerance)`, extra: send(solTolerance), mustFail: [] });
    out.push({ label: `${solTolerance + 1n} lamport(s) more sent`, extra: send(solTolerance + 1n), mustFail: [[signer, "lamports"]] });
  }
  for (const g of guards.filter((x) => x.kind === LighthouseInstruction.AssertTokenAccountMulti)) {
    const t = decodeTokenAccount(rawAccount(svm, g.target));
    if (t?.owner !== signer) continue; // a tamper signed by another key would change the fee
    const [target, program, mint] = [new PublicKey(g.target), new PublicKey(t.program), new PublicKey(t.mint)];
    out.push({
      label: `${g.target} handed to another owner`,
      extra: () => [createSetAuthorityInstruction(target, new PublicKey(signer), AuthorityType.AccountOwner, NEW_OWNER, [], program)],
      mustFail: [[g.target, "owner"]],
      // SetAuthority(AccountOwner) also clears the delegate.
      mayFail: [[g.target, "delegate"], [g.target, "closeAuthority"]],
    });
    const floor = g.decoded.assertions.find((a) => a.__kind === "Amount").value;
    if (t.amount === 0n) continue;
    const { decimals } = decodeMint(rawAccount(svm, t.mint));
    const sink = getAssociatedTokenAddressSync(mint, SINK, false, program);
    const take = (amount) => () => [createTransferCheckedInstruction(target, mint, sink, new PublicKey(signer), amount, decimals, [], program)];
    const sinkAccount = { mint, program, sink };
    if (t.amount - floor > 0n) out.push({ label: `${t.amount - floor} more tokens of ${g.target} sent (the slippage)`, extra: take(t.amount - floor), mustFail: [], sinkAccount });
    out.push({ label: `${t.amount - floor + 1n} more tokens of ${g.target} sent`, extra: take(t.amount - floor + 1n), mustFail: [[g.target, "amount"]], sinkAccount });
  }
  return out;
}

/** A fresh copy of the case's state, the sink funded (and its token account made), the
 *  tampered transaction executed; the state it left. */
function tamperedRun(c, tamper) {
  const b = c.build();
  const svm = b.svm;
  airdrop(svm, SINK, SOL);
  if (tamper.sinkAccount) {
    const { mint, program, sink } = tamper.sinkAccount;
    airdrop(svm, TAMPER_FUNDER.publicKey, SOL);
    const setup = new Transaction({ feePayer: TAMPER_FUNDER.publicKey, recentBlockhash: svm.latestBlockhash() })
      .add(createAssociatedTokenAccountIdempotentInstruction(TAMPER_FUNDER.publicKey, sink, SINK, mint, program));
    setup.sign(TAMPER_FUNDER);
    const r = sendTransaction(svm, setup);
    if (r instanceof FailedTransactionMetadata) throw new Error(`sink token account: ${JSON.stringify(errorJson(r.err()))}\n${r.meta().logs().join("\n")}`);
  }
  executeVariant(svm, b.tx, tamper.extra());
  return svm;
}

function checkTampered(c, guards, tamper) {
  const svm = tamperedRun(c, tamper);
  const key = (target, what) => `${target}/${what}`;
  const must = new Set(tamper.mustFail.map(([t, w]) => key(t, w)));
  const may = new Set((tamper.mayFail ?? []).map(([t, w]) => key(t, w)));
  const results = evaluateAll(svm, guards);
  for (const r of results) {
    const k = key(r.target, r.what);
    if (must.has(k)) assert.equal(r.holds, false, `${tamper.label}: the ${r.what} guard of ${r.target} still holds (${r.actual})`);
    else if (!may.has(k)) assert.equal(r.holds, true, `${tamper.label}: the ${r.what} guard of ${r.target} fails (${r.actual})`);
  }
  for (const k of must) assert.ok(results.some((r) => key(r.target, r.what) === k), `${tamper.label}: no guard ${k}`);
}

// ---------------------------------------------------------------------------------------------
// What the guards must be, from the real execution: the signer's lamports (when it keeps any),
// and every token account that is the signer's before or after and still exists, each at what
// the transaction really left (the floors: less the tolerance, the slippage).

function expectedGuards(signer, pre, post, { slippageBps = BigInt(SLIPPAGE_BPS), solTolerance = 0n } = {}) {
  const want = new Map();
  const lamports = post.get(signer)?.lamports ?? 0n;
  if (lamports > solTolerance) want.set(signer, [{ kind: "lamports_at_least", lamports: lamports - solTolerance }]);
  for (const [address, acct] of post) {
    const after = acct && acct.lamports > 0n ? decodeTokenAccount(acct) : null;
    if (!after) continue;
    const before = pre.get(address) && pre.get(address).lamports > 0n ? decodeTokenAccount(pre.get(address)) : null;
    if (after.owner !== signer && before?.owner !== signer) continue;
    want.set(address, [
      { kind: "token_owner", owner: after.owner },
      { kind: "token_delegate", delegate: after.delegate },
      { kind: "token_close_authority", closeAuthority: after.closeAuthority },
      { kind: "token_amount_at_least", amount: String(after.amount - (after.amount * slippageBps) / 10_000n) },
    ]);
  }
  return want;
}

const assertsNormalized = (asserts) => asserts.map((a) => (a.kind === "lamports_at_least" ? { ...a, lamports: BigInt(a.lamports) } : a));

// ---------------------------------------------------------------------------------------------

test("guards of benign and warning transactions: decode, append, hold on the real post-state, fail when tampered", { timeout: 120_000 }, async (t) => {
  assert.ok(GUARDED.length >= 12, `${GUARDED.length} cases`);
  for (const c of GUARDED) {
    await t.test(c.name, { timeout: 30_000 }, async (st) => {
      const b = c.build();
      shim.setSvm(b.svm);
      const signer = b.signer.toBase58();
      const wire = unsignedWire(b.tx);
      const data = await scanData({ transaction: wire.toString("base64"), signer, guards: { slippageBps: SLIPPAGE_BPS } });
      assert.notEqual(data.verdict, "malicious", `${c.name} is judged malicious: ${(data.findings ?? []).map((f) => f.kind).join(", ")}`);
      assert.equal(data.simulation?.status, "ok", `simulation: ${JSON.stringify(data.simulation)}`);
      const g = checkSignedGuards(data, { slippageBps: SLIPPAGE_BPS, solToleranceLamports: 0 });
      assert.equal(g.status, "added", `guards ${g.status}: ${g.reason}`);
      assert.equal(g.reason, undefined);
      assert.ok(g.guardInstructions.length > 0, "no guard instructions");

      // (a)
      const guards = g.guardInstructions.map(decodeGuard);
      assert.equal(new Set(guards.map((x) => x.target)).size, guards.length, "two guards name the same account");

      // (b)
      const { guarded, originalInstructions } = checkGuardedTransaction(b.svm, wire, g, guards);
      st.diagnostic(`${guards.length} guards; with the stand-in: ${runWithStandIn(c, guarded, originalInstructions, guards)}`);

      // (c) the original, executed for real; every guard holds on what it left, at what it left.
      const reads = readSet(b.svm, b.tx);
      const pre = snapshot(b.svm, reads);
      const r = sendTransaction(b.svm, b.tx);
      if (r instanceof FailedTransactionMetadata) assert.fail(`${c.name} failed in LiteSVM: ${JSON.stringify(errorJson(r.err()))}`);
      for (const x of evaluateAll(b.svm, guards)) assert.ok(x.holds, `the ${x.what} guard of ${x.target} fails on the real post-state: ${x.actual}`);
      const want = expectedGuards(signer, pre, snapshot(b.svm, reads));
      assert.deepEqual(
        new Map(g.guardInstructions.map((ix) => [ix.accounts[0].address, assertsNormalized(ix.asserts)])),
        new Map([...want].map(([a, asserts]) => [a, assertsNormalized(asserts)])),
        "the guards are not the signer's accounts as the transaction really left them",
      );

      // (c) tampered runs
      const tampers = tampersFor(b.svm, signer, guards);
      assert.ok(tampers.some((x) => x.mustFail.length), "no tamper applies");
      for (const tamper of tampers) {
        await st.test(tamper.label, { timeout: 10_000 }, () => checkTampered(c, guards, tamper));
      }
    });
  }
});

test("solToleranceLamports: the lamports floor is the prediction less it", { timeout: 20_000 }, async (t) => {
  const c = CASES.find((x) => x.name === "sol_transfer");
  const tolerance = 1_000_000n;
  const b = c.build();
  shim.setSvm(b.svm);
  const data = await scanData({ transaction: unsignedWire(b.tx).toString("base64"), guards: { slippageBps: SLIPPAGE_BPS, solToleranceLamports: Number(tolerance) } });
  const g = checkSignedGuards(data, { slippageBps: SLIPPAGE_BPS, solToleranceLamports: Number(tolerance) });
  assert.equal(g.status, "added", g.reason);
  const guards = g.guardInstructions.map(decodeGuard);
  const reads = readSet(b.svm, b.tx);
  const pre = snapshot(b.svm, reads);
  assert.ok(!(sendTransaction(b.svm, b.tx) instanceof FailedTransactionMetadata));
  const want = expectedGuards(b.signer.toBase58(), pre, snapshot(b.svm, reads), { solTolerance: tolerance });
  assert.deepEqual(g.guardInstructions.map((ix) => assertsNormalized(ix.asserts)), [...want.values()].map(assertsNormalized));
  for (const tamper of tampersFor(b.svm, b.signer.toBase58(), guards, { solTolerance: tolerance })) {
    await t.test(tamper.label, { timeout: 10_000 }, () => checkTampered(c, guards, tamper));
  }
});

test("malicious transactions: guards withheld", { timeout: 60_000 }, async (t) => {
  const malicious = CASES.filter((c) => c.verdict === "malicious");
  assert.ok(malicious.some((c) => c.name === "drain_multi"));
  for (const c of malicious) {
    await t.test(c.name, { timeout: 20_000 }, async () => {
      const b = c.build();
      shim.setSvm(b.svm);
      const data = await scanData({ transaction: unsignedWire(b.tx).toString("base64"), signer: b.signer.toBase58(), guards: { slippageBps: SLIPPAGE_BPS } });
      assert.equal(data.verdict, "malicious");
      const g = checkSignedGuards(data, { slippageBps: SLIPPAGE_BPS, solToleranceLamports: 0 });
      assert.equal(g.status, "withheld");
      assert.ok(typeof g.reason === "string" && g.reason.length > 0, "withheld without a reason");
      assert.deepEqual(g.guardInstructions, []);
      assert.equal(g.guardedTransaction, null);
      assert.equal(g.guardedTransactionError, undefined);
    });
  }
});

test("a transaction whose simulation fails: guards withheld", { timeout: 20_000 }, async () => {
  const w = new World("guards_overdraft");
  const signer = w.wallet(10);
  const tx = w.legacy([SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: w.key("recipient").publicKey, lamports: 20 * SOL })], [signer]);
  shim.setSvm(w.svm);
  const data = await scanData({ transaction: unsignedWire(tx).toString("base64"), guards: true });
  assert.notEqual(data.simulation?.status, "ok", `simulation: ${JSON.stringify(data.simulation)}`);
  const g = checkSignedGuards(data, { slippageBps: 0, solToleranceLamports: 0 });
  assert.equal(g.status, "withheld", `guards ${g.status} for a failing simulation`);
  assert.ok(g.reason, "withheld without a reason");
  assert.deepEqual(g.guardInstructions, []);
  assert.equal(g.guardedTransaction, null);
});

test("a signed transaction: the same guards, no guarded transaction (TRANSACTION_SIGNED)", { timeout: 30_000 }, async (t) => {
  for (const name of ["sol_transfer", "token_transfer_checked"]) {
    await t.test(name, { timeout: 15_000 }, async () => {
      const c = CASES.find((x) => x.name === name);
      const b = c.build();
      shim.setSvm(b.svm);
      const signed = wireOf(b.tx);
      assert.ok(VersionedTransaction.deserialize(signed).signatures.every((s) => s.some((x) => x !== 0)), "the transaction is not signed");
      const asked = { slippageBps: SLIPPAGE_BPS };
      const data = await scanData({ transaction: signed.toString("base64"), guards: asked });
      assert.equal(data.transaction?.signed, true);
      const g = checkSignedGuards(data, { ...asked, solToleranceLamports: 0 });
      assert.equal(g.status, "added", g.reason);
      assert.equal(g.guardedTransaction, null);
      assert.equal(g.guardedTransactionError?.code, "TRANSACTION_SIGNED", JSON.stringify(g.guardedTransactionError));
      assert.ok(g.guardedTransactionError.message);
      g.guardInstructions.forEach(decodeGuard);
      const unsigned = await scanData({ transaction: unsignedWire(b.tx).toString("base64"), guards: asked });
      assert.deepEqual(g.guardInstructions, unsigned.guards.guardInstructions, "signed and unsigned, the guards differ");
    });
  }
  await t.test("guards: true answers slippageBps 0; no guards asked: xray.scan.v2, no guards member", { timeout: 15_000 }, async () => {
    const b = CASES.find((x) => x.name === "token_transfer_checked").build();
    shim.setSvm(b.svm);
    const transaction = wireOf(b.tx).toString("base64");
    const exact = await scanData({ transaction, guards: true });
    const g = checkSignedGuards(exact, { slippageBps: 0, solToleranceLamports: 0 });
    const amounts = g.guardInstructions.flatMap((ix) => ix.asserts.filter((a) => a.kind === "token_amount_at_least").map((a) => a.amount));
    assert.deepEqual(amounts, ["750000000"], "with no slippage the floor is the predicted amount");
    const plain = await scanData({ transaction });
    assert.equal(plain.guards, undefined);
    assert.equal(plain.signature?.type, "xray.scan.v2");
    assert.ok(!plain.signature.covers.includes("guards"));
  });
});

test("guards asked otherwise than a boolean or {slippageBps 0..10000, solToleranceLamports}: refused", { timeout: 20_000 }, async () => {
  const b = CASES.find((x) => x.name === "sol_transfer").build();
  shim.setSvm(b.svm);
  const transaction = unsignedWire(b.tx).toString("base64");
  for (const guards of [{ slippageBps: 10_001 }, { slippageBps: -1 }, { slippageBps: 1.5 }, { solToleranceLamports: "1" }, { slippage: 50 }, "yes", 1]) {
    const r = await server.scan({ transaction, guards });
    assert.equal(r.status, 400, `guards ${JSON.stringify(guards)}: ${r.status} ${r.text.slice(0, 300)}`);
  }
  const edge = await scanData({ transaction, guards: { slippageBps: 10_000 } });
  assert.equal(edge.guards.slippageBps, 10_000);
});
