// Raw account -> the UiAccount a Solana node (Agave's account-decoder) sends, for the encodings
// jsonParsed, base64 and base58. jsonParsed covers what the decoder parses for the programs the
// harness uses: spl-token / spl-token-2022 (accounts, mints, multisigs, the Token-2022 extensions
// of layouts.mjs), nonce, stake, address-lookup-table, bpf-upgradeable-loader. As a node does, an
// account it cannot parse (or a token account whose mint it cannot read) falls back to
// ["<base64>", "base64"]. Deliberately not parsed here: sysvar, vote and config accounts (a node
// parses them; the scan never reads them) — they are sent as base64.

import { ACCOUNT_SIZE, MINT_SIZE, MULTISIG_SIZE } from "@solana/spl-token";
import {
  IDS, TOKEN_PROGRAM_NAMES, isTokenProgram, isTokenAccountData, isMintData, decodeTokenAccount, decodeMint,
  decodeNonce, decodeStake, decodeLookupTable, decodeUpgradeable,
} from "./layouts.mjs";
import { bs58, u64Json, keyString } from "./util.mjs";

/** `123.45` for 12345 with 2 decimals, trailing zeros trimmed (real_number_string_trimmed). */
export function uiAmountString(amount, decimals) {
  const s = BigInt(amount).toString();
  if (decimals === 0) return s;
  const padded = s.padStart(decimals + 1, "0");
  const whole = padded.slice(0, padded.length - decimals);
  const frac = padded.slice(padded.length - decimals).replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : whole;
}

/** UiTokenAmount: uiAmount is `amount as f64 / 10^decimals as f64`, null when 10^decimals
 *  overflows a usize (decimals >= 20). */
export function tokenAmount(amount, decimals) {
  return {
    uiAmount: decimals < 20 ? Number(BigInt(amount)) / Number(10n ** BigInt(decimals)) : null,
    decimals,
    amount: BigInt(amount).toString(),
    uiAmountString: uiAmountString(amount, decimals),
  };
}

const extensionsUi = (exts) =>
  exts.map((e) => (e.state === undefined ? { extension: e.name } : { extension: e.name, state: jsonify(e.state) }));

/** BigInt fields (u64 extension values) as exact JSON numbers. */
function jsonify(v) {
  if (typeof v === "bigint") return u64Json(v);
  if (v && typeof v === "object" && !Array.isArray(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonify(x)]));
  return v;
}

/** parse_token: `mintOf(address)` gives the raw mint account (for decimals), or null. */
function parseToken(acct, mintOf) {
  const data = acct.data;
  if (isTokenAccountData(data)) {
    const t = decodeTokenAccount(acct);
    const mint = decodeMint(mintOf(t.mint));
    if (!mint) return null; // the node needs the mint's decimals; without them: base64
    if (mint.extensions.some((e) => e.uiAmountAffecting)) throw new Error(`mint ${t.mint}: interest-bearing ui amounts are not rendered by this harness`);
    const d = mint.decimals;
    const info = { mint: t.mint, owner: t.owner, tokenAmount: tokenAmount(t.amount, d) };
    if (t.delegate) info.delegate = t.delegate;
    info.state = t.state;
    info.isNative = t.isNative !== null;
    if (t.isNative !== null) info.rentExemptReserve = tokenAmount(t.isNative, d);
    if (t.delegate) info.delegatedAmount = tokenAmount(t.delegatedAmount, d);
    if (t.closeAuthority) info.closeAuthority = t.closeAuthority;
    if (t.extensions.length) info.extensions = extensionsUi(t.extensions);
    return { type: "account", info };
  }
  if (isMintData(data)) {
    const m = decodeMint(acct);
    const info = {
      mintAuthority: m.mintAuthority,
      supply: m.supply.toString(),
      decimals: m.decimals,
      isInitialized: m.isInitialized,
      freezeAuthority: m.freezeAuthority,
    };
    if (m.extensions.length) info.extensions = extensionsUi(m.extensions);
    return { type: "mint", info };
  }
  if (data.length === MULTISIG_SIZE) {
    const signers = [];
    for (let i = 0; i < 11; i++) {
      const k = data.subarray(3 + 32 * i, 35 + 32 * i);
      if (k.some((x) => x !== 0)) signers.push(keyString(k));
    }
    return { type: "multisig", info: { numRequiredSigners: data[0], numValidSigners: data[1], isInitialized: data[2] !== 0, signers } };
  }
  return null;
}

function parseStake(acct) {
  const s = decodeStake(acct);
  if (!s) return null;
  if (s.type === "uninitialized" || s.type === "rewardsPool") return { type: s.type };
  const m = s.meta;
  const meta = {
    rentExemptReserve: m.rentExemptReserve.toString(),
    authorized: { staker: m.staker, withdrawer: m.withdrawer },
    lockup: { unixTimestamp: u64JsonSigned(m.lockup.unixTimestamp), epoch: u64Json(m.lockup.epoch), custodian: m.lockup.custodian },
  };
  // UiStakeAccount.stake is an Option without skip_serializing_if: `null` when initialized.
  // warmupCooldownRate: Agave up to 3.0 sends it (the demo ledger does too); newer ones drop it.
  const stake = s.stake
    ? {
        delegation: {
          voter: s.stake.voter,
          stake: s.stake.stake.toString(),
          activationEpoch: s.stake.activationEpoch.toString(),
          deactivationEpoch: s.stake.deactivationEpoch.toString(),
          warmupCooldownRate: s.stake.warmupCooldownRate,
        },
        creditsObserved: u64Json(s.stake.creditsObserved),
      }
    : null;
  return { type: s.type, info: { meta, stake } };
}

const u64JsonSigned = (v) => (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v);

function parseLookupTable(acct) {
  const t = decodeLookupTable(acct);
  if (!t) return null;
  if (t.uninitialized) return { type: "uninitialized" };
  const info = {
    deactivationSlot: t.deactivationSlot.toString(),
    lastExtendedSlot: t.lastExtendedSlot.toString(),
    lastExtendedSlotStartIndex: t.lastExtendedSlotStartIndex,
  };
  if (t.authority) info.authority = t.authority;
  info.addresses = t.addresses;
  return { type: "lookupTable", info };
}

function parseUpgradeable(acct) {
  const u = decodeUpgradeable(acct);
  if (!u) return null;
  if (u.info?.data) return { type: u.type, info: { ...u.info, ...(u.info.slot !== undefined ? { slot: u64Json(u.info.slot) } : {}), data: [Buffer.from(u.info.data).toString("base64"), "base64"] } };
  return u;
}

function parseNonce(acct) {
  const n = decodeNonce(acct);
  if (!n) return null;
  return { type: "initialized", info: { authority: n.authority, blockhash: n.blockhash, feeCalculator: { lamportsPerSignature: n.lamportsPerSignature.toString() } } };
}

/** parse_account_data_v3: {program, parsed, space} or null. */
export function parseAccountData(acct, mintOf) {
  const owner = acct.owner;
  let program;
  let parsed = null;
  if (isTokenProgram(owner)) {
    program = TOKEN_PROGRAM_NAMES[owner];
    parsed = parseToken(acct, mintOf);
  } else if (owner === IDS.system) {
    program = "nonce";
    parsed = parseNonce(acct);
  } else if (owner === IDS.stake) {
    program = "stake";
    parsed = parseStake(acct);
  } else if (owner === IDS.alt) {
    program = "address-lookup-table";
    parsed = parseLookupTable(acct);
  } else if (owner === IDS.upgradeableLoader) {
    program = "bpf-upgradeable-loader";
    parsed = parseUpgradeable(acct);
  }
  if (!parsed) return null;
  return { program, parsed, space: acct.data.length };
}

/**
 * The UiAccount of a raw account as a node answers it, or null for an account that does not
 * exist (absent or 0 lamports). `mintOf(address)`: raw mint account for token decimals.
 */
export function uiAccount(acct, encoding, mintOf) {
  if (!acct || acct.lamports === 0n) return null;
  let data;
  const enc = encoding ?? "binary";
  if (enc === "jsonParsed") {
    const parsed = parseAccountData(acct, mintOf);
    data = parsed ?? [acct.data.toString("base64"), "base64"];
  } else if (enc === "base64") {
    data = [acct.data.toString("base64"), "base64"];
  } else if (enc === "base58" || enc === "binary") {
    const text = acct.data.length <= 128 ? bs58.encode(acct.data) : "error: data too large for bs58 encoding";
    data = enc === "binary" ? text : [text, "base58"];
  } else {
    throw Object.assign(new Error(`unsupported encoding ${enc}`), { rpcCode: -32602 });
  }
  return {
    lamports: u64Json(acct.lamports),
    data,
    owner: acct.owner,
    executable: acct.executable,
    rentEpoch: u64Json(acct.rentEpoch),
    space: acct.data.length,
  };
}

export { ACCOUNT_SIZE, MINT_SIZE };
