// The corpus's drainer cases: the three classes of a published study of Solana phishing
// (SolPhishHunter, arXiv 2505.04094) — multi-transfer sweeps to fresh addresses, authority
// transfers, look-alike recipients — built with the official builders (@solana/web3.js
// SystemProgram / StakeProgram, @solana/spl-token instruction builders), each with the verdict
// issue #41 demands:
//   sweep      to addresses the wallet never dealt with: `warning` (a user moving to a new wallet of
//              their own does that too), `malicious` when a dApp asked for it (an `origin` is sent)
//   authority  the wallet, a token account, its close right, a nonce or a stake handed away —
//              directly or through an unknown program's CPI: `malicious`
//   lookalike  a transfer to an address sharing the first and last four characters of a real
//              counterparty, also after a dust flood from the look-alike: `malicious`
//
// Two sources, two builders:
//   litesvmCases()          each case sets up a fresh LiteSVM world (real System / Token / Stake
//                           programs) and returns {svm, signer, tx}; the runner serves it through
//                           the JSON-RPC shim (tests/litesvm/shim.mjs) to `xray serve --ledger rpc:…`
//   demoCases(rpcUrl, who)  read a demo wallet's real state from `xray ledger serve --ledger demo`
//                           (JSON-RPC, jsonParsed) and build against it, unsigned, for
//                           `xray serve --ledger demo`
// A case: {name, class, expected, origin?, what, build() | transaction+signer}. Names are the same
// on both sources where the case exists on both. Keys are derived from names (seededKeypair).

import {
  PublicKey, Transaction, TransactionInstruction, SystemProgram, StakeProgram, Authorized, Lockup, LAMPORTS_PER_SOL,
} from "@solana/web3.js";
import {
  TOKEN_PROGRAM_ID, AuthorityType, createTransferCheckedInstruction, createSetAuthorityInstruction,
  createCloseAccountInstruction, createAssociatedTokenAccountInstruction, getAssociatedTokenAddressSync,
} from "@solana/spl-token";
import { World } from "../litesvm/cases.mjs";
import { executeRecorded, rpcResult } from "../litesvm/shim.mjs";
import { STAKE_LEN } from "../litesvm/layouts.mjs";
import { bs58, seededKeypair, rawAccount } from "../litesvm/util.mjs";

export const ORIGIN = "https://claim-sol-airdrop.xyz";
export const CLASSES = ["sweep", "authority", "lookalike"];
const SOL = LAMPORTS_PER_SOL;
const FEE = 5000;
/** A dust transfer: at most engine::flows::DUST_LAMPORTS_MAX (100,000 lamports). */
const DUST_LAMPORTS = 1_000;
/** Dust transfers the look-alike sends after the real payment: more than the 25 newest
 *  transactions the scan reads counterparties from (SCAN_HISTORY_SIGNATURES_MAX). */
const DUST_FLOOD = 30;

const share = (lamports, percent) => Math.floor((Number(lamports) * percent) / 100);

/** An address with the same first and last four base58 characters as `address`, not it: one
 *  middle character changed (the first change that still decodes to 32 bytes). No key exists
 *  for it — as for a poisoner's vanity address, ground until its ends match. */
export function lookalikeOf(address) {
  const text = new PublicKey(address).toBase58();
  const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  for (let i = 16; i < text.length - 4; i++) {
    for (const c of alphabet) {
      if (c === text[i]) continue;
      const candidate = text.slice(0, i) + c + text.slice(i + 1);
      const bytes = bs58.decode(candidate);
      if (bytes.length === 32 && bs58.encode(bytes) === candidate) return new PublicKey(bytes);
    }
  }
  throw new Error(`no look-alike of ${text}`);
}

/** The six sweeps, from a wallet's state: {sol, holdings: [{account, mint, amount, decimals,
 *  program}]}, the strangers and how their token accounts come to exist (`tokenAccountOf`). */
function sweepInstructions(kind, { wallet, sol, holdings, stranger, stranger2, tokenAccountOf }) {
  const sol_ = (to, lamports) => SystemProgram.transfer({ fromPubkey: wallet, toPubkey: to, lamports });
  const tokens = (close) => holdings.flatMap((h) => {
    const { create, account } = tokenAccountOf(h, stranger);
    const ixs = [...create, createTransferCheckedInstruction(h.account, h.mint, account, wallet, h.amount, h.decimals, [], h.program)];
    if (close) ixs.push(createCloseAccountInstruction(h.account, stranger, wallet, [], h.program));
    return ixs;
  });
  switch (kind) {
    case "sol97": return [sol_(stranger, share(sol, 97))];
    case "sol99": return [sol_(stranger, share(sol, 99))];
    case "sol_all": return [sol_(stranger, Number(sol) - FEE)];
    case "sol_split2": return [sol_(stranger, share(sol, 48.5)), sol_(stranger2, share(sol, 48.5))];
    case "tokens_close": return tokens(true);
    case "everything": return [...tokens(false), sol_(stranger, share(sol, 97))];
    default: throw new Error(kind);
  }
}

const SWEEPS = [
  ["sol97", "97 % of the wallet's SOL to a fresh address"],
  ["sol99", "99 % of the wallet's SOL alone to a fresh address"],
  ["sol_all", "all of the wallet's SOL (net of the fee) to a fresh address"],
  ["sol_split2", "the wallet's SOL split over two fresh addresses (48.5 % each)"],
  ["tokens_close", "every token balance to a fresh address, each token account then closed with its rent to it"],
  ["everything", "every token balance and 97 % of the SOL to one fresh address"],
];

const AUTHORITIES = [
  ["set_owner", "token setAuthority(AccountOwner) of the wallet's token account to a fresh address"],
  ["close_authority", "token setAuthority(CloseAccount) of the wallet's token account to a fresh address"],
  ["assign", "System assign of the wallet itself to an unknown program"],
  ["nonce_authorize", "authorizeNonceAccount of the wallet's nonce account to a fresh address"],
  ["stake_withdrawer", "stake authorize: the withdrawer of the wallet's stake account to a fresh address"],
  ["cpi_set_owner", "an unknown program, given the wallet's token account, CPIs the token program's setAuthority(AccountOwner): visible only in the simulation's post-state"],
];

/** Each base case without and with a dApp origin. */
function withOrigins(base, expected) {
  return [{ ...base, expected: expected(false) }, { ...base, name: `${base.name}+origin`, origin: ORIGIN, expected: expected(true) }];
}

// ---------------------------------------------------------------------------------------------
// LiteSVM

/** A wallet with 10 SOL less one earlier payment to a friend (recorded: the shim serves it as
 *  history), two token balances (6 and 0 decimals), and strangers it never dealt with. */
function litesvmWallet(name) {
  const w = new World(`corpus/${name}`);
  const wallet = w.wallet(10);
  const friend = w.key("friend").publicKey;
  executeRecorded(w.svm, w.legacy([SystemProgram.transfer({ fromPubkey: wallet.publicKey, toPubkey: friend, lamports: SOL / 2 })], [wallet]));
  const a = w.mint({ decimals: 6, role: "mint-a" });
  const b = w.mint({ decimals: 0, role: "mint-b" });
  const holdings = [
    { m: a, amount: 1_250_000_000n },
    { m: b, amount: 40n },
  ].map(({ m, amount }, i) => ({
    account: w.tokenAccount(m, wallet.publicKey, amount, `wallet-token-${i}`), mint: m.mint, amount, decimals: m.decimals, program: m.program, m,
  }));
  const stranger = w.key("stranger").publicKey;
  const stranger2 = w.key("stranger-2").publicKey;
  // The strangers' token accounts exist already (a drainer's do). Made so when litesvm 0.8.0 could
  // not run the ATA program (tests/litesvm/README.md); 1.5.0 can, the cases are kept as they are.
  const theirs = new Map(holdings.map((h, i) => [h.mint.toBase58(), w.tokenAccount(h.m, stranger, 0n, `stranger-token-${i}`)]));
  const tokenAccountOf = (h) => ({ create: [], account: theirs.get(h.mint.toBase58()) });
  const sol = rawAccount(w.svm, wallet.publicKey).lamports;
  return { w, wallet, friend, sol, holdings, stranger, stranger2, tokenAccountOf };
}

function litesvmAuthority(kind, name) {
  const s = litesvmWallet(name);
  const tx = authorityTx(kind, s);
  return { svm: s.w.svm, signer: s.wallet.publicKey, tx };
}

function authorityTx(kind, s) {
  const { w, wallet, stranger } = s;
  const signer = wallet.publicKey;
  const token = s.holdings[0];
  switch (kind) {
    case "set_owner":
      return w.legacy([createSetAuthorityInstruction(token.account, signer, AuthorityType.AccountOwner, stranger)], [wallet]);
    case "close_authority":
      return w.legacy([createSetAuthorityInstruction(token.account, signer, AuthorityType.CloseAccount, stranger)], [wallet]);
    case "assign":
      return w.legacy([SystemProgram.assign({ accountPubkey: signer, programId: w.key("drainer-program").publicKey })], [wallet]);
    case "nonce_authorize": {
      const n = w.nonce(signer);
      return w.legacy([SystemProgram.nonceAuthorize({ noncePubkey: n.nonce, authorizedPubkey: signer, newAuthorizedPubkey: stranger })], [wallet]);
    }
    case "stake_withdrawer": {
      const stake = w.key("stake");
      w.setup(StakeProgram.createAccount({
        fromPubkey: w.funder.publicKey, stakePubkey: stake.publicKey, authorized: new Authorized(signer, signer),
        lockup: new Lockup(0, 0, PublicKey.default), lamports: w.rent(STAKE_LEN) + 2 * SOL,
      }).instructions, [stake]);
      return w.legacy(StakeProgram.authorize({ stakePubkey: stake.publicKey, authorizedPubkey: signer, newAuthorizedPubkey: stranger, stakeAuthorizationType: { index: 1 } }).instructions, [wallet]);
    }
    case "cpi_set_owner": {
      // No program that CPIs can be built here (no SBF toolchain, no network): the program id is
      // a fresh key LiteSVM cannot run, and the shim answers its simulation with the post-state
      // the CPI leaves — the token account owned by the stranger, the fee paid (tokens unchanged).
      const program = w.key("unknown-cpi-program").publicKey;
      const ix = new TransactionInstruction({
        programId: program,
        keys: [
          { pubkey: token.account, isSigner: false, isWritable: true },
          { pubkey: signer, isSigner: true, isWritable: true },
          { pubkey: stranger, isSigner: false, isWritable: false },
          { pubkey: TOKEN_PROGRAM_ID, isSigner: false, isWritable: false },
        ],
        data: Buffer.from([7, 1]),
      });
      const tx = w.legacy([ix], [wallet]);
      w.svm.__simulate = (sim) => {
        if (!sim.message.staticAccountKeys.some((k) => k.equals(program))) return null;
        const acct = rawAccount(w.svm, token.account);
        const data = Buffer.from(acct.data);
        stranger.toBuffer().copy(data, 32); // Account.owner: bytes 32..64
        const payer = rawAccount(w.svm, signer);
        const post = new Map([
          [token.account.toBase58(), { ...acct, data }],
          [signer.toBase58(), { ...payer, lamports: payer.lamports - BigInt(FEE) }],
        ]);
        const logs = [
          `Program ${program.toBase58()} invoke [1]`,
          `Program ${TOKEN_PROGRAM_ID.toBase58()} invoke [2]`,
          "Program log: Instruction: SetAuthority",
          `Program ${TOKEN_PROGRAM_ID.toBase58()} success`,
          `Program ${program.toBase58()} success`,
        ];
        return { post, logs, unitsConsumed: 4321 };
      };
      return tx;
    }
    default:
      throw new Error(kind);
  }
}

/** A wallet that paid its friend 1.5 SOL (recorded history), then got `dust` dust transfers from
 *  the friend's look-alike (newest); the transaction sends 1.5 SOL to the look-alike. */
function litesvmLookalike(name, dust) {
  const w = new World(`corpus/${name}`);
  const wallet = w.wallet(10);
  const friend = w.key("friend").publicKey;
  executeRecorded(w.svm, w.legacy([SystemProgram.transfer({ fromPubkey: wallet.publicKey, toPubkey: friend, lamports: 1.5 * SOL })], [wallet]));
  const lookalike = lookalikeOf(friend);
  if (dust > 0) w.airdrop(lookalike, SOL);
  for (let i = 0; i < dust; i++) {
    const tx = new Transaction({ feePayer: lookalike, recentBlockhash: w.svm.latestBlockhash() })
      .add(SystemProgram.transfer({ fromPubkey: lookalike, toPubkey: wallet.publicKey, lamports: DUST_LAMPORTS + i }));
    executeRecorded(w.svm, tx, { sigverify: false });
  }
  const tx = w.legacy([SystemProgram.transfer({ fromPubkey: wallet.publicKey, toPubkey: lookalike, lamports: 1.5 * SOL })], [wallet]);
  return { svm: w.svm, signer: wallet.publicKey, tx };
}

const LOOKALIKES = [
  ["lookalike_send", 1, "1.5 SOL to a look-alike of the friend the wallet paid before, after one dust transfer from the look-alike (address poisoning)"],
  ["lookalike_synthetic", 0, "1.5 SOL to a look-alike of the friend the wallet paid before (the look-alike itself never seen)"],
  ["lookalike_dust_flood", DUST_FLOOD, `1.5 SOL to a look-alike of the friend the wallet paid before, after ${DUST_FLOOD} dust transfers from the look-alike (newest: the friend is out of the 25 newest)`],
];

export function litesvmCases() {
  const out = [];
  for (const [kind, what] of SWEEPS) {
    const name = `sweep_${kind}`;
    out.push(...withOrigins({
      name, class: "sweep", what,
      build: () => {
        const s = litesvmWallet(name);
        return { svm: s.w.svm, signer: s.wallet.publicKey, tx: s.w.legacy(sweepInstructions(kind, { ...s, wallet: s.wallet.publicKey }), [s.wallet]) };
      },
    }, (origin) => (origin ? "malicious" : "warning")));
  }
  for (const [kind, what] of AUTHORITIES) {
    const name = `authority_${kind}`;
    out.push(...withOrigins({
      name, class: "authority", what,
      build: () => litesvmAuthority(kind, name),
    }, () => "malicious"));
  }
  for (const [name, dust, what] of LOOKALIKES) {
    out.push(...withOrigins({ name, class: "lookalike", what, build: () => litesvmLookalike(name, dust) }, () => "malicious"));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Demo ledger: the state read from `xray ledger serve --ledger demo`.

const TOKEN_PROGRAMS = ["TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"];

async function demoHoldings(rpcUrl, wallet) {
  const out = [];
  for (const programId of TOKEN_PROGRAMS) {
    const r = await rpcResult(rpcUrl, "getTokenAccountsByOwner", [wallet, { programId }, { encoding: "jsonParsed" }]);
    for (const { pubkey, account } of r.value) {
      const info = account.data.parsed.info;
      const amount = BigInt(info.tokenAmount.amount);
      if (amount === 0n) continue;
      out.push({ account: new PublicKey(pubkey), mint: new PublicKey(info.mint), amount, decimals: info.tokenAmount.decimals, program: new PublicKey(programId) });
    }
  }
  return out;
}

/** The wallet's transactions, newest first, jsonParsed. */
async function demoHistory(rpcUrl, wallet, limit = 50) {
  const sigs = await rpcResult(rpcUrl, "getSignaturesForAddress", [wallet, { limit }]);
  const out = [];
  for (const s of sigs) out.push(await rpcResult(rpcUrl, "getTransaction", [s.signature, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0 }]));
  return out;
}

const systemTransfers = (txs) => txs.flatMap((t) => t.transaction.message.instructions)
  .filter((ix) => ix.program === "system" && ix.parsed?.type === "transfer").map((ix) => ix.parsed.info);

const ends = (a) => `${a.slice(0, 4)}…${a.slice(-4)}`;

/**
 * The demo cases. `who`: archetype name -> address (`xray demo list`). Returns {cases, absent}:
 * `absent` names the corpus cases the demo ledger cannot hold, and why.
 */
export async function demoCases(rpcUrl, who) {
  const clean = who.clean;
  const cleanHistory = await demoHistory(rpcUrl, clean);
  const blockhash = cleanHistory[0].transaction.message.recentBlockhash;
  const unsigned = (instructions, feePayer) => {
    const tx = new Transaction({ feePayer: new PublicKey(feePayer), recentBlockhash: blockhash }).add(...instructions);
    return tx.serialize({ requireAllSignatures: false, verifySignatures: false }).toString("base64");
  };
  const key = (role) => seededKeypair(`corpus/demo/${role}`).publicKey;
  const cases = [];
  const push = (base, expected) => cases.push(...withOrigins(base, expected));

  // Sweeps of `clean`: its SOL and its token balances; the stranger's token accounts are created
  // in the transaction by the ATA program (the demo executes it).
  const sol = (await rpcResult(rpcUrl, "getBalance", [clean])).value;
  const holdings = await demoHoldings(rpcUrl, clean);
  if (holdings.length === 0) throw new Error("the demo's clean wallet holds no tokens");
  const wallet = new PublicKey(clean);
  for (const [kind, what] of SWEEPS) {
    const stranger = key(`${kind}/stranger`);
    const tokenAccountOf = (h, owner) => {
      const account = getAssociatedTokenAddressSync(h.mint, owner, true, h.program);
      return { account, create: [createAssociatedTokenAccountInstruction(wallet, account, owner, h.mint, h.program)] };
    };
    // The ATA rents come out of the SOL the sweep leaves.
    const rent = kind === "everything" ? holdings.length * 2_039_280 : 0;
    const ixs = sweepInstructions(kind, { wallet, sol: sol - rent, holdings, stranger, stranger2: key(`${kind}/stranger-2`), tokenAccountOf });
    push({ name: `sweep_${kind}`, class: "sweep", what: `${what} (demo wallet clean)`, signer: clean, transaction: unsigned(ixs, clean) }, (o) => (o ? "malicious" : "warning"));
  }

  // Authority transfers.
  const token = holdings[0];
  const nonces = await rpcResult(rpcUrl, "getProgramAccounts", [SystemProgram.programId.toBase58(), { encoding: "jsonParsed", filters: [{ dataSize: 80 }, { memcmp: { offset: 8, bytes: who.outsider_nonce } }] }]);
  if (nonces.length === 0) throw new Error("no nonce account names outsider_nonce");
  const nonce = new PublicKey(nonces[0].pubkey);
  // foreign_stake_authority handed its stake away: its stake account, read from its history,
  // and the withdrawer it names now — the signer of the case.
  const stakeIx = (await demoHistory(rpcUrl, who.foreign_stake_authority)).flatMap((t) => t.transaction.message.instructions).find((ix) => ix.program === "stake" && ix.parsed?.type === "authorize");
  const stakeAddress = stakeIx.parsed.info.stakeAccount;
  const stakeInfo = (await rpcResult(rpcUrl, "getAccountInfo", [stakeAddress, { encoding: "jsonParsed" }])).value.data.parsed.info;
  const withdrawer = stakeInfo.meta.authorized.withdrawer;
  const authority = {
    set_owner: [clean, [createSetAuthorityInstruction(token.account, wallet, AuthorityType.AccountOwner, key("set_owner/stranger"), [], token.program)], "clean"],
    close_authority: [clean, [createSetAuthorityInstruction(token.account, wallet, AuthorityType.CloseAccount, key("close_authority/stranger"), [], token.program)], "clean"],
    assign: [clean, [SystemProgram.assign({ accountPubkey: wallet, programId: key("assign/drainer-program") })], "clean"],
    nonce_authorize: [who.outsider_nonce, [SystemProgram.nonceAuthorize({ noncePubkey: nonce, authorizedPubkey: new PublicKey(who.outsider_nonce), newAuthorizedPubkey: key("nonce_authorize/stranger") })], `outsider_nonce, nonce ${nonce.toBase58()}`],
    stake_withdrawer: [withdrawer, StakeProgram.authorize({ stakePubkey: new PublicKey(stakeAddress), authorizedPubkey: new PublicKey(withdrawer), newAuthorizedPubkey: key("stake_withdrawer/stranger"), stakeAuthorizationType: { index: 1 } }).instructions, `the withdrawer of foreign_stake_authority's stake ${stakeAddress}`],
  };
  for (const [kind, what] of AUTHORITIES) {
    if (!authority[kind]) continue;
    const [signer, ixs, whose] = authority[kind];
    push({ name: `authority_${kind}`, class: "authority", what: `${what} (demo: ${whose})`, signer, transaction: unsigned(ixs, signer) }, () => "malicious");
  }

  // Look-alikes: poisoning_victim's friend and the poisoner that imitates it (the dust sender
  // whose address shares the friend's ends), both from its history.
  const victim = who.poisoning_victim;
  const transfers = systemTransfers(await demoHistory(rpcUrl, victim));
  const paid = transfers.filter((t) => t.source === victim && BigInt(t.lamports) > 100_000n).map((t) => t.destination);
  const dusters = transfers.filter((t) => t.destination === victim && BigInt(t.lamports) <= 100_000n).map((t) => t.source);
  const poisoner = dusters.find((d) => paid.some((p) => p !== d && ends(p) === ends(d)));
  if (!poisoner) throw new Error("poisoning_victim: no look-alike pair in its history");
  push({
    name: "lookalike_send", class: "lookalike", what: `1 SOL to the look-alike ${poisoner} of a friend poisoning_victim pays (demo history)`,
    signer: victim, transaction: unsigned([SystemProgram.transfer({ fromPubkey: new PublicKey(victim), toPubkey: new PublicKey(poisoner), lamports: SOL })], victim),
  }, () => "malicious");
  const cleanPaid = systemTransfers(cleanHistory).filter((t) => t.source === clean && BigInt(t.lamports) > 100_000n).map((t) => t.destination);
  if (cleanPaid.length === 0) throw new Error("clean paid nobody in its history");
  const imitation = lookalikeOf(cleanPaid[0]);
  push({
    name: "lookalike_synthetic", class: "lookalike", what: `1 SOL to ${imitation.toBase58()}, a look-alike of ${cleanPaid[0]} whom clean paid (never seen itself)`,
    signer: clean, transaction: unsigned([SystemProgram.transfer({ fromPubkey: wallet, toPubkey: imitation, lamports: SOL })], clean),
  }, () => "malicious");

  const absent = {
    authority_cpi_set_owner: "the demo ledger does not execute unknown programs (its simulation is skipped), so a CPI's post-state cannot exist there",
    "authority_cpi_set_owner+origin": "as authority_cpi_set_owner",
    lookalike_dust_flood: "the demo ledger's histories are fixed: no demo wallet has 25+ dust transfers after a real one",
    "lookalike_dust_flood+origin": "as lookalike_dust_flood",
  };
  return { cases, absent };
}
