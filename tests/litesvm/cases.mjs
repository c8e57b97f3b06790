// Transactions a wallet might be asked to sign, each built with the official SDKs
// (@solana/web3.js, @solana/spl-token) against a fresh LiteSVM state the case sets up with real
// transactions. A case's build() returns {svm, signer, tx, …}; its expectations:
//   verdict            the scan's verdict
//   findings           every finding the scan must give: {kind, instruction} (null: transaction-wide)
//   effects(b)         the signer's effects, written by hand (the oracle must compute the same)
//   check(b, svm)      extra assertions on LiteSVM's real post-state
//   post               "signed" (default) or "unsigned": what is POSTed to the scan
// Keys are derived from names (seededKeypair): every run uses the same addresses.
//
// No case runs the Associated Token Account program: token accounts are created as the ATA program
// would, with the token program itself (createAccount + initializeAccount3). That dates from
// litesvm 0.8.0, whose linux-x64 binding corrupted the process's memory when it ran the ATA
// program (LiteSVM issue #171); 1.5.0 runs it (tests/litesvm/README.md).

import assert from "node:assert/strict";
import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import {
  PublicKey, Transaction, SystemProgram, StakeProgram, Authorized, Lockup, AddressLookupTableProgram,
  AddressLookupTableAccount, TransactionMessage, VersionedTransaction, NONCE_ACCOUNT_LENGTH, NonceAccount, LAMPORTS_PER_SOL,
} from "@solana/web3.js";
import {
  TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID, MINT_SIZE, ACCOUNT_SIZE, AuthorityType, ExtensionType, getMintLen, getAccountLen,
  createInitializeMint2Instruction, createInitializeAccount3Instruction, createMintToInstruction,
  createTransferCheckedInstruction, createTransferInstruction, createApproveInstruction, createRevokeInstruction,
  createSetAuthorityInstruction, createCloseAccountInstruction, createInitializeTransferFeeConfigInstruction,
  createTransferCheckedWithFeeInstruction,
} from "@solana/spl-token";
import { IDS, decodeTokenAccount, STAKE_LEN } from "./layouts.mjs";
import { seededKeypair, rawAccount, track, sendTransaction, airdrop } from "./util.mjs";

export const FEE = 5000; // LiteSVM: 5,000 lamports per signature, no priority fee
const SOL = LAMPORTS_PER_SOL;
const U64_MAX = 2n ** 64n - 1n;

/** The address every case that drains sends to; the scan test labels it `flagged`. */
export const ATTACKER = seededKeypair("attacker");

// ---------------------------------------------------------------------------------------------
// A case's world: a fresh LiteSVM, a funder that pays for the set-up, named keys.

export class World {
  constructor(name) {
    this.name = name;
    this.svm = new LiteSVM();
    this.funder = this.key("funder");
    airdrop(this.svm, this.funder.publicKey, 1000n * BigInt(SOL));
    track(this.svm, this.funder.publicKey);
  }

  key(role) {
    return seededKeypair(`${this.name}/${role}`);
  }

  airdrop(pubkey, lamports) {
    const r = airdrop(this.svm, pubkey, lamports);
    if (r instanceof FailedTransactionMetadata) throw new Error(`airdrop failed: ${r.err()}`);
    track(this.svm, pubkey);
  }

  rent(space) {
    return Number(this.svm.minimumBalanceForRentExemption(BigInt(space)));
  }

  /** A set-up transaction paid by the funder; must succeed. */
  setup(instructions, signers = []) {
    const tx = new Transaction({ feePayer: this.funder.publicKey, recentBlockhash: this.svm.latestBlockhash() }).add(...instructions);
    tx.sign(this.funder, ...signers);
    const r = sendTransaction(this.svm, tx);
    if (r instanceof FailedTransactionMetadata) throw new Error(`${this.name}: set-up failed: ${r.err()}\n${r.meta().logs().join("\n")}`);
    track(this.svm, ...tx.compileMessage().accountKeys);
    return r;
  }

  /** The transaction under test: legacy, fee payer first signer, signed. */
  legacy(instructions, signers) {
    const tx = new Transaction({ feePayer: signers[0].publicKey, recentBlockhash: this.svm.latestBlockhash() }).add(...instructions);
    tx.sign(...signers);
    track(this.svm, ...tx.compileMessage().accountKeys);
    return tx;
  }

  wallet(sol = 10) {
    const w = this.key("wallet");
    this.airdrop(w.publicKey, sol * SOL);
    return w;
  }

  mint({ decimals, program = TOKEN_PROGRAM_ID, fee, role } = {}) {
    const mint = this.key(role ?? `mint-${program.toBase58().slice(0, 6)}`);
    const authority = this.key("mint-authority");
    const space = fee ? getMintLen([ExtensionType.TransferFeeConfig]) : MINT_SIZE;
    const ixs = [SystemProgram.createAccount({ fromPubkey: this.funder.publicKey, newAccountPubkey: mint.publicKey, lamports: this.rent(space), space, programId: program })];
    if (fee) ixs.push(createInitializeTransferFeeConfigInstruction(mint.publicKey, authority.publicKey, authority.publicKey, fee.basisPoints, fee.maximumFee, program));
    ixs.push(createInitializeMint2Instruction(mint.publicKey, decimals, authority.publicKey, null, program));
    this.setup(ixs, [mint]);
    return { mint: mint.publicKey, authority, decimals, program, fee: !!fee };
  }

  /** A token account of `m` owned by `owner` holding `amount`, at the keypair address named
   *  `role` (sized for the extensions the mint requires, as the ATA program would size it). */
  tokenAccount(m, owner, amount = 0n, role = "token-account") {
    const acct = this.key(role);
    const space = m.fee ? getAccountLen([ExtensionType.TransferFeeAmount]) : ACCOUNT_SIZE;
    const ixs = [
      SystemProgram.createAccount({ fromPubkey: this.funder.publicKey, newAccountPubkey: acct.publicKey, lamports: this.rent(space), space, programId: m.program }),
      createInitializeAccount3Instruction(acct.publicKey, m.mint, owner, m.program),
    ];
    if (amount > 0n) ixs.push(createMintToInstruction(m.mint, acct.publicKey, m.authority.publicKey, amount, [], m.program));
    this.setup(ixs, amount > 0n ? [acct, m.authority] : [acct]);
    return acct.publicKey;
  }

  /** A nonce account whose authority is `authority`, created by the funder; the blockhash is
   *  then expired, so the nonce can be used (and emptied) — LiteSVM never moves it by itself. */
  nonce(authority) {
    const nonce = this.key("nonce");
    const lamports = this.rent(NONCE_ACCOUNT_LENGTH);
    this.setup(SystemProgram.createNonceAccount({ fromPubkey: this.funder.publicKey, noncePubkey: nonce.publicKey, authorizedPubkey: authority, lamports }).instructions, [nonce]);
    this.svm.expireBlockhash();
    const value = NonceAccount.fromAccountData(Buffer.from(rawAccount(this.svm, nonce.publicKey).data)).nonce;
    return { nonce: nonce.publicKey, lamports, value };
  }
}

const tokenOf = (svm, address) => decodeTokenAccount(rawAccount(svm, address));
const s = (k) => k.toBase58();

// ---------------------------------------------------------------------------------------------

export const CASES = [
  {
    name: "sol_transfer",
    what: "System transfer of 1 SOL to a fresh address",
    verdict: "benign",
    findings: [],
    build() {
      const w = new World(this.name);
      const signer = w.wallet(10);
      const to = w.key("recipient").publicKey;
      return { svm: w.svm, signer: signer.publicKey, to, tx: w.legacy([SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: to, lamports: SOL })], [signer]) };
    },
    // The fresh recipient is its own holder: it received the 1 SOL (the fee is burned).
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -1_000_005_000 },
      { kind: "sol_sent", to: s(b.to), lamports: SOL },
    ],
    check: (b, svm) => assert.equal(rawAccount(svm, b.to).lamports, BigInt(SOL)),
  },
  {
    name: "token_transfer_checked",
    what: "SPL Token transferChecked of 250 tokens (6 decimals) to an existing account",
    verdict: "benign",
    findings: [],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 6 });
      const from = w.tokenAccount(m, signer.publicKey, 1_000_000_000n, "from");
      const recipient = w.key("recipient").publicKey;
      const to = w.tokenAccount(m, recipient, 0n, "to");
      const tx = w.legacy([createTransferCheckedInstruction(from, m.mint, to, signer.publicKey, 250_000_000n, 6)], [signer]);
      return { svm: w.svm, signer: signer.publicKey, m, from, to, recipient, tx };
    },
    // The tokens count for the owner of the account they land in, not for the account.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "token", mint: s(b.m.mint), program: "spl-token", delta: "-250000000", decimals: 6 },
      { kind: "token_sent", to: s(b.recipient), mint: s(b.m.mint), amount: "250000000", decimals: b.m.decimals },
    ],
    check: (b, svm) => assert.equal(tokenOf(svm, b.to).amount, 250_000_000n),
  },
  {
    name: "token_transfer",
    what: "SPL Token plain transfer (no mint in the message) of 100 base units",
    verdict: "benign",
    findings: [],
    post: "unsigned",
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 0 });
      const from = w.tokenAccount(m, signer.publicKey, 1000n, "from");
      const recipient = w.key("recipient").publicKey;
      const to = w.tokenAccount(m, recipient, 0n, "to");
      return { svm: w.svm, signer: signer.publicKey, m, from, to, recipient, tx: w.legacy([createTransferInstruction(from, to, signer.publicKey, 100n)], [signer]) };
    },
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "token", mint: s(b.m.mint), program: "spl-token", delta: "-100", decimals: 0 },
      { kind: "token_sent", to: s(b.recipient), mint: s(b.m.mint), amount: "100", decimals: b.m.decimals },
    ],
  },
  {
    name: "token_approve",
    what: "approve a never-seen delegate for 500 of 1,000 tokens",
    verdict: "warning",
    findings: [{ kind: "token_approval", instruction: 0 }],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 2 });
      const account = w.tokenAccount(m, signer.publicKey, 1000n);
      const delegate = w.key("delegate").publicKey;
      return { svm: w.svm, signer: signer.publicKey, m, account, delegate, tx: w.legacy([createApproveInstruction(account, delegate, signer.publicKey, 500n)], [signer]) };
    },
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "token_delegate_change", account: s(b.account), mint: s(b.m.mint), from: null, to: s(b.delegate), amount: "500", decimals: b.m.decimals },
    ],
  },
  {
    name: "token_revoke",
    what: "revoke an existing delegation",
    verdict: "benign",
    findings: [],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 2 });
      const account = w.tokenAccount(m, signer.publicKey, 1000n);
      const delegate = w.key("delegate").publicKey;
      w.setup([createApproveInstruction(account, delegate, signer.publicKey, 700n)], [signer]);
      return { svm: w.svm, signer: signer.publicKey, m, account, delegate, tx: w.legacy([createRevokeInstruction(account, signer.publicKey)], [signer]) };
    },
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "token_delegate_change", account: s(b.account), mint: s(b.m.mint), from: s(b.delegate), to: null, amount: "0", decimals: b.m.decimals },
    ],
  },
  {
    name: "token_set_owner",
    what: "setAuthority(AccountOwner) of a token account holding 42 tokens to another key",
    verdict: "malicious",
    // The account handed away is its whole balance swept, with an authority: a critical sweep.
    findings: [{ kind: "asset_sweep", instruction: null }, { kind: "token_owner_change", instruction: 0 }],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 0 });
      const account = w.tokenAccount(m, signer.publicKey, 42n);
      const rent = w.rent(ACCOUNT_SIZE); // what tokenAccount() funded it with
      const next = w.key("new-owner").publicKey;
      return { svm: w.svm, signer: signer.publicKey, m, account, rent, next, tx: w.legacy([createSetAuthorityInstruction(account, signer.publicKey, AuthorityType.AccountOwner, next)], [signer]) };
    },
    // The account changes hands: the new owner gets its 42 tokens and its rent lamports.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "token", mint: s(b.m.mint), program: "spl-token", delta: "-42", decimals: 0 },
      { kind: "sol_sent", to: s(b.next), lamports: b.rent },
      { kind: "token_sent", to: s(b.next), mint: s(b.m.mint), amount: "42", decimals: b.m.decimals },
      { kind: "token_owner_change", account: s(b.account), mint: s(b.m.mint), from: s(b.signer), to: s(b.next) },
    ],
  },
  {
    name: "token_set_close_authority",
    what: "setAuthority(CloseAccount) of a token account to another key",
    verdict: "malicious",
    findings: [{ kind: "token_close_authority_change", instruction: 0 }],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 0 });
      const account = w.tokenAccount(m, signer.publicKey, 5n);
      const next = w.key("closer").publicKey;
      return { svm: w.svm, signer: signer.publicKey, m, account, next, tx: w.legacy([createSetAuthorityInstruction(account, signer.publicKey, AuthorityType.CloseAccount, next)], [signer]) };
    },
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "token_close_authority_change", account: s(b.account), mint: s(b.m.mint), from: null, to: s(b.next) },
    ],
  },
  {
    name: "wallet_assign",
    what: "System assign of the signer's own wallet to a program",
    verdict: "malicious",
    findings: [{ kind: "wallet_assign", instruction: 0 }],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const program = w.key("drainer-program").publicKey;
      return { svm: w.svm, signer: signer.publicKey, program, tx: w.legacy([SystemProgram.assign({ accountPubkey: signer.publicKey, programId: program })], [signer]) };
    },
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "account_owner_change", account: s(b.signer), from: IDS.system, to: s(b.program) },
    ],
  },
  {
    name: "nonce_create",
    what: "createAccount + nonceInitialize with the signer as authority (two signatures)",
    verdict: "benign",
    findings: [],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const nonce = w.key("nonce");
      const lamports = w.rent(NONCE_ACCOUNT_LENGTH);
      const ixs = SystemProgram.createNonceAccount({ fromPubkey: signer.publicKey, noncePubkey: nonce.publicKey, authorizedPubkey: signer.publicKey, lamports }).instructions;
      return { svm: w.svm, signer: signer.publicKey, nonce: nonce.publicKey, lamports, tx: w.legacy(ixs, [signer, nonce]) };
    },
    // The new nonce's lamports count for its authority, the signer: nothing is sent.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -(b.lamports + 2 * FEE) },
      { kind: "account_created", account: s(b.nonce), owner: IDS.system, lamports: b.lamports },
    ],
  },
  {
    name: "nonce_authorize",
    what: "authorizeNonceAccount of the signer's nonce to another key",
    verdict: "malicious",
    findings: [{ kind: "nonce_authority_change", instruction: 0 }],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const n = w.nonce(signer.publicKey);
      const next = w.key("new-authority").publicKey;
      return { svm: w.svm, signer: signer.publicKey, ...n, next, tx: w.legacy([SystemProgram.nonceAuthorize({ noncePubkey: n.nonce, authorizedPubkey: signer.publicKey, newAuthorizedPubkey: next })], [signer]) };
    },
    // A nonce's lamports count for its authority: the new one gets them.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "sol_sent", to: s(b.next), lamports: b.lamports },
      { kind: "nonce_authority_change", account: s(b.nonce), from: s(b.signer), to: s(b.next) },
    ],
  },
  {
    name: "durable_nonce",
    what: "a durable-nonce transaction: advanceNonceAccount first, then a 0.5 SOL transfer",
    // The never-expiring signature is said (low), and a plain payment is no warning.
    verdict: "benign",
    findings: [{ kind: "durable_nonce", instruction: null }],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const n = w.nonce(signer.publicKey);
      const to = w.key("recipient").publicKey;
      const tx = new Transaction({ feePayer: signer.publicKey, nonceInfo: { nonce: n.value, nonceInstruction: SystemProgram.nonceAdvance({ noncePubkey: n.nonce, authorizedPubkey: signer.publicKey }) } });
      tx.add(SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: to, lamports: SOL / 2 }));
      tx.sign(signer);
      track(w.svm, ...tx.compileMessage().accountKeys);
      assert.notEqual(tx.compileMessage().recentBlockhash, w.svm.latestBlockhash(), "the nonce must not be the current blockhash");
      return { svm: w.svm, signer: signer.publicKey, ...n, to, tx };
    },
    // The advanced nonce stays the signer's (same lamports); the recipient got the 0.5 SOL.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -(SOL / 2 + FEE) },
      { kind: "sol_sent", to: s(b.to), lamports: SOL / 2 },
    ],
    check: (b, svm) => assert.equal(rawAccount(svm, b.to).lamports, BigInt(SOL / 2)),
  },
  {
    name: "nonce_withdraw",
    what: "withdrawNonceAccount of the whole balance to another address (closes the nonce)",
    verdict: "warning",
    findings: [{ kind: "nonce_withdraw", instruction: 0 }],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const n = w.nonce(signer.publicKey);
      const to = w.key("elsewhere").publicKey;
      return { svm: w.svm, signer: signer.publicKey, ...n, to, tx: w.legacy([SystemProgram.nonceWithdraw({ noncePubkey: n.nonce, authorizedPubkey: signer.publicKey, toPubkey: to, lamports: n.lamports })], [signer]) };
    },
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "sol_sent", to: s(b.to), lamports: b.lamports },
      { kind: "account_closed", account: s(b.nonce), lamports: b.lamports },
    ],
    check: (b, svm) => assert.equal(rawAccount(svm, b.to).lamports, BigInt(b.lamports)),
  },
  {
    name: "stake_authorize",
    what: "stake authorize: staker, then withdrawer, to another key",
    verdict: "malicious",
    findings: [{ kind: "stake_authority_change", instruction: 0 }, { kind: "stake_authority_change", instruction: 1 }],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const stake = w.key("stake");
      const lamports = w.rent(STAKE_LEN) + 2 * SOL;
      w.setup(StakeProgram.createAccount({
        fromPubkey: w.funder.publicKey, stakePubkey: stake.publicKey, authorized: new Authorized(signer.publicKey, signer.publicKey),
        lockup: new Lockup(0, 0, PublicKey.default), lamports,
      }).instructions, [stake]);
      const next = w.key("new-authority").publicKey;
      const ixs = [0, 1].flatMap((index) => StakeProgram.authorize({ stakePubkey: stake.publicKey, authorizedPubkey: signer.publicKey, newAuthorizedPubkey: next, stakeAuthorizationType: { index } }).instructions);
      return { svm: w.svm, signer: signer.publicKey, stake: stake.publicKey, lamports, next, tx: w.legacy(ixs, [signer]) };
    },
    // Neither role is the signer's after: the stake's lamports count for its new withdrawer.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "sol_sent", to: s(b.next), lamports: b.lamports },
      { kind: "stake_authority_change", account: s(b.stake), role: "staker", from: s(b.signer), to: s(b.next) },
      { kind: "stake_authority_change", account: s(b.stake), role: "withdrawer", from: s(b.signer), to: s(b.next) },
    ],
  },
  {
    name: "token_close_empty",
    what: "closeAccount of an empty token account, rent back to the signer",
    verdict: "benign",
    findings: [],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 9 });
      const account = w.tokenAccount(m, signer.publicKey);
      const lamports = Number(rawAccount(w.svm, account).lamports);
      return { svm: w.svm, signer: signer.publicKey, m, account, lamports, tx: w.legacy([createCloseAccountInstruction(account, signer.publicKey, signer.publicKey)], [signer]) };
    },
    // The rent comes back to the signer: nothing is sent.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: b.lamports - FEE },
      { kind: "account_closed", account: s(b.account), lamports: b.lamports },
    ],
  },
  {
    name: "token2022_fee_transfer",
    what: "Token-2022 transferCheckedWithFee of 10,000 on a 1% transfer-fee mint",
    verdict: "benign",
    findings: [],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 6, program: TOKEN_2022_PROGRAM_ID, fee: { basisPoints: 100, maximumFee: 1_000_000n } });
      const from = w.tokenAccount(m, signer.publicKey, 1_000_000n, "from");
      const recipient = w.key("recipient").publicKey;
      const to = w.tokenAccount(m, recipient, 0n, "to");
      const tx = w.legacy([createTransferCheckedWithFeeInstruction(from, m.mint, to, signer.publicKey, 10_000n, 6, 100n, [], TOKEN_2022_PROGRAM_ID)], [signer]);
      return { svm: w.svm, signer: signer.publicKey, m, from, to, recipient, tx };
    },
    // The recipient's balance grows by the amount less the fee; the withheld 100 is no one's balance.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -FEE },
      { kind: "token", mint: s(b.m.mint), program: "spl-token-2022", delta: "-10000", decimals: 6 },
      { kind: "token_sent", to: s(b.recipient), mint: s(b.m.mint), amount: "9900", decimals: b.m.decimals },
    ],
    check: (b, svm) => {
      const to = tokenOf(svm, b.to);
      assert.equal(to.amount, 9_900n, "the receiver gets the amount less the fee");
      assert.equal(to.extensions.find((e) => e.name === "transferFeeAmount")?.state.withheldAmount, 100n, "the fee is withheld in the receiver's account");
      const from = tokenOf(svm, b.from);
      assert.equal(from.amount, 990_000n);
      assert.equal(from.extensions.find((e) => e.name === "transferFeeAmount")?.state.withheldAmount, 0n);
    },
  },
  {
    name: "v0_lookup_table",
    what: "a v0 transaction whose recipient is loaded from an address lookup table",
    verdict: "benign",
    findings: [],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const to = w.key("recipient").publicKey;
      // CreateLookupTable wants a recent slot LiteSVM accepts (0 is: README), and a table's new
      // addresses are usable from the slot after the extend.
      w.svm.warpToSlot(1n);
      const [create, table] = AddressLookupTableProgram.createLookupTable({ authority: w.funder.publicKey, payer: w.funder.publicKey, recentSlot: 0 });
      w.setup([create]);
      w.setup([AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: w.funder.publicKey, payer: w.funder.publicKey, addresses: [w.key("filler").publicKey, to] })]);
      w.svm.warpToSlot(2n);
      const state = AddressLookupTableAccount.deserialize(rawAccount(w.svm, table).data);
      const message = new TransactionMessage({ payerKey: signer.publicKey, recentBlockhash: w.svm.latestBlockhash(), instructions: [SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: to, lamports: SOL / 4 })] })
        .compileToV0Message([new AddressLookupTableAccount({ key: table, state })]);
      assert.equal(message.addressTableLookups.length, 1, "the recipient must come from the table");
      assert.ok(!message.staticAccountKeys.some((k) => k.equals(to)), "the recipient must not be a static key");
      const tx = new VersionedTransaction(message);
      tx.sign([signer]);
      track(w.svm, table, to);
      return { svm: w.svm, signer: signer.publicKey, to, table, tx };
    },
    // The recipient is read although it is loaded from the table.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -(SOL / 4 + FEE) },
      { kind: "sol_sent", to: s(b.to), lamports: SOL / 4 },
    ],
    check: (b, svm) => assert.equal(rawAccount(svm, b.to).lamports, BigInt(SOL / 4)),
  },
  {
    name: "drain_multi",
    what: "drain: approve the attacker, give it the token account, send it 2 SOL — one transaction",
    verdict: "malicious",
    findings: [{ kind: "asset_sweep", instruction: null }, { kind: "token_approval", instruction: 0 }, { kind: "token_owner_change", instruction: 1 }, { kind: "flagged_recipient", instruction: 2 }],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 2 });
      const account = w.tokenAccount(m, signer.publicKey, 5000n);
      const rent = w.rent(ACCOUNT_SIZE); // what tokenAccount() funded it with
      const attacker = ATTACKER.publicKey;
      const tx = w.legacy([
        createApproveInstruction(account, attacker, signer.publicKey, U64_MAX),
        createSetAuthorityInstruction(account, signer.publicKey, AuthorityType.AccountOwner, attacker),
        SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: attacker, lamports: 2 * SOL }),
      ], [signer]);
      return { svm: w.svm, signer: signer.publicKey, m, account, rent, attacker, tx };
    },
    // The owner change clears the delegate the first instruction set (spl-token's SetAuthority):
    // from the states before and after, the delegate never changed. The attacker (a fresh address)
    // gets the 2 SOL and, with the token account, its 5,000 tokens and its rent lamports.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -(2 * SOL + FEE) },
      { kind: "token", mint: s(b.m.mint), program: "spl-token", delta: "-5000", decimals: 2 },
      { kind: "sol_sent", to: s(b.attacker), lamports: 2 * SOL + b.rent },
      { kind: "token_sent", to: s(b.attacker), mint: s(b.m.mint), amount: "5000", decimals: b.m.decimals },
      { kind: "token_owner_change", account: s(b.account), mint: s(b.m.mint), from: s(b.signer), to: s(b.attacker) },
    ],
    check: (b, svm) => {
      const t = tokenOf(svm, b.account);
      assert.equal(t.owner, s(b.attacker));
      assert.equal(t.delegate, null);
    },
  },
  {
    name: "delegate_spend",
    what: "the delegate moves 250 of an approved 600 (it signs; the signer pays the fee)",
    verdict: "benign",
    findings: [],
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const delegate = w.key("delegate");
      const m = w.mint({ decimals: 0 });
      const account = w.tokenAccount(m, signer.publicKey, 1000n);
      const recipient = w.key("recipient").publicKey;
      const to = w.tokenAccount(m, recipient, 0n, "to");
      w.setup([createApproveInstruction(account, delegate.publicKey, signer.publicKey, 600n)], [signer]);
      return { svm: w.svm, signer: signer.publicKey, m, account, delegate: delegate.publicKey, to, recipient, tx: w.legacy([createTransferInstruction(account, to, delegate.publicKey, 250n)], [signer, delegate]) };
    },
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -2 * FEE },
      { kind: "token", mint: s(b.m.mint), program: "spl-token", delta: "-250", decimals: 0 },
      { kind: "token_sent", to: s(b.recipient), mint: s(b.m.mint), amount: "250", decimals: b.m.decimals },
      { kind: "token_delegate_change", account: s(b.account), mint: s(b.m.mint), from: s(b.delegate), to: s(b.delegate), amount: "350", decimals: b.m.decimals },
    ],
  },
  {
    name: "token_account_create",
    what: "the signer creates and initializes its own token account (createAccount + initializeAccount3)",
    verdict: "benign",
    findings: [],
    post: "unsigned",
    build() {
      const w = new World(this.name);
      const signer = w.wallet();
      const m = w.mint({ decimals: 3 });
      const account = w.key("new-token-account");
      const lamports = w.rent(ACCOUNT_SIZE);
      const ixs = [
        SystemProgram.createAccount({ fromPubkey: signer.publicKey, newAccountPubkey: account.publicKey, lamports, space: ACCOUNT_SIZE, programId: TOKEN_PROGRAM_ID }),
        createInitializeAccount3Instruction(account.publicKey, m.mint, signer.publicKey),
      ];
      return { svm: w.svm, signer: signer.publicKey, m, account: account.publicKey, lamports, tx: w.legacy(ixs, [signer, account]) };
    },
    // The new token account is the signer's (it owns it): its rent is not sent.
    effects: (b) => [
      { kind: "sol", account: s(b.signer), deltaLamports: -(b.lamports + 2 * FEE) },
      { kind: "account_created", account: s(b.account), owner: IDS.token, lamports: b.lamports },
    ],
    check: (b, svm) => assert.equal(tokenOf(svm, b.account).owner, s(b.signer)),
  },
];
