// A Solana JSON-RPC endpoint over a LiteSVM instance the test also holds: an http server on
// 127.0.0.1 answering like a node (JSON-RPC 2.0, single and batch requests, -32601 for an unknown
// method). Accounts are rendered by ui.mjs in Agave's shapes; simulateTransaction runs LiteSVM's
// simulation and never changes its state.
//
//   const shim = await startShim(svm);   shim.url, shim.setSvm(other), shim.calls, await shim.close()
//
// History: LiteSVM keeps none a node could list, so transactions a harness executes through
// `executeRecorded(svm, tx)` are remembered on the instance (`svm.__history`) and served by
// getSignaturesForAddress (newest first; before / until / limit) and getTransaction (jsonParsed as
// a node renders it: System transfers parsed, other instructions partially decoded, balances from
// the real execution). A harness may also give an instance `svm.__simulate = (tx) => answer | null`:
// an answer {post: Map(address -> raw account), logs, unitsConsumed} is served as a successful
// simulation in place of LiteSVM's (a program LiteSVM cannot run here, e.g. one that CPIs); an
// answer {rpcError: {code, message}} is served as that JSON-RPC error (a simulation not to run).

import http from "node:http";
import { VersionedTransaction } from "@solana/web3.js";
import { FailedTransactionMetadata } from "litesvm";
import { randomBytes } from "node:crypto";
import { uiAccount } from "./ui.mjs";
import { IDS, decodeTokenAccount, decodeNonce } from "./layouts.mjs";
import { bs58, parseJson, stringify, rawAccount, fromInner, keyString, u64Json, sendTransaction } from "./util.mjs";

export const API_VERSION = "2.2.0";
const BODY_MAX = 8 << 20;

// LiteSVM's error enums are TypeScript const enums (not present at run time): their names, in order.
const TX_ERRORS = [
  "AccountInUse", "AccountLoadedTwice", "AccountNotFound", "ProgramAccountNotFound", "InsufficientFundsForFee",
  "InvalidAccountForFee", "AlreadyProcessed", "BlockhashNotFound", "CallChainTooDeep", "MissingSignatureForFee",
  "InvalidAccountIndex", "SignatureFailure", "InvalidProgramForExecution", "SanitizeFailure", "ClusterMaintenance",
  "AccountBorrowOutstanding", "WouldExceedMaxBlockCostLimit", "UnsupportedVersion", "InvalidWritableAccount",
  "WouldExceedMaxAccountCostLimit", "WouldExceedAccountDataBlockLimit", "TooManyAccountLocks",
  "AddressLookupTableNotFound", "InvalidAddressLookupTableOwner", "InvalidAddressLookupTableData",
  "InvalidAddressLookupTableIndex", "InvalidRentPayingAccount", "WouldExceedMaxVoteCostLimit",
  "WouldExceedAccountDataTotalLimit", "MaxLoadedAccountsDataSizeExceeded", "ResanitizationNeeded",
  "InvalidLoadedAccountsDataSizeLimit", "UnbalancedTransaction", "ProgramCacheHitMaxLimit", "CommitCancelled",
];
const IX_ERRORS = [
  "GenericError", "InvalidArgument", "InvalidInstructionData", "InvalidAccountData", "AccountDataTooSmall",
  "InsufficientFunds", "IncorrectProgramId", "MissingRequiredSignature", "AccountAlreadyInitialized",
  "UninitializedAccount", "UnbalancedInstruction", "ModifiedProgramId", "ExternalAccountLamportSpend",
  "ExternalAccountDataModified", "ReadonlyLamportChange", "ReadonlyDataModified", "DuplicateAccountIndex",
  "ExecutableModified", "RentEpochModified", "NotEnoughAccountKeys", "AccountDataSizeChanged",
  "AccountNotExecutable", "AccountBorrowFailed", "AccountBorrowOutstanding", "DuplicateAccountOutOfSync",
  "InvalidError", "ExecutableDataModified", "ExecutableLamportChange", "ExecutableAccountNotRentExempt",
  "UnsupportedProgramId", "CallDepth", "MissingAccount", "ReentrancyNotAllowed", "MaxSeedLengthExceeded",
  "InvalidSeeds", "InvalidRealloc", "ComputationalBudgetExceeded", "PrivilegeEscalation",
  "ProgramEnvironmentSetupFailure", "ProgramFailedToComplete", "ProgramFailedToCompile", "Immutable",
  "IncorrectAuthority", "AccountNotRentExempt", "InvalidAccountOwner", "ArithmeticOverflow", "UnsupportedSysvar",
  "IllegalOwner", "MaxAccountsDataAllocationsExceeded", "MaxAccountsExceeded", "MaxInstructionTraceLengthExceeded",
  "BuiltinProgramsMustConsumeComputeUnits", "BorshIoError",
];

/** A LiteSVM transaction error as a node serializes TransactionError. */
export function errorJson(err) {
  if (typeof err === "number") return TX_ERRORS[err] ?? `TransactionError${err}`;
  // The binding's error classes are not exported by litesvm's index: tell them by name.
  switch (err?.constructor?.name) {
    case "TransactionErrorInstructionError": {
      const e = err.err();
      let ix;
      if (typeof e === "number") ix = IX_ERRORS[e] ?? `InstructionError${e}`;
      else if (e?.constructor?.name === "InstructionErrorCustom") ix = { Custom: e.code };
      else if (e?.constructor?.name?.startsWith("InstructionErrorBorsh")) ix = { BorshIoError: e.msg };
      else ix = String(e);
      return { InstructionError: [err.index, ix] };
    }
    case "TransactionErrorDuplicateInstruction":
      return { DuplicateInstruction: err.index };
    case "TransactionErrorInsufficientFundsForRent":
      return { InsufficientFundsForRent: { account_index: err.accountIndex } };
    case "TransactionErrorProgramExecutionTemporarilyRestricted":
      return { ProgramExecutionTemporarilyRestricted: { account_index: err.accountIndex } };
    default:
      return String(err);
  }
}

class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}
const invalidParams = (m) => new RpcError(-32602, m);

function addressParam(v, what = "address") {
  if (typeof v !== "string") throw invalidParams(`Invalid param: ${what} must be a base58 string`);
  try {
    const b = bs58.decode(v);
    if (b.length !== 32) throw new Error();
    return v;
  } catch {
    throw invalidParams(`Invalid param: Invalid`);
  }
}

export class Shim {
  constructor(svm) {
    this.svm = svm;
    this.calls = [];
    this.server = null;
  }

  setSvm(svm) {
    this.svm = svm;
  }

  slot() {
    return Number(this.svm.getClock().slot);
  }

  context() {
    return { slot: this.slot(), apiVersion: API_VERSION };
  }

  /** Raw account in `overrides` (a simulation's post-state) or the current state. */
  raw(address, overrides) {
    if (overrides?.has(address)) return overrides.get(address);
    return rawAccount(this.svm, address);
  }

  ui(address, encoding, overrides) {
    const mintOf = (m) => this.raw(m, overrides);
    return uiAccount(this.raw(address, overrides), encoding, mintOf);
  }

  known() {
    return [...(this.svm.__known ?? [])].sort();
  }

  dispatch(method, params) {
    params ??= [];
    if (!Array.isArray(params)) throw invalidParams("params must be an array");
    switch (method) {
      case "getHealth":
        return "ok";
      case "getSlot":
      case "getBlockHeight":
        return this.slot();
      case "getVersion":
        return { "solana-core": API_VERSION, "feature-set": 0 };
      case "getLatestBlockhash":
        return { context: this.context(), value: { blockhash: this.svm.latestBlockhash(), lastValidBlockHeight: this.slot() + 150 } };
      case "getMinimumBalanceForRentExemption":
        return u64Json(this.svm.minimumBalanceForRentExemption(BigInt(params[0] ?? 0)));
      case "getBalance": {
        const a = this.raw(addressParam(params[0]));
        return { context: this.context(), value: u64Json(a ? a.lamports : 0n) };
      }
      case "getAccountInfo": {
        const address = addressParam(params[0]);
        return { context: this.context(), value: this.ui(address, params[1]?.encoding) };
      }
      case "getMultipleAccounts": {
        const list = params[0];
        if (!Array.isArray(list)) throw invalidParams("Invalid params: expected an array of addresses");
        if (list.length > 100) throw invalidParams("Too many inputs provided; max 100");
        const enc = params[1]?.encoding;
        return { context: this.context(), value: list.map((a) => this.ui(addressParam(a), enc)) };
      }
      case "getSignaturesForAddress":
        return signaturesFor(this.svm, addressParam(params[0]), params[1] ?? {});
      case "getTransaction": {
        if (typeof params[0] !== "string") throw invalidParams("Invalid param: signature must be a base58 string");
        const h = (this.svm.__history ?? []).find((e) => e.signature === params[0]);
        return h ? h.rendered : null;
      }
      case "getTokenAccountsByOwner": {
        const owner = addressParam(params[0]);
        const filter = params[1] ?? {};
        if (!filter.mint && !filter.programId) throw invalidParams("Invalid params: expected mint or programId");
        const enc = params[2]?.encoding;
        const value = [];
        for (const address of this.known()) {
          const raw = this.raw(address);
          const t = raw && raw.lamports > 0n ? decodeTokenAccount(raw) : null;
          if (!t || t.owner !== owner) continue;
          if (filter.mint && t.mint !== filter.mint) continue;
          if (filter.programId && raw.owner !== filter.programId) continue;
          value.push({ pubkey: address, account: this.ui(address, enc) });
        }
        return { context: this.context(), value };
      }
      case "getProgramAccounts": {
        const program = addressParam(params[0]);
        const config = params[1] ?? {};
        const value = [];
        for (const address of this.known()) {
          const raw = this.raw(address);
          if (!raw || raw.lamports === 0n || raw.owner !== program) continue;
          if (!(config.filters ?? []).every((f) => matches(raw.data, f))) continue;
          value.push({ pubkey: address, account: this.ui(address, config.encoding) });
        }
        return config.withContext ? { context: this.context(), value } : value;
      }
      case "simulateTransaction":
        return this.simulate(params);
      default:
        throw new RpcError(-32601, "Method not found");
    }
  }

  simulate(params) {
    const [encoded, config = {}] = params;
    if (typeof encoded !== "string") throw invalidParams("Invalid params: expected an encoded transaction");
    if (config.sigVerify && config.replaceRecentBlockhash) throw invalidParams("sigVerify may not be used with replaceRecentBlockhash");
    const encoding = config.encoding ?? "base58";
    let bytes;
    if (encoding === "base64") bytes = Buffer.from(encoded, "base64");
    else if (encoding === "base58") bytes = Buffer.from(bs58.decode(encoded));
    else throw invalidParams(`unsupported encoding: ${encoding}. Supported encodings: base58, base64`);
    let tx;
    try {
      tx = VersionedTransaction.deserialize(bytes);
    } catch (e) {
      throw invalidParams(`failed to deserialize solana_transaction::versioned::VersionedTransaction: ${e.message}`);
    }
    let replacementBlockhash;
    if (config.replaceRecentBlockhash) {
      replacementBlockhash = { blockhash: this.svm.latestBlockhash(), lastValidBlockHeight: this.slot() + 150 };
      // A node replaces the blockhash of every transaction. LiteSVM derives the nonce an
      // advanceNonceAccount stores from the message's blockhash (a node: from the bank's), so a
      // durable-nonce transaction is simulated with its own blockhash (LiteSVM accepts it as a
      // node would): its simulated post-state is then what executing it in LiteSVM stores.
      if (!this.isDurableNonce(tx)) tx.message.recentBlockhash = replacementBlockhash.blockhash;
    }
    const override = this.svm.__simulate?.(tx) ?? null;
    if (override?.rpcError) throw new RpcError(override.rpcError.code, override.rpcError.message);
    const { failed, err, logs, units, returnData, post } = override ? overridden(override) : this.simulateInSvm(tx, !!config.sigVerify);
    let accounts = null;
    if (config.accounts) {
      const addresses = config.accounts.addresses ?? [];
      if (!Array.isArray(addresses)) throw invalidParams("Invalid params: accounts.addresses");
      const enc = config.accounts.encoding ?? "base64";
      if (enc === "binary" || enc === "base58") throw invalidParams("base58 encoding not supported");
      accounts = addresses.map((a) => this.ui(addressParam(a), enc, post));
    }
    const value = { err: failed ? err : null, logs, accounts, unitsConsumed: units, returnData };
    if (replacementBlockhash) value.replacementBlockhash = replacementBlockhash;
    return { context: this.context(), value };
  }

  /** LiteSVM's simulation of `tx`: {failed, err, logs, units, returnData, post}. */
  simulateInSvm(tx, sigVerify) {
    const wire = tx.serialize();
    const before = this.svm.inner.getSigverify();
    this.svm.withSigverify(sigVerify);
    let result;
    try {
      result = tx.version === "legacy" ? this.svm.inner.simulateLegacyTransaction(wire) : this.svm.inner.simulateVersionedTransaction(wire);
    } finally {
      this.svm.withSigverify(before);
    }
    const failed = result instanceof FailedTransactionMetadata;
    const meta = result.meta();
    // The post-state: what the simulation wrote; every other account as it is now (a failed
    // simulation writes nothing a node would show).
    const post = new Map();
    if (!failed) for (const entry of result.postAccounts()) post.set(keyString(entry.address), fromInner(entry.account()));
    const rd = meta.returnData();
    const programId = rd.programId();
    const returnData = programId.every((x) => x === 0) && rd.data().length === 0 ? null : { programId: keyString(programId), data: [Buffer.from(rd.data()).toString("base64"), "base64"] };
    return { failed, err: failed ? errorJson(result.err()) : null, logs: meta.logs(), units: u64Json(meta.computeUnitsConsumed()), returnData, post };
  }

  /** First instruction System AdvanceNonceAccount of a nonce account that holds the message's
   *  blockhash. */
  isDurableNonce(tx) {
    const m = tx.message;
    const first = m.compiledInstructions[0];
    if (!first) return false;
    const keys = m.staticAccountKeys;
    const program = keys[first.programIdIndex]?.toBase58();
    const data = Buffer.from(first.data);
    if (program !== IDS.system || data.length < 4 || data.readUInt32LE(0) !== 4) return false;
    const nonceKey = keys[first.accountKeyIndexes[0]];
    if (!nonceKey) return false;
    return decodeNonce(rawAccount(this.svm, nonceKey))?.blockhash === m.recentBlockhash;
  }

  handleOne(req) {
    const id = req && typeof req === "object" && "id" in req ? req.id : null;
    if (!req || typeof req !== "object" || Array.isArray(req) || req.jsonrpc !== "2.0" || typeof req.method !== "string") {
      return { jsonrpc: "2.0", error: { code: -32600, message: "Invalid request" }, id };
    }
    const call = { method: req.method, params: req.params };
    this.calls.push(call);
    try {
      return { jsonrpc: "2.0", result: this.dispatch(req.method, req.params), id };
    } catch (e) {
      let error;
      if (e instanceof RpcError) error = { code: e.code, message: e.message };
      else if (e.rpcCode) error = { code: e.rpcCode, message: e.message };
      // A bug of the harness: say so loudly, as an internal error the caller can see.
      else error = { code: -32603, message: `shim internal error: ${e.stack}` };
      call.error = error;
      return { jsonrpc: "2.0", error, id };
    }
  }

  handleBody(text) {
    let req;
    try {
      req = parseJson(text);
    } catch {
      return { jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null };
    }
    if (Array.isArray(req)) {
      if (req.length === 0) return { jsonrpc: "2.0", error: { code: -32600, message: "Invalid request" }, id: null };
      return req.map((r) => this.handleOne(r));
    }
    return this.handleOne(req);
  }

  listen(port = 0) {
    this.server = http.createServer((request, response) => {
      if (request.method !== "POST") {
        response.writeHead(405, { "content-type": "text/plain", allow: "POST" });
        response.end("Used HTTP Method is not allowed. POST or OPTIONS is required");
        return;
      }
      const chunks = [];
      let size = 0;
      request.on("data", (c) => {
        size += c.length;
        if (size > BODY_MAX) request.destroy();
        else chunks.push(c);
      });
      request.on("end", () => {
        const body = stringify(this.handleBody(Buffer.concat(chunks).toString("utf8")));
        response.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
        response.end(body);
      });
    });
    this.server.keepAliveTimeout = 1000;
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, "127.0.0.1", () => {
        this.port = this.server.address().port;
        this.url = `http://127.0.0.1:${this.port}`;
        resolve(this);
      });
    });
  }

  close() {
    if (!this.server) return Promise.resolve();
    this.server.closeAllConnections?.();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A harness's simulation answer (see the header) in the shape simulate() serves. */
function overridden({ post, logs = [], unitsConsumed = 0 }) {
  return { failed: false, err: null, logs, units: unitsConsumed, returnData: null, post: post ?? new Map() };
}

/** getSignaturesForAddress over an instance's recorded history: newest first, like a node. */
function signaturesFor(svm, address, config) {
  const limit = Math.min(Number(config.limit ?? 1000), 1000);
  let list = (svm.__history ?? []).filter((h) => h.keys.includes(address)).reverse();
  if (config.before) {
    const i = list.findIndex((h) => h.signature === config.before);
    list = i >= 0 ? list.slice(i + 1) : [];
  }
  if (config.until) {
    const i = list.findIndex((h) => h.signature === config.until);
    if (i >= 0) list = list.slice(0, i);
  }
  return list.slice(0, limit).map((h) => ({ signature: h.signature, slot: h.slot, err: null, memo: null, blockTime: h.blockTime, confirmationStatus: "finalized" }));
}

const BLOCK_TIME_BASE = 1_750_000_000;

/** One outer instruction as a node's jsonParsed renders it: a System transfer parsed, anything
 *  else partially decoded (program id, account addresses, base58 data). */
function renderInstruction(keys, ix) {
  const programId = keys[ix.programIdIndex];
  const accounts = ix.accountKeyIndexes.map((i) => keys[i]);
  const data = Buffer.from(ix.data);
  if (programId === IDS.system && data.length === 12 && data.readUInt32LE(0) === 2) {
    const info = { destination: accounts[1], lamports: u64Json(data.readBigUInt64LE(4)), source: accounts[0] };
    return { program: "system", programId, parsed: { info, type: "transfer" }, stackHeight: null };
  }
  return { accounts, data: bs58.encode(data), programId, stackHeight: null };
}

/**
 * Executes `tx` (a web3.js Transaction or VersionedTransaction without lookup tables) in `svm` and
 * remembers it for getSignaturesForAddress / getTransaction; each recorded transaction gets a slot
 * of its own (the clock is warped one slot on). `sigverify: false` executes it unsigned: its first
 * signature slot is then filled with random bytes, so that it has a signature of its own (a
 * look-alike address has no key to sign with). Throws when it fails. Returns its signature.
 */
export function executeRecorded(svm, tx, { sigverify = true } = {}) {
  const v = VersionedTransaction.deserialize(tx.serialize({ requireAllSignatures: false, verifySignatures: false }));
  if (v.message.addressTableLookups?.length) throw new Error("executeRecorded: lookup tables are not supported");
  if (!sigverify) v.signatures[0] = Uint8Array.from(randomBytes(64));
  const keys = v.message.staticAccountKeys.map((k) => k.toBase58());
  const balances = () => keys.map((k) => u64Json(rawAccount(svm, k)?.lamports ?? 0n));
  const preBalances = balances();
  const before = svm.inner.getSigverify();
  svm.withSigverify(sigverify);
  let result;
  try {
    result = sendTransaction(svm, v);
  } finally {
    svm.withSigverify(before);
  }
  if (result instanceof FailedTransactionMetadata) throw new Error(`executeRecorded: ${JSON.stringify(errorJson(result.err()))}\n${result.meta().logs().join("\n")}`);
  const postBalances = balances();
  const slot = Number(svm.getClock().slot);
  const signature = bs58.encode(v.signatures[0]);
  const m = v.message;
  const rendered = {
    slot,
    blockTime: BLOCK_TIME_BASE + slot,
    transaction: {
      signatures: v.signatures.map((x) => bs58.encode(x)),
      message: {
        accountKeys: keys.map((pubkey, i) => ({ pubkey, signer: m.isAccountSigner(i), writable: m.isAccountWritable(i), source: "transaction" })),
        recentBlockhash: m.recentBlockhash,
        instructions: m.compiledInstructions.map((ix) => renderInstruction(keys, ix)),
      },
    },
    meta: {
      err: null,
      fee: 5000 * m.header.numRequiredSignatures,
      preBalances,
      postBalances,
      innerInstructions: [],
      preTokenBalances: [],
      postTokenBalances: [],
      logMessages: result.logs(),
      loadedAddresses: { writable: [], readonly: [] },
      computeUnitsConsumed: u64Json(result.computeUnitsConsumed()),
    },
    version: v.version === "legacy" ? "legacy" : v.version,
  };
  svm.__history ??= [];
  svm.__history.push({ signature, slot, blockTime: rendered.blockTime, keys, rendered });
  svm.__known ??= new Set();
  for (const k of keys) svm.__known.add(k);
  svm.warpToSlot(BigInt(slot + 1));
  return signature;
}

function matches(data, filter) {
  if (filter.dataSize !== undefined) return data.length === Number(filter.dataSize);
  if (filter.memcmp) {
    const { offset, bytes, encoding } = filter.memcmp;
    const want = encoding === "base64" ? Buffer.from(bytes, "base64") : Buffer.from(bs58.decode(bytes));
    const o = Number(offset);
    return data.length >= o + want.length && Buffer.compare(data.subarray(o, o + want.length), want) === 0;
  }
  throw invalidParams("Invalid params: unknown filter");
}

export async function startShim(svm) {
  const shim = new Shim(svm);
  await shim.listen(0);
  return shim;
}

/** One JSON-RPC call (or a batch when `body` is an array) over http; answers parsed losslessly. */
export async function rpc(url, methodOrBody, params) {
  const body = typeof methodOrBody === "string" ? { jsonrpc: "2.0", id: 1, method: methodOrBody, params: params ?? [] } : methodOrBody;
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: stringify(body), signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  return parseJson(text);
}

/** The `result` of a single call; throws with the error object otherwise. */
export async function rpcResult(url, method, params) {
  const answer = await rpc(url, method, params);
  if (answer.error) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
  return answer.result;
}
