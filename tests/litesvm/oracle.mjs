// The oracle: what a transaction did to a signer, computed from raw pre- and post-state account
// bytes (LiteSVM's, decoded with layouts.mjs / @solana/spl-token), never from the shim's JSON.
//
// Rules (the scan endpoint's `effects` contract):
// - an account exists iff lamports > 0; it is the signer's if, in the pre- or the post-state, it is
//   the signer's own address, a token account (SPL Token or Token-2022) the signer owns, a nonce
//   account whose authority is the signer, or a stake account whose staker or withdrawer it is;
// - what others received of what the signer lost (sol_sent, token_sent): each account's balance
//   counts for its holder — the signer for its own accounts, a token account's owner, a nonce's
//   authority, a stake account's withdrawer, else the account itself; an account whose holder
//   changes is the old holder's loss and the new one's gain; for each asset the signer holds less
//   of after, every other holder's gains (sent to it, by `to` then mint);
// - effects in this order of kinds: sol, token, sol_sent, token_sent, account_created, account_closed,
//   account_owner_change, token_owner_change, token_delegate_change, token_close_authority_change,
//   nonce_authority_change, stake_authority_change; within a kind by account (base58, ascending),
//   then role (staker before withdrawer); tokens by mint;
// - an account that exists only before or only after gives created/closed alone.
// The addresses considered are the scan's: every account of the message (static keys and those
// loaded from lookup tables) except executable programs and sysvars.

import { VersionedTransaction } from "@solana/web3.js";
import { IDS, TOKEN_PROGRAM_NAMES, decodeTokenAccount, decodeMint, decodeNonce, decodeStake, decodeLookupTable } from "./layouts.mjs";
import { rawAccount } from "./util.mjs";

const KIND_ORDER = [
  "sol", "token", "sol_sent", "token_sent", "account_created", "account_closed", "account_owner_change", "token_owner_change",
  "token_delegate_change", "token_close_authority_change", "nonce_authority_change", "stake_authority_change",
];

const exists = (a) => !!a && a.lamports > 0n;
const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/** The wire bytes of a web3.js Transaction or VersionedTransaction (signatures as they are). */
export function wireOf(tx) {
  return Buffer.from(tx.serialize({ requireAllSignatures: false, verifySignatures: false }));
}

/** The same transaction with every signature zeroed: what a wallet has before signing. */
export function unsignedWire(tx) {
  const v = VersionedTransaction.deserialize(wireOf(tx));
  v.signatures = v.signatures.map(() => new Uint8Array(64));
  return Buffer.from(v.serialize());
}

/**
 * Every account key of the message, static then loaded (each table's writable indexes, then each
 * table's read-only ones, as the runtime orders them), with how each is used.
 */
export function messageAccounts(svm, tx) {
  const v = VersionedTransaction.deserialize(wireOf(tx));
  const m = v.message;
  const keys = m.staticAccountKeys.map((k) => k.toBase58());
  const writable = [];
  const readonly = [];
  for (const lookup of m.addressTableLookups ?? []) {
    const table = decodeLookupTable(rawAccount(svm, lookup.accountKey));
    if (!table || table.uninitialized) throw new Error(`lookup table ${lookup.accountKey.toBase58()} not found`);
    for (const i of lookup.writableIndexes) writable.push(table.addresses[i]);
    for (const i of lookup.readonlyIndexes) readonly.push(table.addresses[i]);
  }
  const all = keys.concat(writable, readonly);
  const programIds = new Set(m.compiledInstructions.map((ix) => all[ix.programIdIndex]));
  return { all, static: keys, loaded: writable.concat(readonly), programIds, version: v.version };
}

const isSysvar = (address, acct) => address.startsWith("Sysvar") || acct?.owner === IDS.sysvar;

/** The addresses the scan reads: all of the message's, less executable programs and sysvars. */
export function readSet(svm, tx) {
  const { all } = messageAccounts(svm, tx);
  const out = [];
  for (const a of all) {
    const acct = rawAccount(svm, a);
    if (acct?.executable) continue;
    if (isSysvar(a, acct)) continue;
    if (!out.includes(a)) out.push(a);
  }
  return out;
}

/** address -> raw account (or null) for each address, now. */
export function snapshot(svm, addresses) {
  return new Map(addresses.map((a) => [a, rawAccount(svm, a)]));
}

function isSigners(address, acct, signer) {
  if (address === signer) return true;
  if (!exists(acct)) return false;
  const t = decodeTokenAccount(acct);
  if (t) return t.owner === signer;
  const n = decodeNonce(acct);
  if (n) return n.authority === signer;
  const s = decodeStake(acct);
  if (s?.meta) return s.meta.staker === signer || s.meta.withdrawer === signer;
  return false;
}

/**
 * The signer's effects. `pre`/`post`: Map address -> raw account | null over the same addresses;
 * `decimalsOf(mint)`: the mint's decimals (a transfer need not name the mint).
 */
export function computeEffects({ pre, post, signer, decimalsOf }) {
  const addresses = [...new Set([...pre.keys(), ...post.keys()])];
  const before = (a) => pre.get(a) ?? null;
  const after = (a) => post.get(a) ?? null;
  const effects = [];

  const lamports = (acct) => (exists(acct) ? acct.lamports : 0n);
  const sol = lamports(after(signer)) - lamports(before(signer));
  if (sol !== 0n) effects.push({ kind: "sol", account: signer, deltaLamports: Number(sol) });

  // Token balances by mint: what the signer owns after less what it owned before.
  const byMint = new Map();
  const add = (acct, sign) => {
    if (!exists(acct)) return;
    const t = decodeTokenAccount(acct);
    if (!t || t.owner !== signer) return;
    const e = byMint.get(t.mint) ?? { program: TOKEN_PROGRAM_NAMES[t.program], delta: 0n };
    e.delta += sign * t.amount;
    byMint.set(t.mint, e);
  };
  for (const a of addresses) {
    add(before(a), -1n);
    add(after(a), 1n);
  }
  for (const mint of [...byMint.keys()].sort(cmp)) {
    const e = byMint.get(mint);
    if (e.delta !== 0n) effects.push({ kind: "token", mint, program: e.program, delta: e.delta.toString(), decimals: decimalsOf(mint) });
  }

  effects.push(...sent(addresses, before, after, signer, decimalsOf));

  const mine = addresses.filter((a) => isSigners(a, before(a), signer) || isSigners(a, after(a), signer)).sort(cmp);
  const changes = [];
  for (const a of mine) {
    const p = before(a);
    const q = after(a);
    if (!exists(p) && exists(q)) {
      changes.push({ kind: "account_created", account: a, owner: q.owner, lamports: Number(q.lamports) });
      continue;
    }
    if (exists(p) && !exists(q)) {
      changes.push({ kind: "account_closed", account: a, lamports: Number(p.lamports) });
      continue;
    }
    if (!exists(p)) continue;
    if (p.owner !== q.owner) changes.push({ kind: "account_owner_change", account: a, from: p.owner, to: q.owner });
    const t0 = decodeTokenAccount(p);
    const t1 = decodeTokenAccount(q);
    if (t0 && t1) {
      const mint = t1.mint;
      if (t0.owner !== t1.owner) changes.push({ kind: "token_owner_change", account: a, mint, from: t0.owner, to: t1.owner });
      if (t0.delegate !== t1.delegate || t0.delegatedAmount !== t1.delegatedAmount) {
        changes.push({ kind: "token_delegate_change", account: a, mint, from: t0.delegate, to: t1.delegate, amount: t1.delegatedAmount.toString(), decimals: decimalsOf(mint) });
      }
      if (t0.closeAuthority !== t1.closeAuthority) changes.push({ kind: "token_close_authority_change", account: a, mint, from: t0.closeAuthority, to: t1.closeAuthority });
    }
    const n0 = decodeNonce(p);
    const n1 = decodeNonce(q);
    if (n0 && n1 && n0.authority !== n1.authority) changes.push({ kind: "nonce_authority_change", account: a, from: n0.authority, to: n1.authority });
    const s0 = decodeStake(p)?.meta;
    const s1 = decodeStake(q)?.meta;
    if (s0 && s1) {
      for (const role of ["staker", "withdrawer"]) {
        if (s0[role] !== s1[role]) changes.push({ kind: "stake_authority_change", account: a, role, from: s0[role], to: s1[role] });
      }
    }
  }
  // Kind order, then account, then role (stable: staker was pushed before withdrawer).
  changes.sort((x, y) => KIND_ORDER.indexOf(x.kind) - KIND_ORDER.indexOf(y.kind) || cmp(x.account, y.account));
  return effects.concat(changes);
}

/** Who an account's lamports count for (see the rules above). */
function solHolder(address, acct, signer) {
  if (isSigners(address, acct, signer)) return signer;
  const t = decodeTokenAccount(acct);
  if (t) return t.owner;
  const n = decodeNonce(acct);
  if (n) return n.authority;
  const s = decodeStake(acct);
  if (s?.meta) return s.meta.withdrawer;
  return address;
}

/** sol_sent and token_sent: what other holders gained of each asset the signer lost. */
function sent(addresses, before, after, signer, decimalsOf) {
  // asset ("SOL" or the mint) -> { mine: [before, after], others: Map holder -> gained }
  const assets = new Map();
  const book = (asset, holder, b, a) => {
    const e = assets.get(asset) ?? { mine: [0n, 0n], others: new Map() };
    assets.set(asset, e);
    if (holder === signer) {
      e.mine[0] += b;
      e.mine[1] += a;
    } else if (a > b) {
      e.others.set(holder, (e.others.get(holder) ?? 0n) + (a - b));
    }
  };
  const balance = (asset, b, a) => {
    if (b && a && b.holder === a.holder) return book(asset, b.holder, b.amount, a.amount);
    if (b) book(asset, b.holder, b.amount, 0n);
    if (a) book(asset, a.holder, 0n, a.amount);
  };
  for (const address of addresses) {
    const [p, q] = [before(address), after(address)];
    const sol = (acct) => (exists(acct) ? { holder: solHolder(address, acct, signer), amount: acct.lamports } : null);
    balance("SOL", sol(p), sol(q));
    const token = (acct) => {
      const t = exists(acct) ? decodeTokenAccount(acct) : null;
      return t ? { holder: t.owner, amount: t.amount, mint: t.mint } : null;
    };
    const [t0, t1] = [token(p), token(q)];
    const mint = (t0 ?? t1)?.mint;
    if (mint) balance(mint, t0?.mint === mint ? t0 : null, t1?.mint === mint ? t1 : null);
  }
  const out = [];
  for (const [asset, e] of assets) {
    if (e.mine[1] >= e.mine[0]) continue;
    for (const [to, amount] of e.others) {
      out.push(asset === "SOL" ? { kind: "sol_sent", to, lamports: Number(amount) } : { kind: "token_sent", to, mint: asset, amount: amount.toString(), decimals: decimalsOf(asset) });
    }
  }
  return out.sort((x, y) => cmp(x.kind === "sol_sent" ? 0 : 1, y.kind === "sol_sent" ? 0 : 1) || cmp(x.to, y.to) || cmp(x.mint ?? "", y.mint ?? ""));
}

/** decimalsOf over a LiteSVM instance (a mint's decimals do not change within a transaction). */
export function decimalsFrom(svm) {
  return (mint) => {
    const m = decodeMint(rawAccount(svm, mint));
    if (!m) throw new Error(`mint ${mint} not found`);
    return m.decimals;
  };
}
