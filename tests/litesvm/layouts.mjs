// Byte layouts of the accounts the harness handles, both ways:
//   decode*: raw account bytes -> plain objects (the oracle and the jsonParsed renderer use them)
//   encodeFromUi: a node's jsonParsed UiAccount -> raw bytes (Part A recreates demo accounts with it)
// Token and mint bases use @solana/spl-token's AccountLayout / MintLayout; Token-2022 extensions
// are TLV entries after the base (account type byte at offset 165); nonce, stake, lookup-table and
// upgradeable-loader states are bincode, written out here field by field.

import { PublicKey, SystemProgram, StakeProgram, AddressLookupTableProgram, NONCE_ACCOUNT_LENGTH } from "@solana/web3.js";
import { AccountLayout, MintLayout, ACCOUNT_SIZE, MINT_SIZE, MULTISIG_SIZE, TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID } from "@solana/spl-token";
import { keyString } from "./util.mjs";

export const IDS = {
  system: SystemProgram.programId.toBase58(),
  stake: StakeProgram.programId.toBase58(),
  token: TOKEN_PROGRAM_ID.toBase58(),
  token2022: TOKEN_2022_PROGRAM_ID.toBase58(),
  alt: AddressLookupTableProgram.programId.toBase58(),
  upgradeableLoader: "BPFLoaderUpgradeab1e11111111111111111111111",
  sysvar: "Sysvar1111111111111111111111111111111111111",
  vote: "Vote111111111111111111111111111111111111111",
  config: "Config1111111111111111111111111111111111111",
};

export const TOKEN_PROGRAM_NAMES = { [IDS.token]: "spl-token", [IDS.token2022]: "spl-token-2022" };
export const isTokenProgram = (owner) => owner === IDS.token || owner === IDS.token2022;

const ZERO_KEY = new Uint8Array(32);
const isZero = (b) => b.every((x) => x === 0);
const optKey = (b) => (isZero(b) ? null : keyString(b));
const keyBytes = (s) => (s === null || s === undefined ? ZERO_KEY : new PublicKey(s).toBytes());
const u64 = (buf, off) => buf.readBigUInt64LE(off);

// ---------------------------------------------------------------------------------------------
// SPL Token / Token-2022

const ACCOUNT_TYPE_MINT = 1;
const ACCOUNT_TYPE_ACCOUNT = 2;
const STATES = ["uninitialized", "initialized", "frozen"];

/** Token-2022 extensions the harness reads and writes: type -> name, length, Agave's UI state
 *  (account-decoder's UiExtension, tagged by `extension`, content `state`), and its encoder. */
const pod = {
  bool: (b, o) => b[o] !== 0,
  key: (b, o) => optKey(b.subarray(o, o + 32)),
  u64: (b, o) => u64(b, o),
};
const w = {
  key: (out, o, v) => out.set(keyBytes(v), o),
  u64: (out, o, v) => out.writeBigUInt64LE(BigInt(v), o),
  u16: (out, o, v) => out.writeUInt16LE(Number(v), o),
  bool: (out, o, v) => (out[o] = v ? 1 : 0),
};
const transferFee = (b, o) => ({ epoch: u64(b, o), maximumFee: u64(b, o + 8), transferFeeBasisPoints: b.readUInt16LE(o + 16) });
const writeTransferFee = (out, o, f) => { w.u64(out, o, f.epoch); w.u64(out, o + 8, f.maximumFee); w.u16(out, o + 16, f.transferFeeBasisPoints); };

export const EXTENSIONS = {
  1: { name: "transferFeeConfig", len: 108,
    decode: (b) => ({ transferFeeConfigAuthority: pod.key(b, 0), withdrawWithheldAuthority: pod.key(b, 32), withheldAmount: u64(b, 64), olderTransferFee: transferFee(b, 72), newerTransferFee: transferFee(b, 90) }),
    encode: (s, b) => { w.key(b, 0, s.transferFeeConfigAuthority); w.key(b, 32, s.withdrawWithheldAuthority); w.u64(b, 64, s.withheldAmount); writeTransferFee(b, 72, s.olderTransferFee); writeTransferFee(b, 90, s.newerTransferFee); } },
  2: { name: "transferFeeAmount", len: 8, decode: (b) => ({ withheldAmount: u64(b, 0) }), encode: (s, b) => w.u64(b, 0, s.withheldAmount) },
  3: { name: "mintCloseAuthority", len: 32, decode: (b) => ({ closeAuthority: pod.key(b, 0) }), encode: (s, b) => w.key(b, 0, s.closeAuthority) },
  6: { name: "defaultAccountState", len: 1, decode: (b) => ({ accountState: STATES[b[0]] ?? "uninitialized" }), encode: (s, b) => (b[0] = STATES.indexOf(s.accountState)) },
  7: { name: "immutableOwner", len: 0 },
  8: { name: "memoTransfer", len: 1, decode: (b) => ({ requireIncomingTransferMemos: pod.bool(b, 0) }), encode: (s, b) => w.bool(b, 0, s.requireIncomingTransferMemos) },
  9: { name: "nonTransferable", len: 0 },
  10: { name: "interestBearingConfig", len: 52, uiAmountAffecting: true,
    decode: (b) => ({ rateAuthority: pod.key(b, 0), initializationTimestamp: b.readBigInt64LE(32), preUpdateAverageRate: b.readInt16LE(40), lastUpdateTimestamp: b.readBigInt64LE(42), currentRate: b.readInt16LE(50) }),
    encode: (s, b) => { w.key(b, 0, s.rateAuthority); b.writeBigInt64LE(BigInt(s.initializationTimestamp), 32); b.writeInt16LE(s.preUpdateAverageRate, 40); b.writeBigInt64LE(BigInt(s.lastUpdateTimestamp), 42); b.writeInt16LE(s.currentRate, 50); } },
  11: { name: "cpiGuard", len: 1, decode: (b) => ({ lockCpi: pod.bool(b, 0) }), encode: (s, b) => w.bool(b, 0, s.lockCpi) },
  12: { name: "permanentDelegate", len: 32, decode: (b) => ({ delegate: pod.key(b, 0) }), encode: (s, b) => w.key(b, 0, s.delegate) },
  13: { name: "nonTransferableAccount", len: 0 },
  14: { name: "transferHook", len: 64, decode: (b) => ({ authority: pod.key(b, 0), programId: pod.key(b, 32) }), encode: (s, b) => { w.key(b, 0, s.authority); w.key(b, 32, s.programId); } },
  15: { name: "transferHookAccount", len: 1, decode: (b) => ({ transferring: pod.bool(b, 0) }), encode: (s, b) => w.bool(b, 0, s.transferring) },
  18: { name: "metadataPointer", len: 64, decode: (b) => ({ authority: pod.key(b, 0), metadataAddress: pod.key(b, 32) }), encode: (s, b) => { w.key(b, 0, s.authority); w.key(b, 32, s.metadataAddress); } },
  20: { name: "groupPointer", len: 64, decode: (b) => ({ authority: pod.key(b, 0), groupAddress: pod.key(b, 32) }), encode: (s, b) => { w.key(b, 0, s.authority); w.key(b, 32, s.groupAddress); } },
  22: { name: "groupMemberPointer", len: 64, decode: (b) => ({ authority: pod.key(b, 0), memberAddress: pod.key(b, 32) }), encode: (s, b) => { w.key(b, 0, s.authority); w.key(b, 32, s.memberAddress); } },
  26: { name: "pausableConfig", len: 33, decode: (b) => ({ authority: pod.key(b, 0), paused: pod.bool(b, 32) }), encode: (s, b) => { w.key(b, 0, s.authority); w.bool(b, 32, s.paused); } },
  27: { name: "pausableAccount", len: 0 },
};
const EXTENSION_BY_NAME = Object.fromEntries(Object.entries(EXTENSIONS).map(([t, e]) => [e.name, { ...e, type: Number(t) }]));

/** TLV entries after the base, as spl-token-2022's get_tlv_data_info walks them. */
export function parseTlv(data, baseLen) {
  if (data.length <= baseLen) return [];
  // Mints are padded to the account length: the account type byte sits at 165 for both.
  const tlv = data.subarray(ACCOUNT_SIZE + 1);
  const out = [];
  let i = 0;
  while (i < tlv.length) {
    if (tlv.length < i + 2) break; // room for a type only: the end (a realloc may use it)
    const type = tlv.readUInt16LE(i);
    if (type === 0) break; // Uninitialized: the end
    if (tlv.length < i + 4) throw new Error("Token-2022 TLV: truncated length");
    const len = tlv.readUInt16LE(i + 2);
    if (tlv.length < i + 4 + len) throw new Error("Token-2022 TLV: truncated value");
    out.push({ type, value: tlv.subarray(i + 4, i + 4 + len) });
    i += 4 + len;
  }
  return out;
}

/** The Token-2022 extensions of raw data as [{type, name, state}] (state: UI shape). Unknown
 *  types throw: the harness refuses to guess a shape. */
export function decodeExtensions(data, baseLen) {
  return parseTlv(data, baseLen).map(({ type, value }) => {
    const e = EXTENSIONS[type];
    if (!e) throw new Error(`Token-2022 extension type ${type} is not supported by this harness`);
    return { type, name: e.name, state: e.decode ? e.decode(value) : undefined, uiAmountAffecting: !!e.uiAmountAffecting };
  });
}

/** Whether raw data is an initialized token account (spl-token-2022's Account::valid_account_data
 *  plus the initialized check of unpack). */
export function isTokenAccountData(data) {
  if (data.length < ACCOUNT_SIZE) return false;
  if (data.length !== ACCOUNT_SIZE && (data.length === MULTISIG_SIZE || data[ACCOUNT_SIZE] !== ACCOUNT_TYPE_ACCOUNT)) return false;
  return data[108] !== 0; // state: 0 uninitialized
}

export function isMintData(data) {
  if (data.length < MINT_SIZE) return false;
  if (data.length !== MINT_SIZE) {
    if (data.length <= ACCOUNT_SIZE || data.length === MULTISIG_SIZE || data[ACCOUNT_SIZE] !== ACCOUNT_TYPE_MINT) return false;
  }
  return data[45] !== 0; // isInitialized
}

/** A token account's fields, or null when the data is not an initialized token account. */
export function decodeTokenAccount(acct) {
  if (!acct || !isTokenProgram(acct.owner) || !isTokenAccountData(acct.data)) return null;
  const a = AccountLayout.decode(acct.data.subarray(0, ACCOUNT_SIZE));
  return {
    program: acct.owner,
    mint: a.mint.toBase58(),
    owner: a.owner.toBase58(),
    amount: a.amount,
    delegate: a.delegateOption ? a.delegate.toBase58() : null,
    state: STATES[a.state],
    isNative: a.isNativeOption ? a.isNative : null,
    delegatedAmount: a.delegatedAmount,
    closeAuthority: a.closeAuthorityOption ? a.closeAuthority.toBase58() : null,
    extensions: acct.owner === IDS.token2022 ? decodeExtensions(acct.data, ACCOUNT_SIZE) : [],
  };
}

export function decodeMint(acct) {
  if (!acct || !isTokenProgram(acct.owner) || !isMintData(acct.data)) return null;
  const m = MintLayout.decode(acct.data.subarray(0, MINT_SIZE));
  return {
    program: acct.owner,
    mintAuthority: m.mintAuthorityOption ? m.mintAuthority.toBase58() : null,
    supply: m.supply,
    decimals: m.decimals,
    isInitialized: m.isInitialized,
    freezeAuthority: m.freezeAuthorityOption ? m.freezeAuthority.toBase58() : null,
    extensions: acct.owner === IDS.token2022 ? decodeExtensions(acct.data, MINT_SIZE) : [],
  };
}

function encodeTlv(extensions, wantKind) {
  const parts = [];
  for (const x of extensions ?? []) {
    const e = EXTENSION_BY_NAME[x.extension];
    if (!e) throw new Error(`cannot encode Token-2022 ${wantKind} extension ${JSON.stringify(x.extension)}: unknown to this harness`);
    const entry = Buffer.alloc(4 + e.len);
    entry.writeUInt16LE(e.type, 0);
    entry.writeUInt16LE(e.len, 2);
    if (e.len) e.encode(x.state, entry.subarray(4));
    parts.push(entry);
  }
  return Buffer.concat(parts);
}

function withTlv(base, accountType, extensions, space, kind) {
  const tlv = encodeTlv(extensions, kind);
  let out = base;
  if (tlv.length || (space ?? base.length) > base.length) {
    const head = Buffer.alloc(ACCOUNT_SIZE + 1);
    base.copy(head, 0);
    head[ACCOUNT_SIZE] = accountType;
    out = Buffer.concat([head, tlv]);
  }
  if (space !== undefined && out.length !== space) {
    if (out.length > space) throw new Error(`${kind}: encoded ${out.length} bytes, the node says space ${space}`);
    out = Buffer.concat([out, Buffer.alloc(space - out.length)]);
  }
  return out;
}

export function encodeTokenAccount(info, space) {
  const b = Buffer.alloc(ACCOUNT_SIZE);
  AccountLayout.encode(
    {
      mint: new PublicKey(info.mint),
      owner: new PublicKey(info.owner),
      amount: BigInt(info.tokenAmount.amount),
      delegateOption: info.delegate ? 1 : 0,
      delegate: info.delegate ? new PublicKey(info.delegate) : PublicKey.default,
      state: STATES.indexOf(info.state),
      isNativeOption: info.isNative ? 1 : 0,
      isNative: info.isNative ? BigInt(info.rentExemptReserve.amount) : 0n,
      delegatedAmount: info.delegatedAmount ? BigInt(info.delegatedAmount.amount) : 0n,
      closeAuthorityOption: info.closeAuthority ? 1 : 0,
      closeAuthority: info.closeAuthority ? new PublicKey(info.closeAuthority) : PublicKey.default,
    },
    b,
  );
  if (STATES.indexOf(info.state) < 0) throw new Error(`token account state ${info.state}`);
  return withTlv(b, ACCOUNT_TYPE_ACCOUNT, info.extensions, space, "token account");
}

export function encodeMint(info, space) {
  const b = Buffer.alloc(MINT_SIZE);
  MintLayout.encode(
    {
      mintAuthorityOption: info.mintAuthority ? 1 : 0,
      mintAuthority: info.mintAuthority ? new PublicKey(info.mintAuthority) : PublicKey.default,
      supply: BigInt(info.supply),
      decimals: info.decimals,
      isInitialized: info.isInitialized,
      freezeAuthorityOption: info.freezeAuthority ? 1 : 0,
      freezeAuthority: info.freezeAuthority ? new PublicKey(info.freezeAuthority) : PublicKey.default,
    },
    b,
  );
  return withTlv(b, ACCOUNT_TYPE_MINT, info.extensions, space, "mint");
}

// ---------------------------------------------------------------------------------------------
// Nonce: Versions (u32: 0 legacy, 1 current) · State (u32: 0 uninitialized, 1 initialized) ·
// authority · durable nonce · fee calculator (lamportsPerSignature u64) = 80 bytes.

export function decodeNonce(acct) {
  if (!acct || acct.owner !== IDS.system || acct.data.length < NONCE_ACCOUNT_LENGTH) return null;
  const d = acct.data;
  const version = d.readUInt32LE(0);
  const state = d.readUInt32LE(4);
  if (version > 1 || state !== 1) return null;
  return { version, authority: keyString(d.subarray(8, 40)), blockhash: keyString(d.subarray(40, 72)), lamportsPerSignature: u64(d, 72) };
}

export function encodeNonce(info, space = NONCE_ACCOUNT_LENGTH) {
  const b = Buffer.alloc(space);
  b.writeUInt32LE(1, 0); // Versions::Current
  b.writeUInt32LE(1, 4); // State::Initialized
  b.set(keyBytes(info.authority), 8);
  b.set(keyBytes(info.blockhash), 40);
  b.writeBigUInt64LE(BigInt(info.feeCalculator.lamportsPerSignature), 72);
  return b;
}

// ---------------------------------------------------------------------------------------------
// Stake: StakeStateV2 (u32 tag: 0 uninitialized, 1 initialized, 2 stake, 3 rewards pool) ·
// Meta{rentExemptReserve u64, authorized{staker, withdrawer}, lockup{unixTimestamp i64, epoch u64,
// custodian}} · Stake{delegation{voter, stake u64, activationEpoch u64, deactivationEpoch u64,
// warmupCooldownRate f64}, creditsObserved u64} · stakeFlags u8; 200 bytes.

export const STAKE_LEN = 200;
const STAKE_TAGS = ["uninitialized", "initialized", "delegated", "rewardsPool"];

export function decodeStake(acct) {
  if (!acct || acct.owner !== IDS.stake || acct.data.length < 4) return null;
  const d = acct.data;
  const tag = d.readUInt32LE(0);
  const type = STAKE_TAGS[tag];
  if (!type) return null;
  const out = { type };
  if (tag === 1 || tag === 2) {
    if (d.length < 124) return null;
    out.meta = {
      rentExemptReserve: u64(d, 4),
      staker: keyString(d.subarray(12, 44)),
      withdrawer: keyString(d.subarray(44, 76)),
      lockup: { unixTimestamp: d.readBigInt64LE(76), epoch: u64(d, 84), custodian: keyString(d.subarray(92, 124)) },
    };
  }
  if (tag === 2) {
    if (d.length < 197) return null;
    out.stake = {
      voter: keyString(d.subarray(124, 156)),
      stake: u64(d, 156),
      activationEpoch: u64(d, 164),
      deactivationEpoch: u64(d, 172),
      warmupCooldownRate: d.readDoubleLE(180),
      creditsObserved: u64(d, 188),
    };
    out.stakeFlags = d[196];
  }
  return out;
}

export function encodeStake(parsed, space = STAKE_LEN) {
  const b = Buffer.alloc(space);
  const tag = STAKE_TAGS.indexOf(parsed.type);
  if (tag < 0) throw new Error(`stake account type ${parsed.type}`);
  b.writeUInt32LE(tag, 0);
  const info = parsed.info;
  if (tag === 1 || tag === 2) {
    const m = info.meta;
    b.writeBigUInt64LE(BigInt(m.rentExemptReserve), 4);
    b.set(keyBytes(m.authorized.staker), 12);
    b.set(keyBytes(m.authorized.withdrawer), 44);
    b.writeBigInt64LE(BigInt(m.lockup.unixTimestamp), 76);
    b.writeBigUInt64LE(BigInt(m.lockup.epoch), 84);
    b.set(keyBytes(m.lockup.custodian), 92);
  }
  if (tag === 2) {
    const s = info.stake;
    b.set(keyBytes(s.delegation.voter), 124);
    b.writeBigUInt64LE(BigInt(s.delegation.stake), 156);
    b.writeBigUInt64LE(BigInt(s.delegation.activationEpoch), 164);
    b.writeBigUInt64LE(BigInt(s.delegation.deactivationEpoch), 172);
    b.writeDoubleLE(s.delegation.warmupCooldownRate ?? 0.25, 180);
    b.writeBigUInt64LE(BigInt(s.creditsObserved), 188);
    b[196] = 0; // stakeFlags: the node does not show them
  }
  return b;
}

// ---------------------------------------------------------------------------------------------
// Address lookup table: ProgramState (u32: 0 uninitialized, 1 lookup table) · deactivationSlot u64
// · lastExtendedSlot u64 · lastExtendedSlotStartIndex u8 · authority Option<Pubkey> · u16 padding;
// the meta is 56 bytes, then the addresses.

export const LOOKUP_TABLE_META_SIZE = 56;

/** {uninitialized: true} | {deactivationSlot, lastExtendedSlot, lastExtendedSlotStartIndex,
 *  authority, addresses} | null (not parsable). */
export function decodeLookupTable(acct) {
  if (!acct || acct.owner !== IDS.alt) return null;
  const d = acct.data;
  if (d.length < LOOKUP_TABLE_META_SIZE) return null;
  const tag = d.readUInt32LE(0);
  if (tag === 0) return { uninitialized: true };
  if (tag !== 1) return null;
  const hasAuthority = d[4 + 8 + 8 + 1];
  if (hasAuthority > 1) return null;
  const raw = d.subarray(LOOKUP_TABLE_META_SIZE);
  if (raw.length % 32 !== 0) return null;
  const addresses = [];
  for (let i = 0; i < raw.length; i += 32) addresses.push(keyString(raw.subarray(i, i + 32)));
  return {
    deactivationSlot: u64(d, 4),
    lastExtendedSlot: u64(d, 12),
    lastExtendedSlotStartIndex: d[20],
    authority: hasAuthority ? keyString(d.subarray(22, 54)) : null,
    addresses,
  };
}

export function encodeLookupTable(parsed, space) {
  if (parsed.type === "uninitialized") return Buffer.alloc(space ?? LOOKUP_TABLE_META_SIZE);
  const info = parsed.info;
  const b = Buffer.alloc(LOOKUP_TABLE_META_SIZE + 32 * info.addresses.length);
  b.writeUInt32LE(1, 0);
  b.writeBigUInt64LE(BigInt(info.deactivationSlot), 4);
  b.writeBigUInt64LE(BigInt(info.lastExtendedSlot), 12);
  b[20] = info.lastExtendedSlotStartIndex;
  if (info.authority) {
    b[21] = 1;
    b.set(keyBytes(info.authority), 22);
  }
  info.addresses.forEach((a, i) => b.set(keyBytes(a), LOOKUP_TABLE_META_SIZE + 32 * i));
  return b;
}

// ---------------------------------------------------------------------------------------------
// Upgradeable loader: u32 tag (0 uninitialized, 1 buffer{authority Option}, 2 program{programData},
// 3 programData{slot u64, authority Option}) then the program bytes.

export function decodeUpgradeable(acct) {
  const d = acct.data;
  if (d.length < 4) return null;
  const tag = d.readUInt32LE(0);
  const opt = (o) => (d.length < o + 1 ? undefined : d[o] === 0 ? null : d[o] === 1 && d.length >= o + 33 ? keyString(d.subarray(o + 1, o + 33)) : undefined);
  if (tag === 0) return { type: "uninitialized" };
  if (tag === 1) {
    const authority = opt(4);
    if (authority === undefined) return null;
    return { type: "buffer", info: { authority, data: d.subarray(authority ? 37 : 5) } };
  }
  if (tag === 2) return d.length >= 36 ? { type: "program", info: { programData: keyString(d.subarray(4, 36)) } } : null;
  if (tag === 3) {
    if (d.length < 13) return null;
    const authority = opt(12);
    if (authority === undefined) return null;
    return { type: "programData", info: { slot: u64(d, 4), authority, data: d.subarray(authority ? 45 : 13) } };
  }
  return null;
}

function encodeUpgradeable(parsed, space) {
  const t = parsed.type;
  const info = parsed.info ?? {};
  const bytes = (ui) => Buffer.from(ui[0], "base64");
  let b;
  if (t === "uninitialized") b = Buffer.alloc(4);
  else if (t === "program") { b = Buffer.alloc(36); b.writeUInt32LE(2, 0); b.set(keyBytes(info.programData), 4); }
  else if (t === "buffer") {
    const head = Buffer.alloc(info.authority ? 37 : 5);
    head.writeUInt32LE(1, 0);
    if (info.authority) { head[4] = 1; head.set(keyBytes(info.authority), 5); }
    b = Buffer.concat([head, bytes(info.data)]);
  } else if (t === "programData") {
    const head = Buffer.alloc(info.authority ? 45 : 13);
    head.writeUInt32LE(3, 0);
    head.writeBigUInt64LE(BigInt(info.slot), 4);
    if (info.authority) { head[12] = 1; head.set(keyBytes(info.authority), 13); }
    b = Buffer.concat([head, bytes(info.data)]);
  } else throw new Error(`upgradeable loader account type ${t}`);
  if (space !== undefined && b.length < space) b = Buffer.concat([b, Buffer.alloc(space - b.length)]);
  return b;
}

// ---------------------------------------------------------------------------------------------

/** The raw bytes of a node's UiAccount (jsonParsed or base64/base58 data). Throws on a parsed
 *  program or type it does not know: Part A must recreate real layouts, never guess. */
export function encodeFromUi(ui) {
  const data = ui.data;
  if (Array.isArray(data)) {
    const [text, enc] = data;
    if (enc === "base64") return Buffer.from(text, "base64");
    throw new Error(`account data encoding ${enc} is not handled`);
  }
  if (typeof data === "string") throw new Error("legacy base58 account data is not handled");
  const { program, parsed, space } = data;
  const type = parsed.type;
  switch (program) {
    case "spl-token":
    case "spl-token-2022":
      if (type === "account") return encodeTokenAccount(parsed.info, space);
      if (type === "mint") return encodeMint(parsed.info, space);
      throw new Error(`${program} account type ${type} is not handled`);
    case "nonce":
      if (type === "initialized") return encodeNonce(parsed.info, space);
      throw new Error(`nonce account type ${type} is not handled`);
    case "stake":
      return encodeStake(parsed, space);
    case "address-lookup-table":
      return encodeLookupTable(parsed, space);
    case "bpf-upgradeable-loader":
      return encodeUpgradeable(parsed, space);
    default:
      throw new Error(`jsonParsed program ${program} is not handled`);
  }
}
