// Guards (the scan's `guards`: Lighthouse assertions, and the transaction with them appended)
// against LiteSVM, with `xray serve --ledger rpc:<shim>` as scan.test.mjs starts it.
//
// NO LIGHTHOUSE PROGRAM RUNS HERE: there is no Lighthouse binary (.so) on this machine and no way
// to build SBF, so neither a guard nor the guarded transaction is executed by Lighthouse. What is
// checked instead, for every non-malicious case of cases.mjs and a few set up here (a token
// transfer that creates the recipient's ATA, a transfer between two token accounts of the
// signer's, a v0 token transfer whose token accounts are loaded from a lookup table; a SOL
// transfer at a unit price without a unit limit (paid by the signer, then by another key), a
// token transfer with both, a SOL transfer whose unit limit is near the runtime's cap; a transfer
// naming the Lighthouse program as a read-only unsigned static key), each scanned unsigned with `guards: {slippageBps: 50}`:
//   (a) every guard instruction decodes with lighthouse-sdk's own decoders (nothing left over,
//       re-encodes to the same bytes) into exactly the assertions its `asserts` names — variant,
//       value, operator, log level Silent — and equals the instruction the sdk builds from them:
//       the signer's, AssertAccountInfoMulti (Lamports ≥, omitted when the floor is 0; Owner ==);
//       a token account's, AssertTokenAccountMulti (Owner, Delegate, DelegatedAmount ≤ when it
//       has a delegate, CloseAuthority, Amount ≥); the signer's first, then token accounts by
//       address;
//   (b) `guardedTransaction`: same header but for one more read-only unsigned key (the Lighthouse
//       program, when absent), no new signer or writable account, the original instructions
//       first and, resolved to addresses (through the lookup tables), identical but for a
//       SetComputeUnitLimit, raised by exactly 2,000 units a guard (at most to 1,400,000); then
//       the guards, each naming its target; ≤ 1232 bytes. Then run in LiteSVM with a stand-in
//       program at the Lighthouse address (SPL Memo v2's ELF, which refuses a guard whose
//       account is no signer or whose data is not UTF-8): the original instructions run there
//       unchanged and it fails exactly at the first guard it refuses, with its own refusal (not
//       the raised compute limit running out), or succeeds;
//   (c) each assertion, evaluated here as Lighthouse reads an account (lamports and owner as the
//       runtime gives them, a closed account the System program's; a token account only when
//       Token or Token-2022 owns it: owner at 32, amount u64 LE at 64, delegate COption at 72,
//       delegated amount u64 LE at 121, close authority COption at 129), holds on LiteSVM's real
//       post-state of the original transaction, at exactly what it left (the floors: less the
//       tolerance and, when the signer pays the fee, ceil(unit price × units the guards add /
//       1e6): 2,000 a guard with a unit limit, 200,000 without; less slippageBps of what the
//       transaction moved, |after − before|, before 0 for an account it creates) — and fails on
//       tampered runs of it: lamports sent down to the floor (holds) and one more (lamports; a
//       tamper's own priority fee measured and allowed for), the signer's wallet assigned to
//       another program with its lamports (its owner fails, its lamports hold), the token account
//       handed to another owner (owner), its delegate approved again for exactly its predicted
//       allowance (holds) and one more (delegated amount), the slippage allowance sent (holds) and
//       one token more (amount);
//   (d) the answer's signature is `xray.scan.v3` and covers `guards`.
// Then: malicious cases → withheld, no instructions; a failing simulation → withheld; a signed
// transaction → the same guards, `guardedTransaction` null with TRANSACTION_SIGNED; the SOL
// tolerance (and one of all the balance: the owner alone); a transaction naming the Lighthouse
// program as a writable account or from a lookup table → `guardedTransaction` null with
// GUARDED_TRANSACTION_UNSUPPORTED; a scan without `guards` keeps `xray.scan.v2`; `guards` of
// another shape is refused.
// One file past ~600 lines (~890): one shim and one server serve every check, and each case runs
// (a)–(d) in turn on fresh copies of its state.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import {
  PublicKey, Transaction, SystemProgram, TransactionMessage, VersionedTransaction, AddressLookupTableProgram,
  AddressLookupTableAccount, ComputeBudgetProgram, TransactionInstruction, LAMPORTS_PER_SOL,
} from "@solana/web3.js";
import {
  AuthorityType, createSetAuthorityInstruction, createTransferCheckedInstruction, createApproveInstruction,
  createAssociatedTokenAccountIdempotentInstruction, getAssociatedTokenAddressSync,
} from "@solana/spl-token";
import { AccountRole, none, some } from "@solana/kit";
import {
  LIGHTHOUSE_PROGRAM_ADDRESS, LighthouseInstruction, identifyLighthouseInstruction, LogLevel, IntegerOperator,
  EquatableOperator, getAssertAccountInfoMultiInstructionDataDecoder, getAssertAccountInfoMultiInstructionDataEncoder,
  getAssertTokenAccountMultiInstructionDataDecoder, getAssertTokenAccountMultiInstructionDataEncoder,
  getAssertAccountInfoMultiInstruction, getAssertTokenAccountMultiInstruction,
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
const COMPUTE_BUDGET = ComputeBudgetProgram.programId.toBase58();
/** Units a guard adds: with a SetComputeUnitLimit (raised by as much), and without one (what the
 *  runtime gives an instruction of a program that is not a builtin); the runtime's limit. */
const GUARD_UNITS = 2_000n;
const DEFAULT_UNITS = 200_000n;
const UNITS_MAX = 1_400_000n;
/** Where tampered runs send what they take (funded in each run), the owner they hand to, the
 *  program they assign the signer's wallet to. */
const SINK = seededKeypair("guards/sink").publicKey;
const NEW_OWNER = seededKeypair("guards/new-owner").publicKey;
const NEW_PROGRAM = seededKeypair("guards/new-program").publicKey;
const TAMPER_FUNDER = seededKeypair("guards/tamper-funder");
const LIGHTHOUSE = new PublicKey(LIGHTHOUSE_PROGRAM_ADDRESS);

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
  // The fee the guards' units may add (feeAllowance: written by hand, lamports).
  {
    name: "guards_sol_priced",
    what: "SetComputeUnitPrice 7,777 µ-lamports (no limit), then a 1 SOL transfer: 1 guard of 200,000 units",
    feeAllowance: 1556n, // ceil(7,777 × 200,000 / 1e6) = ceil(1,555.4)
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const ixs = [ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 7_777 }), SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: w.key("recipient").publicKey, lamports: SOL })];
      return { svm: w.svm, signer: signer.publicKey, tx: w.legacy(ixs, [signer]) };
    },
  },
  {
    name: "guards_priced_other_payer",
    what: "SetComputeUnitPrice 7,777 µ-lamports (no limit), then a 1 SOL transfer, the fee paid by another key: no fee allowance",
    feeAllowance: 0n,
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const payer = w.key("payer");
      w.airdrop(payer.publicKey, SOL);
      const ixs = [ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 7_777 }), SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: w.key("recipient").publicKey, lamports: SOL })];
      return { svm: w.svm, signer: signer.publicKey, tx: w.legacy(ixs, [payer, signer]) };
    },
  },
  {
    name: "guards_token_limit_priced",
    what: "SetComputeUnitLimit 40,000 and SetComputeUnitPrice 1,234,567 µ-lamports, then transferChecked 300 of 1,000: 2 guards of 2,000 units",
    feeAllowance: 4939n, // ceil(1,234,567 × 4,000 / 1e6) = ceil(4,938.268)
    computeUnitLimit: 44_000n, // 40,000 + 2 × 2,000
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 1 });
      const from = w.tokenAccount(m, signer.publicKey, 1000n, "from");
      const to = w.tokenAccount(m, w.key("recipient").publicKey, 0n, "to");
      const ixs = [
        ComputeBudgetProgram.setComputeUnitLimit({ units: 40_000 }), ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 1_234_567 }),
        createTransferCheckedInstruction(from, m.mint, to, signer.publicKey, 300n, 1),
      ];
      return { svm: w.svm, signer: signer.publicKey, tx: w.legacy(ixs, [signer]) };
    },
  },
  {
    name: "guards_limit_near_cap",
    what: "SetComputeUnitLimit 1,399,500 (no price), then a 1 SOL transfer: the limit raised to the runtime's 1,400,000",
    feeAllowance: 0n,
    computeUnitLimit: 1_400_000n, // 1,399,500 + 2,000, capped
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const ixs = [ComputeBudgetProgram.setComputeUnitLimit({ units: 1_399_500 }), SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: w.key("recipient").publicKey, lamports: SOL })];
      return { svm: w.svm, signer: signer.publicKey, tx: w.legacy(ixs, [signer]) };
    },
  },
  {
    name: "guards_lighthouse_static_readonly",
    what: "a 1 SOL transfer naming the Lighthouse program as a read-only unsigned account (kept, not added again)",
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const ix = SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: w.key("recipient").publicKey, lamports: SOL });
      ix.keys.push({ pubkey: LIGHTHOUSE, isSigner: false, isWritable: false });
      return { svm: w.svm, signer: signer.publicKey, tx: w.legacy([ix], [signer]) };
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
  [LighthouseInstruction.AssertAccountInfoMulti]: [getAssertAccountInfoMultiInstructionDataDecoder(), getAssertAccountInfoMultiInstructionDataEncoder()],
  [LighthouseInstruction.AssertTokenAccountMulti]: [getAssertTokenAccountMultiInstructionDataDecoder(), getAssertTokenAccountMultiInstructionDataEncoder()],
};
const option = (k) => (k === null ? none() : some(k));

/** The sdk's instruction for `asserts` on `target`: {kind, ix, data} (args as its builders take them). */
function sdkInstructionFor(target, asserts) {
  const kinds = asserts.map((a) => a.kind);
  if (kinds.includes("account_owner")) {
    // The signer's own account: its lamports floor (none when it is 0), then its owner.
    assert.ok(["account_owner", "lamports_at_least,account_owner"].includes(kinds.join()), `the signer's guard asserts [lamports,] owner, in this order: ${kinds}`);
    const assertions = asserts.map((a) => (a.kind === "lamports_at_least"
      ? { __kind: "Lamports", value: BigInt(a.lamports), operator: IntegerOperator.GreaterThanOrEqual }
      : { __kind: "Owner", value: a.owner, operator: EquatableOperator.Equal }));
    if (kinds.length === 2) assert.ok(BigInt(asserts[0].lamports) > 0n, "a lamports floor of 0 is asserted");
    return { kind: LighthouseInstruction.AssertAccountInfoMulti, ix: getAssertAccountInfoMultiInstruction({ targetAccount: target, logLevel: LogLevel.Silent, assertions }), data: { discriminator: 6, logLevel: LogLevel.Silent, assertions } };
  }
  // A token account: owner, delegate, the delegate's allowance (only with a delegate), close authority, amount.
  const delegated = asserts[1]?.kind === "token_delegate" && asserts[1].delegate !== null;
  const want = ["token_owner", "token_delegate", ...(delegated ? ["token_delegated_amount_at_most"] : []), "token_close_authority", "token_amount_at_least"];
  assert.deepEqual(kinds, want, "a token guard asserts owner, delegate, (delegated amount,) close authority, amount, in this order");
  const assertions = asserts.map((a) => {
    switch (a.kind) {
      case "token_owner": return { __kind: "Owner", value: a.owner, operator: EquatableOperator.Equal };
      case "token_delegate": return { __kind: "Delegate", value: option(a.delegate), operator: EquatableOperator.Equal };
      case "token_delegated_amount_at_most":
        assert.match(a.amount, /^(0|[1-9]\d*)$/, "a delegated amount is a u64 as a string");
        return { __kind: "DelegatedAmount", value: BigInt(a.amount), operator: IntegerOperator.LessThanOrEqual };
      case "token_close_authority": return { __kind: "CloseAuthority", value: option(a.closeAuthority), operator: EquatableOperator.Equal };
      default:
        assert.match(a.amount, /^(0|[1-9]\d*)$/, "a token amount is a u64 as a string");
        return { __kind: "Amount", value: BigInt(a.amount), operator: IntegerOperator.GreaterThanOrEqual };
    }
  });
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
  assert.ok(DECODERS[kind], `${where}: instruction ${kind}, neither AssertAccountInfoMulti nor AssertTokenAccountMulti`);
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
  if (guard.kind === LighthouseInstruction.AssertAccountInfoMulti) {
    // An account's lamports and owner as the runtime gives them; a closed account is the
    // System program's, with nothing in it.
    const lamports = acct?.lamports ?? 0n;
    const owner = acct && acct.lamports > 0n ? acct.owner : IDS.system;
    return guard.decoded.assertions.map((a) => {
      if (a.__kind === "Lamports") return { what: "lamports", holds: lamports >= a.value, actual: `${lamports} lamports, at least ${a.value} asserted` };
      if (a.__kind === "Owner") return { what: "accountOwner", holds: owner === a.value, actual: `owner ${owner}, ${a.value} asserted` };
      throw new Error(`unexpected account-info assertion ${a.__kind}`);
    });
  }
  return guard.decoded.assertions.map((a) => {
    const what = { Owner: "owner", Delegate: "delegate", DelegatedAmount: "delegatedAmount", CloseAuthority: "closeAuthority", Amount: "amount" }[a.__kind];
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
      case "DelegatedAmount": {
        const delegated = d.readBigUInt64LE(121);
        return { what, holds: delegated <= a.value, actual: `delegated amount ${delegated}, at most ${a.value} asserted` };
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

/** What resolved instructions set of the compute budget: {limit (null: none), limitAt, price
 *  (micro-lamports a unit, 0n: none)}. */
function computeBudget(instructions) {
  const out = { limit: null, limitAt: -1, price: 0n };
  instructions.forEach((ix, i) => {
    if (ix.programId !== COMPUTE_BUDGET) return;
    const data = Buffer.from(ix.data, "hex");
    if (data[0] === 2 && data.length === 5) Object.assign(out, { limit: BigInt(data.readUInt32LE(1)), limitAt: i });
    if (data[0] === 3 && data.length === 9) out.price = data.readBigUInt64LE(1);
  });
  return out;
}

/** The original instructions as the guarded transaction must carry them: unchanged, but for a
 *  SetComputeUnitLimit raised by 2,000 units a guard, at most to 1,400,000. */
function withRaisedLimit(instructions, guardCount) {
  const { limit, limitAt } = computeBudget(instructions);
  if (limit === null) return { instructions, limit: null };
  let raised = limit + GUARD_UNITS * BigInt(guardCount);
  if (raised > UNITS_MAX) raised = UNITS_MAX;
  const data = Buffer.from(ComputeBudgetProgram.setComputeUnitLimit({ units: Number(raised) }).data).toString("hex");
  return { instructions: instructions.map((ix, i) => (i === limitAt ? { ...ix, data } : ix)), limit: raised };
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
  const want = withRaisedLimit(before.instructions, guards.length);
  assert.deepEqual(after.instructions.slice(0, n), want.instructions, "the original instructions, resolved, changed (but for a SetComputeUnitLimit raised by 2,000 a guard, at most to 1,400,000)");
  guards.forEach((guard, i) => {
    assert.deepEqual(after.instructions[n + i], { programId: LIGHTHOUSE_PROGRAM_ADDRESS, accounts: [guard.target], data: guard.data.toString("hex") }, `appended instruction ${n + i} is not guardInstructions[${i}]`);
  });
  return { guarded, originalInstructions: n, computeUnitLimit: want.limit };
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
  // How Memo v2 refuses a guard (an unsigned account first; then data that is not UTF-8: it
  // aborts, logging "invalid utf-8"), or null.
  const refusal = (g) => {
    if (!flags.get(g.target).signer) return "MissingRequiredSignature";
    try {
      utf8.decode(g.data);
      return null;
    } catch {
      return "ProgramFailedToComplete";
    }
  };
  const refused = guards.findIndex((g) => refusal(g) !== null);
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
  // Its own refusal, not the compute budget running out (a SetComputeUnitLimit was raised for the guards).
  else {
    assert.deepEqual(err?.InstructionError, [firstGuard + refused, refusal(guards[refused])], `with the stand-in refusing guard ${refused}, it fails with ${JSON.stringify(err)}:\n${logs}`);
    if (refusal(guards[refused]) === "ProgramFailedToComplete") assert.match(logs, /failed: invalid utf-8/, `the stand-in failed otherwise than on UTF-8:\n${logs}`);
  }
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

/** The signer's lamports after a tampered run of `c` with only `extra` added: against the honest
 *  post-state, what more a tamper of that shape pays in fees (with a unit price and no unit
 *  limit, each builtin instruction more is 3,000 units more). */
const lamportsAfterVariant = (c, signer, extra) => rawAccount(tamperedRun(c, { extra }), signer).lamports;

/** The tampers for the guards of one case (`c`, its transaction `tx`), from the honest run's
 *  post-state (`svm`). */
function tampersFor(c, svm, signer, guards, tx) {
  const out = [];
  const mine = guards.find((g) => g.kind === LighthouseInstruction.AssertAccountInfoMulti);
  if (mine) {
    assert.equal(mine.target, signer, "the account-info guard is the signer's");
    const wallet = new PublicKey(signer);
    const floor = mine.decoded.assertions.find((a) => a.__kind === "Lamports")?.value;
    if (floor !== undefined) {
      const send = (lamports) => () => [SystemProgram.transfer({ fromPubkey: wallet, toPubkey: SINK, lamports })];
      const post = rawAccount(svm, signer).lamports;
      const moreFee = post - lamportsAfterVariant(c, signer, send(0n));
      const { budget: { price, limit }, feePayer } = feeContext(svm, tx);
      if (price > 0n && limit === null && feePayer === signer) assert.ok(moreFee > 0n, `a transfer more costs the signer no more fee at ${price} µ-lamports a unit`);
      else assert.equal(moreFee, 0n, "a transfer more costs the signer more fee without a unit price, with a unit limit, or paid by another key");
      // Down to the floor exactly: the tolerance and the fee allowance, less the tamper's own fee.
      const room = post - floor - moreFee;
      assert.ok(room >= 0n, `the tamper's own fee (${moreFee}) is past the floor's room (${post - floor})`);
      if (room > 0n) out.push({ label: `${room} lamports more sent (down to the floor)`, extra: send(room), mustFail: [] });
      out.push({ label: `${room + 1n} lamport(s) more sent`, extra: send(room + 1n), mustFail: [[signer, "lamports"]] });
    }
    // The wallet handed to a program with every lamport still in it: only its owner changes.
    out.push({ label: "the signer's wallet assigned to another program", extra: () => [SystemProgram.assign({ accountPubkey: wallet, programId: NEW_PROGRAM })], mustFail: [[signer, "accountOwner"]] });
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
    if (t.delegate !== null) {
      // The same delegate approved again: for exactly its predicted allowance, then one more.
      const approve = (amount) => () => [createApproveInstruction(target, new PublicKey(t.delegate), new PublicKey(signer), amount, [], program)];
      out.push({ label: `${g.target}'s delegate approved again for ${t.delegatedAmount} (as predicted)`, extra: approve(t.delegatedAmount), mustFail: [] });
      out.push({ label: `${g.target}'s delegate approved for ${t.delegatedAmount + 1n} (one more than predicted)`, extra: approve(t.delegatedAmount + 1n), mustFail: [[g.target, "delegatedAmount"]] });
    }
    const floor = g.decoded.assertions.find((a) => a.__kind === "Amount").value;
    if (t.amount === 0n) continue;
    const { decimals } = decodeMint(rawAccount(svm, t.mint));
    const sink = getAssociatedTokenAddressSync(mint, SINK, false, program);
    const take = (amount) => () => [createTransferCheckedInstruction(target, mint, sink, new PublicKey(signer), amount, decimals, [], program)];
    const sinkAccount = { mint, program, sink };
    // The slippage allowance: a share of what the transaction moved (checked exactly by expectedGuards).
    if (t.amount - floor > 0n) out.push({ label: `${t.amount - floor} more tokens of ${g.target} sent (the slippage allowance)`, extra: take(t.amount - floor), mustFail: [], sinkAccount });
    out.push({ label: `${t.amount - floor + 1n} more tokens of ${g.target} sent (one past the slippage allowance)`, extra: take(t.amount - floor + 1n), mustFail: [[g.target, "amount"]], sinkAccount });
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
// What the guards must be, from the real execution: the signer's own account (when it still
// exists: its lamports floor, when above 0, and its owner), and every token account that is the
// signer's before or after and still exists, each at what the transaction really left (the
// floors: less the tolerance and the fee allowance, less the slippage of what it moved).

/** What the fee the guards add is computed from: the transaction's compute budget and fee payer. */
function feeContext(svm, tx) {
  const { all, instructions } = resolved(svm, VersionedTransaction.deserialize(wireOf(tx)));
  return { budget: computeBudget(instructions), feePayer: all[0] };
}

/** {want: Map target -> asserts, feeAllowance}. */
function expectedGuards(signer, pre, post, { budget, feePayer }, { slippageBps = BigInt(SLIPPAGE_BPS), solTolerance = 0n } = {}) {
  const tokens = new Map();
  for (const [address, acct] of post) {
    const after = acct && acct.lamports > 0n ? decodeTokenAccount(acct) : null;
    if (!after) continue;
    const before = pre.get(address) && pre.get(address).lamports > 0n ? decodeTokenAccount(pre.get(address)) : null;
    if (after.owner !== signer && before?.owner !== signer) continue;
    const amountBefore = before?.amount ?? 0n;
    const moved = after.amount > amountBefore ? after.amount - amountBefore : amountBefore - after.amount;
    tokens.set(address, [
      { kind: "token_owner", owner: after.owner },
      { kind: "token_delegate", delegate: after.delegate },
      ...(after.delegate === null ? [] : [{ kind: "token_delegated_amount_at_most", amount: String(after.delegatedAmount) }]),
      { kind: "token_close_authority", closeAuthority: after.closeAuthority },
      { kind: "token_amount_at_least", amount: String(after.amount - (moved * slippageBps) / 10_000n) },
    ]);
  }
  const want = new Map();
  const mine = post.get(signer);
  let feeAllowance = 0n;
  if (mine && mine.lamports > 0n) {
    // The fee the guards' units may add at the transaction's unit price, when the signer pays it.
    const units = (budget.limit === null ? DEFAULT_UNITS : GUARD_UNITS) * BigInt(1 + tokens.size);
    if (feePayer === signer) feeAllowance = (budget.price * units + 999_999n) / 1_000_000n;
    const floor = mine.lamports - solTolerance - feeAllowance;
    want.set(signer, [...(floor > 0n ? [{ kind: "lamports_at_least", lamports: floor }] : []), { kind: "account_owner", owner: mine.owner }]);
  }
  for (const [address, asserts] of tokens) want.set(address, asserts);
  return { want, feeAllowance };
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

      // The signer's own account first, then token accounts by address.
      const targets = guards.map((x) => x.target);
      const tokenTargets = targets[0] === signer ? targets.slice(1) : targets;
      assert.deepEqual(tokenTargets, [...tokenTargets].sort((x, y) => Buffer.compare(new PublicKey(x).toBuffer(), new PublicKey(y).toBuffer())), "the guards are not in order: the signer's account, then token accounts by address");

      // (b)
      const { guarded, originalInstructions, computeUnitLimit } = checkGuardedTransaction(b.svm, wire, g, guards);
      assert.equal(computeUnitLimit, c.computeUnitLimit ?? null, "the guarded transaction's compute unit limit");
      st.diagnostic(`${guards.length} guards; ${computeUnitLimit === null ? "no unit limit" : `unit limit raised to ${computeUnitLimit}`}; with the stand-in: ${runWithStandIn(c, guarded, originalInstructions, guards)}`);

      // (c) the original, executed for real; every guard holds on what it left, at what it left.
      const fees = feeContext(b.svm, b.tx);
      const reads = readSet(b.svm, b.tx);
      const pre = snapshot(b.svm, reads);
      const r = sendTransaction(b.svm, b.tx);
      if (r instanceof FailedTransactionMetadata) assert.fail(`${c.name} failed in LiteSVM: ${JSON.stringify(errorJson(r.err()))}`);
      for (const x of evaluateAll(b.svm, guards)) assert.ok(x.holds, `the ${x.what} guard of ${x.target} fails on the real post-state: ${x.actual}`);
      const { want, feeAllowance } = expectedGuards(signer, pre, snapshot(b.svm, reads), fees);
      assert.equal(feeAllowance, c.feeAllowance ?? 0n, "the fee allowance, by the formula, is not the one written by hand");
      assert.deepEqual(
        new Map(g.guardInstructions.map((ix) => [ix.accounts[0].address, assertsNormalized(ix.asserts)])),
        new Map([...want].map(([a, asserts]) => [a, assertsNormalized(asserts)])),
        "the guards are not the signer's accounts as the transaction really left them",
      );

      // (c) tampered runs
      const tampers = tampersFor(c, b.svm, signer, guards, b.tx);
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
  const fees = feeContext(b.svm, b.tx);
  const reads = readSet(b.svm, b.tx);
  const pre = snapshot(b.svm, reads);
  assert.ok(!(sendTransaction(b.svm, b.tx) instanceof FailedTransactionMetadata));
  const { want } = expectedGuards(b.signer.toBase58(), pre, snapshot(b.svm, reads), fees, { solTolerance: tolerance });
  assert.deepEqual(g.guardInstructions.map((ix) => assertsNormalized(ix.asserts)), [...want.values()].map(assertsNormalized));
  const post = rawAccount(b.svm, b.signer).lamports;
  assert.deepEqual(g.guardInstructions[0].asserts[0], { kind: "lamports_at_least", lamports: Number(post - tolerance) }, "the floor is the balance the transaction left less the tolerance");
  const tampers = tampersFor(c, b.svm, b.signer.toBase58(), guards, b.tx);
  assert.ok(tampers.some((x) => x.label === `${tolerance} lamports more sent (down to the floor)`), tampers.map((x) => x.label).join("; "));
  for (const tamper of tampers) {
    await t.test(tamper.label, { timeout: 10_000 }, () => checkTampered(c, guards, tamper));
  }
  await t.test("a tolerance of all the balance: no lamports floor, the owner still asserted", { timeout: 10_000 }, async () => {
    const fresh = c.build();
    shim.setSvm(fresh.svm);
    const all = rawAccount(fresh.svm, fresh.signer).lamports;
    const asked = { slippageBps: 0, solToleranceLamports: Number(all) };
    const d = await scanData({ transaction: unsignedWire(fresh.tx).toString("base64"), guards: asked });
    const gg = checkSignedGuards(d, asked);
    assert.equal(gg.status, "added", gg.reason);
    assert.deepEqual(gg.guardInstructions.map((ix) => ix.asserts), [[{ kind: "account_owner", owner: IDS.system }]]);
    gg.guardInstructions.forEach(decodeGuard);
  });
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

test("a transaction naming the Lighthouse program otherwise than as a read-only static key: guards, no guarded transaction (GUARDED_TRANSACTION_UNSUPPORTED)", { timeout: 30_000 }, async (t) => {
  const builds = {
    // 0.01 SOL sent to the program's address: it is a writable account of the message.
    writable: (w, signer) => w.legacy([SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: LIGHTHOUSE, lamports: SOL / 100 })], [signer]),
    // A transfer naming it as one more read-only account, which the v0 message loads from a table.
    "loaded from a lookup table": (w, signer) => {
      w.svm.warpToSlot(1n);
      const [create, table] = AddressLookupTableProgram.createLookupTable({ authority: w.funder.publicKey, payer: w.funder.publicKey, recentSlot: 0 });
      w.setup([create]);
      w.setup([AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: w.funder.publicKey, payer: w.funder.publicKey, addresses: [w.key("filler").publicKey, LIGHTHOUSE] })]);
      w.svm.warpToSlot(2n);
      const alt = new AddressLookupTableAccount({ key: table, state: AddressLookupTableAccount.deserialize(rawAccount(w.svm, table).data) });
      const ix = SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: w.key("recipient").publicKey, lamports: SOL / 100 });
      ix.keys.push({ pubkey: LIGHTHOUSE, isSigner: false, isWritable: false });
      const message = new TransactionMessage({ payerKey: signer.publicKey, recentBlockhash: w.svm.latestBlockhash(), instructions: [ix] }).compileToV0Message([alt]);
      assert.ok(!message.staticAccountKeys.some((k) => k.equals(LIGHTHOUSE)), "the Lighthouse program must come from the table");
      assert.deepEqual(message.addressTableLookups.map((l) => [...l.readonlyIndexes]), [[1]]);
      const tx = new VersionedTransaction(message);
      tx.sign([signer]);
      return tx;
    },
  };
  for (const [how, build] of Object.entries(builds)) {
    await t.test(how, { timeout: 15_000 }, async () => {
      const w = new World(`guards_lighthouse_${how.split(" ")[0]}`);
      const signer = w.wallet();
      const tx = build(w, signer);
      shim.setSvm(w.svm);
      const asked = { slippageBps: SLIPPAGE_BPS };
      const data = await scanData({ transaction: unsignedWire(tx).toString("base64"), signer: signer.publicKey.toBase58(), guards: asked });
      assert.notEqual(data.verdict, "malicious", `judged malicious: ${(data.findings ?? []).map((f) => f.kind).join(", ")}`);
      assert.equal(data.simulation?.status, "ok", `simulation: ${JSON.stringify(data.simulation)}`);
      const g = checkSignedGuards(data, { ...asked, solToleranceLamports: 0 });
      assert.equal(g.status, "added", g.reason);
      assert.ok(g.guardInstructions.length > 0);
      g.guardInstructions.forEach(decodeGuard);
      assert.equal(g.guardedTransaction, null);
      assert.equal(g.guardedTransactionError?.code, "GUARDED_TRANSACTION_UNSUPPORTED", JSON.stringify(g.guardedTransactionError));
      assert.ok(g.guardedTransactionError.message);
    });
  }
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
