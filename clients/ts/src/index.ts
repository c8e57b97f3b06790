/**
 * A thin `fetch` client for the Wallet X-Ray API.
 *
 * Every operation of `docs/openapi.json` is one method, named after its `operationId` and typed
 * with the types `openapi-typescript` generates from that document (`./schema.d.ts`). The client
 * adds only what the wire contract asks of a client:
 *
 * - an `Idempotency-Key` on the three job-creating POSTs (generated when not given), the same
 *   key on every retry of one call;
 * - bounded retries of refusals that made no work (`429 RATE_LIMITED`, `429 TOO_MANY_JOBS`,
 *   `503 SERVICE_BUSY`, `409 IDEMPOTENCY_KEY_IN_PROGRESS`), waiting what `Retry-After` says;
 * - the `RateLimit-Policy` / `RateLimit` headers parsed on every answer;
 * - long polling with `wait` until a job is `READY` or `FAILED`;
 * - errors as `XrayError` (the contract's `code`, `status`, `requestId`, `details`,
 *   `retryAfterSeconds`);
 * - `verifyWebhook`: the `Xray-Signature` check of a delivered webhook, in constant time;
 * - `verifyReport`: the Ed25519 check of a signed report (`data.signature`) as the report type the
 *   caller expects, against the published key set (`getSigningKeys`), over its RFC 8785 (JCS)
 *   canonical form (`canonicalJson`); it returns the signed members alone. For a scan it also
 *   checks, when asked, that the signed answer is about the caller's transaction (`messageSha256`),
 *   account, origin and signer — for a sequence scan (`verifyScanSequence`), about the caller's
 *   transactions, every one in its place, and its mode. A refusal names one reason of `VERIFY_REASONS`
 *   (`checkReport`: the same, as a result instead of a throw).
 */
import {
  createHash,
  createHmac,
  createPublicKey,
  randomUUID,
  timingSafeEqual,
  verify as verifySignature,
} from "node:crypto";
import type { KeyObject } from "node:crypto";
import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };
/** The schemas of the OpenAPI document (`Schemas["XRay"]`, `Schemas["Monitor"]`, …). */
export type Schemas = components["schemas"];

type JsonOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
type Responses<Op> = Op extends { responses: infer Rs } ? Rs : never;
/** The JSON body of an operation's success answers (2xx). */
export type SuccessBody<Op> = {
  [K in keyof Responses<Op>]: K extends 200 | 201 | 202 | 204 ? JsonOf<Responses<Op>[K]> : never;
}[keyof Responses<Op>];
/** The JSON body an operation takes. */
export type RequestBody<Op> = Op extends { requestBody?: infer B }
  ? JsonOf<NonNullable<B>>
  : never;
/** The query parameters an operation takes. */
export type QueryOf<Op> = Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export type WalletRequest = RequestBody<operations["analyzeWallet"]>;
export type BatchRequest = RequestBody<operations["analyzeWallets"]>;
export type CompareRequest = RequestBody<operations["compareWallets"]>;
/** The scan's body, either form (`scanTransaction` takes both). */
export type ScanBody = RequestBody<operations["scanTransaction"]>;
/** A scan of one transaction: `transaction`, and `signer`, `origin`, `guards`. */
export type ScanRequest = Schemas["ScanRequest"];
/**
 * A scan of a sequence: `transactions` (1 to 5, base64, run in order on one state), `mode`
 * (`sequence`, the default, or `bundle`), `signer` (a signer of every one) and `origin`; no `guards`.
 */
export type ScanSequenceRequest = Schemas["ScanSequenceRequest"];
/** How a sequence's transaction that fails or cannot run weighs on the rest. */
export type ScanSequenceMode = NonNullable<ScanSequenceRequest["mode"]>;
/** A scan's answer (`{data: ScanReport}`), signed `xray.scan.v2` (`xray.scan.v3` with guards). */
export type TransactionScan = Schemas["TransactionScan"];
/** A sequence scan's answer (`{data: ScanSequence}`), signed `xray.scan_sequence.v1`. */
export type TransactionScanSequence = Schemas["TransactionScanSequence"];
/** A sequence scan's `data`: each transaction in its place, the cumulative effects and findings, `applied`. */
export type ScanSequence = Schemas["ScanSequence"];
/**
 * One transaction of a sequence scan, judged on the state the ones before it leave (a failed one's fee in a `sequence`);
 * after the first, also `alone` — its `verdict` the worse of the two.
 */
export type ScanSequenceTransaction = Schemas["ScanSequenceTransaction"];
/**
 * A sequence's transaction after the first scanned by itself on the ledger as it is (`alone`: `verdict`, `findings`,
 * `simulation`), since the ones before it need not land; absent on the first.
 */
export type ScanSequenceAlone = Schemas["ScanSequenceAlone"];
/** A scan's guards, as asked (`ScanRequest["guards"]` as an object: its tolerances). */
export type ScanGuardOptions = Schemas["ScanGuardOptions"];
/** A scan's guards, as answered (`data.guards` of a scan asked with `guards`). */
export type ScanGuards = Schemas["ScanGuards"];
/**
 * One assertion of a guard, told apart by `kind`: the signer's `lamports_at_least` (absent when its
 * floor is 0) and `account_owner`; a token account's `token_owner`, `token_delegate`,
 * `token_delegated_amount_at_most` (with a delegate), `token_close_authority`, `token_amount_at_least`.
 */
export type ScanGuardAssert = Schemas["ScanGuardAssert"];
export type MonitorRequest = RequestBody<operations["createMonitor"]>;
export type MonitorPatchRequest = RequestBody<operations["changeMonitor"]>;
export type PolicyRequest = RequestBody<operations["putPolicy"]>;
export type FeedbackRequest = RequestBody<operations["submitFeedback"]>;
/** A feedback record as accepted: on an analysis (`target: "analysis"`) or a scan (`"scan"`). */
export type Feedback = Schemas["Feedback"];
/** The verdicts feedback on a scan takes. */
export type ScanFeedbackVerdict = Schemas["ScanFeedback"]["verdict"];
export type JobStatus = Schemas["JobStatus"];

/** One item of a structured-field list such as `"rate";r=98;t=1`. */
export type RateLimitItem = Record<string, number>;

/** The rate-limit headers of an answer (absent fields: the header or item was absent). */
export interface RateLimitState {
  /** `RateLimit`, `"rate"`: whole tokens left in the key's bucket. */
  rateRemaining?: number;
  /** `RateLimit`, `"rate"`: seconds until the bucket is full. */
  rateResetSeconds?: number;
  /** `RateLimit`, `"quota"`: units left this period. */
  quotaRemaining?: number;
  /** `RateLimit`, `"quota"`: seconds until the period resets. */
  quotaResetSeconds?: number;
  /** `RateLimit-Policy`, `"rate"`: the bucket's size (burst). */
  rateLimit?: number;
  /** `RateLimit-Policy`, `"rate"`: its window in seconds. */
  rateWindowSeconds?: number;
  /** `RateLimit-Policy`, `"quota"`: units per period. */
  quotaLimit?: number;
  /** `RateLimit-Policy`, `"quota"`: the period in seconds. */
  quotaWindowSeconds?: number;
  /** Every item of both headers, by name, with all their numeric parameters. */
  policy: Record<string, RateLimitItem>;
  limit: Record<string, RateLimitItem>;
}

/**
 * Parses a structured-field list of the RateLimit drafts (`"rate";q=100;w=2, "quota";q=10;w=60`)
 * into `{rate: {q: 100, w: 2}, quota: {q: 10, w: 60}}`. Items or parameters that are not
 * `name;key=integer` are skipped (extensible: new items or keys are kept when numeric).
 */
export function parseRateLimitList(value: string | null | undefined): Record<string, RateLimitItem> {
  const out: Record<string, RateLimitItem> = {};
  if (!value) return out;
  for (const raw of value.split(",")) {
    const parts = raw.trim().split(";");
    const name = parts.shift()?.trim().replace(/^"(.*)"$/, "$1");
    if (!name) continue;
    const item: RateLimitItem = {};
    for (const p of parts) {
      const eq = p.indexOf("=");
      if (eq < 0) continue;
      const n = Number(p.slice(eq + 1).trim());
      if (Number.isFinite(n)) item[p.slice(0, eq).trim()] = n;
    }
    out[name] = item;
  }
  return out;
}

/** The `RateLimit-Policy` and `RateLimit` headers of an answer. */
export function parseRateLimit(headers: Headers): RateLimitState {
  const policy = parseRateLimitList(headers.get("ratelimit-policy"));
  const limit = parseRateLimitList(headers.get("ratelimit"));
  return {
    rateRemaining: limit.rate?.r,
    rateResetSeconds: limit.rate?.t,
    quotaRemaining: limit.quota?.r,
    quotaResetSeconds: limit.quota?.t,
    rateLimit: policy.rate?.q,
    rateWindowSeconds: policy.rate?.w,
    quotaLimit: policy.quota?.q,
    quotaWindowSeconds: policy.quota?.w,
    policy,
    limit,
  };
}

/** `Retry-After` as whole seconds (delta-seconds, or an HTTP date), else undefined. */
export function parseRetryAfter(value: string | null | undefined, nowMs = Date.now()): number | undefined {
  if (value == null || value.trim() === "") return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** A successful answer: its body and what its headers said. */
export interface XrayResponse<B> {
  /** The JSON body, as the OpenAPI document types it (`{data: …}`). */
  body: B;
  status: number;
  headers: Headers;
  /** `X-Request-Id`. */
  requestId: string | null;
  rateLimit: RateLimitState;
  /** `Retry-After` in seconds (on a `202`, or a poll of a job still running). */
  retryAfterSeconds?: number;
  /** `Location` (the job's `pollUrl` on the job-creating POSTs). */
  location: string | null;
  /** `Idempotent-Replayed: true`: the server replayed the first answer to this key. */
  replayed: boolean;
  /** The `Idempotency-Key` the request was sent with (the same on every attempt). */
  idempotencyKey?: string;
  /** Attempts the call took (1 without retries). */
  attempts: number;
}

/** The contract's error object (`{"error": {...}}`), typed from the OpenAPI document. */
export type ErrorObject = Schemas["ErrorObject"];

/** A refusal: an answer that is not 2xx, or a network failure (`status` 0, `code` `NETWORK_ERROR`). */
export class XrayError extends Error {
  /** The contract's code (`INVALID_ADDRESS`, `RATE_LIMITED`, …); `HTTP_<status>` for a bare answer. */
  readonly code: string;
  readonly status: number;
  readonly requestId: string | null;
  readonly details: Record<string, unknown> | undefined;
  /** `Retry-After`, else `details.retryAfterSeconds`, in seconds. */
  readonly retryAfterSeconds: number | undefined;
  readonly rateLimit: RateLimitState | undefined;
  readonly headers: Headers | undefined;
  /** The parsed body, or its text when it was not JSON. */
  readonly body: unknown;
  readonly attempts: number;

  constructor(init: {
    code: string;
    message: string;
    status: number;
    requestId?: string | null;
    details?: Record<string, unknown>;
    retryAfterSeconds?: number;
    rateLimit?: RateLimitState;
    headers?: Headers;
    body?: unknown;
    attempts?: number;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "XrayError";
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId ?? null;
    this.details = init.details;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.rateLimit = init.rateLimit;
    this.headers = init.headers;
    this.body = init.body;
    this.attempts = init.attempts ?? 1;
  }
}

/** Codes of refusals that made no work and say when to come back: retried by the client. */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  "RATE_LIMITED",
  "TOO_MANY_JOBS",
  "SERVICE_BUSY",
  "IDEMPOTENCY_KEY_IN_PROGRESS",
]);

export interface XrayClientOptions {
  /** The service root before `/v1`, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** `svc_live_…` (omit for `getHealth` only). */
  apiKey?: string;
  /** A `fetch` implementation (default: the global one). */
  fetch?: typeof fetch;
  /** Retries of one call after a retryable refusal or a network failure (default 3). */
  maxRetries?: number;
  /** A `Retry-After` longer than this is not waited for: the error is thrown (default 30). */
  maxRetryAfterSeconds?: number;
  /** Headers sent with every request (e.g. a `User-Agent`). */
  headers?: Record<string, string>;
  /** Called before each retry (logging, metrics). */
  onRetry?: (info: { attempt: number; delaySeconds: number; error: XrayError }) => void;
}

/** Per-call options. */
export interface RequestOptions {
  /** Sent as `X-Request-Id` (1–64 characters of `[A-Za-z0-9._-]` are echoed). */
  requestId?: string;
  signal?: AbortSignal;
  /** Overrides the client's `maxRetries` for this call. */
  maxRetries?: number;
}

/** Options of the job-creating POSTs. */
export interface IdempotentOptions extends RequestOptions {
  /** The `Idempotency-Key` (default: a random UUID); `false` sends none. */
  idempotencyKey?: string | false;
}

export interface PollOptions extends RequestOptions {
  /** Seconds the server holds the poll (0–30). */
  wait?: number;
}

export interface WaitOptions extends RequestOptions {
  /** Give up after this many seconds (default 120): throws `XrayError` code `WAIT_TIMEOUT`. */
  timeoutSeconds?: number;
  /** `wait` of each long poll (default 20, at most 30). */
  waitSeconds?: number;
}

interface CallSpec {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  auth?: boolean;
  idempotencyKey?: string;
  /** Whether a 503 or a network failure may be retried (the request is idempotent). */
  retrySafe: boolean;
}

const FINISHED = new Set(["READY", "FAILED"]);

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

const seg = (s: string) => encodeURIComponent(s);

/** Every item of a paged listing: `page(after)` reads one page, then its `nextAfter`, until none. */
async function* followPages<T>(
  page: (after: string | undefined) => Promise<{ items: readonly T[]; nextAfter?: string | null }>,
): AsyncGenerator<T> {
  let after: string | undefined;
  for (;;) {
    const { items, nextAfter } = await page(after);
    yield* items;
    if (!nextAfter) return;
    after = nextAfter;
  }
}

/** A page's query: `limit`, and `after` once a page named one. */
const pageQuery = (limit: number, after: string | undefined) => ({ limit, ...(after ? { after } : {}) });

export class XrayClient {
  readonly baseUrl: string;
  private readonly apiKey?: string;
  private readonly fetchImpl: typeof fetch;
  private readonly maxRetries: number;
  private readonly maxRetryAfterSeconds: number;
  private readonly extraHeaders: Record<string, string>;
  private readonly onRetry?: XrayClientOptions["onRetry"];

  constructor(options: XrayClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryAfterSeconds = options.maxRetryAfterSeconds ?? 30;
    this.extraHeaders = { ...(options.headers ?? {}) };
    this.onRetry = options.onRetry;
  }

  // ---- wallet analysis ------------------------------------------------------------------

  /** `POST /v1/developer/intelligence/wallet` — 202 (new or running job) or 200 (fresh result reused). */
  analyzeWallet(body: WalletRequest, opts: IdempotentOptions = {}) {
    return this.call<SuccessBody<operations["analyzeWallet"]>>(
      { method: "POST", path: "/v1/developer/intelligence/wallet", body, ...this.idem(opts) },
      opts,
    );
  }

  /** `POST /v1/developer/intelligence/wallets` — a batch of up to 100 addresses (send at most `burst`). */
  analyzeWallets(body: BatchRequest, opts: IdempotentOptions = {}) {
    return this.call<SuccessBody<operations["analyzeWallets"]>>(
      { method: "POST", path: "/v1/developer/intelligence/wallets", body, ...this.idem(opts) },
      opts,
    );
  }

  /** `GET /v1/developer/intelligence/analysis/{id}` — `wait` long-polls up to 30 s. */
  getAnalysis(id: string, opts: PollOptions = {}) {
    return this.call<SuccessBody<operations["getAnalysis"]>>(
      {
        method: "GET",
        path: `/v1/developer/intelligence/analysis/${seg(id)}`,
        query: { wait: opts.wait },
        retrySafe: true,
      },
      opts,
    );
  }

  /** Long-polls an analysis until it is `READY` or `FAILED` (a `FAILED` one is returned, not thrown). */
  waitForAnalysis(id: string, opts: WaitOptions = {}) {
    return this.waitFor((wait) => this.getAnalysis(id, { ...opts, wait }), opts);
  }

  /** `analyzeWallet`, then `waitForAnalysis` of its job. */
  async analyzeWalletAndWait(body: WalletRequest, opts: IdempotentOptions & WaitOptions = {}) {
    const accepted = await this.analyzeWallet(body, opts);
    return this.waitForAnalysis(accepted.body.data.analysisId, opts);
  }

  // ---- comparison -------------------------------------------------------------------------

  /** `POST /v1/developer/intelligence/compare`. */
  compareWallets(body: CompareRequest, opts: IdempotentOptions = {}) {
    return this.call<SuccessBody<operations["compareWallets"]>>(
      { method: "POST", path: "/v1/developer/intelligence/compare", body, ...this.idem(opts) },
      opts,
    );
  }

  /** `GET /v1/developer/intelligence/comparison/{pairId}`. */
  getComparison(pairId: string, opts: PollOptions = {}) {
    return this.call<SuccessBody<operations["getComparison"]>>(
      {
        method: "GET",
        path: `/v1/developer/intelligence/comparison/${seg(pairId)}`,
        query: { wait: opts.wait },
        retrySafe: true,
      },
      opts,
    );
  }

  /** Long-polls a comparison until it is `READY` or `FAILED`. */
  waitForComparison(pairId: string, opts: WaitOptions = {}) {
    return this.waitFor((wait) => this.getComparison(pairId, { ...opts, wait }), opts);
  }

  /** `compareWallets`, then `waitForComparison` of its pair. */
  async compareWalletsAndWait(body: CompareRequest, opts: IdempotentOptions & WaitOptions = {}) {
    const accepted = await this.compareWallets(body, opts);
    return this.waitForComparison(accepted.body.data.pairId, opts);
  }

  // ---- pre-sign scan ----------------------------------------------------------------------

  /**
   * `POST /v1/developer/intelligence/transaction` — synchronous. One transaction
   * (`{transaction}`): charged one unit, answered `TransactionScan`. With `guards` (`true`, or
   * `{slippageBps, solToleranceLamports}`) the answer also carries `data.guards` — Lighthouse
   * assertions of what the scan predicts and, for an unsigned transaction, the transaction with
   * them appended — and is signed `xray.scan.v3`. A sequence (`{transactions, mode}`, as
   * `scanSequence`): charged one unit per transaction, answered `TransactionScanSequence`, signed
   * `xray.scan_sequence.v1` (verify it with `verifyScanSequence`).
   */
  scanTransaction(body: ScanRequest, opts?: RequestOptions): Promise<XrayResponse<TransactionScan>>;
  scanTransaction(body: ScanSequenceRequest, opts?: RequestOptions): Promise<XrayResponse<TransactionScanSequence>>;
  scanTransaction(body: ScanBody, opts: RequestOptions = {}) {
    // A refusal (429/503) made no scan; a network failure may have: not retried.
    return this.call<SuccessBody<operations["scanTransaction"]>>(
      { method: "POST", path: "/v1/developer/intelligence/transaction", body, retrySafe: false },
      opts,
    );
  }

  /**
   * `POST /v1/developer/intelligence/transaction` with `transactions`: 1 to 5 transactions
   * (base64, in the order they would run) simulated in order on one state, each judged in its
   * place and the whole on its cumulative effects (`data.transactions`, `data.effects`,
   * `data.findings`, `data.applied`); each after the first also alone, on the ledger as it is
   * (`data.transactions[i].alone`, its `verdict` the worse of the two: the ones before it need
   * not land). `mode` `sequence` (the default: a failed one applies
   * nothing but its fee, the next runs on that state) or `bundle` (once one fails, none applies,
   * not even a fee); `signer` must sign every one (default: the first's fee payer). Charged one
   * unit and one rate-limit token per transaction (429 `RATE_LIMITED` when the key's bucket
   * holds fewer); at most 100 accounts written together (else 400 `INVALID_REQUEST`); signed
   * `xray.scan_sequence.v1` — verify it with `verifyScanSequence(data, keys, {transactions, signer, mode})`.
   */
  scanSequence(
    transactions: string[],
    options: Omit<ScanSequenceRequest, "transactions"> = {},
    opts: RequestOptions = {},
  ): Promise<XrayResponse<TransactionScanSequence>> {
    return this.scanTransaction({ ...options, transactions }, opts);
  }

  // ---- monitors ---------------------------------------------------------------------------

  /** `POST /v1/developer/monitors` (201). */
  createMonitor(body: MonitorRequest, opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["createMonitor"]>>(
      { method: "POST", path: "/v1/developer/monitors", body, retrySafe: false },
      opts,
    );
  }

  /** `GET /v1/developer/monitors` — one page (`data.nextAfter` names the next). */
  listMonitors(query: QueryOf<operations["listMonitors"]> = {}, opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["listMonitors"]>>(
      { method: "GET", path: "/v1/developer/monitors", query, retrySafe: true },
      opts,
    );
  }

  /** Every monitor of the account, following `nextAfter`. */
  async *allMonitors(limit = 100, opts: RequestOptions = {}) {
    yield* followPages(async (after) => {
      const { data } = (await this.listMonitors(pageQuery(limit, after), opts)).body;
      return { items: data.monitors, nextAfter: data.nextAfter };
    });
  }

  /** `GET /v1/developer/monitors/{id}` — with its watches. */
  getMonitor(id: string, opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["getMonitor"]>>(
      { method: "GET", path: `/v1/developer/monitors/${seg(id)}`, retrySafe: true },
      opts,
    );
  }

  /** `PATCH /v1/developer/monitors/{id}` (a 503 of a lost race is retried, as documented). */
  changeMonitor(id: string, body: MonitorPatchRequest, opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["changeMonitor"]>>(
      { method: "PATCH", path: `/v1/developer/monitors/${seg(id)}`, body, retrySafe: true },
      opts,
    );
  }

  /** `DELETE /v1/developer/monitors/{id}` — not idempotent (again: 404), so not retried on 503. */
  deleteMonitor(id: string, opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["deleteMonitor"]>>(
      { method: "DELETE", path: `/v1/developer/monitors/${seg(id)}`, retrySafe: false },
      opts,
    );
  }

  /** `GET /v1/developer/monitors/{id}/events` — oldest first. */
  listMonitorEvents(
    id: string,
    query: QueryOf<operations["listMonitorEvents"]> = {},
    opts: RequestOptions = {},
  ) {
    return this.call<SuccessBody<operations["listMonitorEvents"]>>(
      { method: "GET", path: `/v1/developer/monitors/${seg(id)}/events`, query, retrySafe: true },
      opts,
    );
  }

  /** `POST /v1/developer/monitors/{id}/events/{eventId}/redeliver` (202; 409 while `PENDING`). */
  redeliverMonitorEvent(id: string, eventId: string, opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["redeliverMonitorEvent"]>>(
      {
        method: "POST",
        path: `/v1/developer/monitors/${seg(id)}/events/${seg(eventId)}/redeliver`,
        retrySafe: true,
      },
      opts,
    );
  }

  // ---- feedback ---------------------------------------------------------------------------

  /**
   * `POST /v1/developer/feedback` — a verdict on a READY analysis or one of its signals, or on
   * a scan (`submitScanFeedback`): 201 the first time, 200 when it replaces the record (one per
   * analysis and signal, or per scan), so a retry is safe. Not charged.
   */
  submitFeedback(body: FeedbackRequest, opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["submitFeedback"]>>(
      { method: "POST", path: "/v1/developer/feedback", body, retrySafe: true },
      opts,
    );
  }

  /**
   * `POST /v1/developer/feedback` on a scan: `scan` is the scan's answer as
   * `scanTransaction` returned it (`body`, i.e. `{data: {…, signature}}`), sent back whole; the
   * server verifies it for this key's account (`422 REPORT_NOT_VERIFIED` with
   * `details.reason` else) and keeps only its facts. 201 the first time, 200 when it replaces
   * the record (one per scan `requestId` and `messageSha256`), so a retry is safe. The key needs
   * `transaction:scan` besides `analysis:read`. Not charged.
   */
  submitScanFeedback(
    scan: TransactionScan,
    verdict: ScanFeedbackVerdict,
    note?: string,
    opts: RequestOptions = {},
  ) {
    const body = { scan, verdict, ...(note === undefined ? {} : { note }) } as FeedbackRequest;
    return this.submitFeedback(body, opts);
  }

  /**
   * `GET /v1/developer/feedback` — the account's own records, newest first, one page (the scans'
   * records only for a key that also holds `transaction:scan`: a page may then be short).
   */
  listFeedback(query: QueryOf<operations["listFeedback"]> = {}, opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["listFeedback"]>>(
      { method: "GET", path: "/v1/developer/feedback", query, retrySafe: true },
      opts,
    );
  }

  /** Every feedback record of the account, newest first, following `nextAfter`. */
  async *allFeedback(limit = 100, opts: RequestOptions = {}) {
    yield* followPages(async (after) => {
      const { data } = (await this.listFeedback(pageQuery(limit, after), opts)).body;
      return { items: data.feedback, nextAfter: data.nextAfter };
    });
  }

  // ---- account and service ----------------------------------------------------------------

  /** `GET /v1/developer/status` — the key, its scopes, rate limit, quota, the service. */
  getStatus(opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["getStatus"]>>(
      { method: "GET", path: "/v1/developer/status", retrySafe: true },
      opts,
    );
  }

  /** `GET /v1/developer/usage`. */
  getUsage(opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["getUsage"]>>(
      { method: "GET", path: "/v1/developer/usage", retrySafe: true },
      opts,
    );
  }

  /** `GET /v1/developer/policy` — the account's policy (`default`, version 0, if never written). */
  getPolicy(opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["getPolicy"]>>(
      { method: "GET", path: "/v1/developer/policy", retrySafe: true },
      opts,
    );
  }

  /**
   * `PUT /v1/developer/policy` — the whole policy, as its next version. A PUT is idempotent, so a
   * 503 is retried; with `version` set, a retry after a lost answer that had landed is a 409.
   */
  putPolicy(body: PolicyRequest, opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["putPolicy"]>>(
      { method: "PUT", path: "/v1/developer/policy", body, retrySafe: true },
      opts,
    );
  }

  /** `GET /healthz` (no key). A draining server answers 503: thrown as `XrayError`. */
  getHealth(opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["getHealth"]>>(
      { method: "GET", path: "/healthz", auth: false, retrySafe: false },
      { ...opts, maxRetries: opts.maxRetries ?? 0 },
    );
  }

  /** `GET /.well-known/xray-keys.json` (no key): the report-signing keys, current and retired. */
  getSigningKeys(opts: RequestOptions = {}) {
    return this.call<SuccessBody<operations["getSigningKeys"]>>(
      { method: "GET", path: "/.well-known/xray-keys.json", auth: false, retrySafe: true },
      opts,
    );
  }

  // ---- machinery --------------------------------------------------------------------------

  private idem(opts: IdempotentOptions): { idempotencyKey?: string; retrySafe: boolean } {
    if (opts.idempotencyKey === false) return { retrySafe: false };
    return { idempotencyKey: opts.idempotencyKey ?? randomUUID(), retrySafe: true };
  }

  private async waitFor<B extends { data: { status: string } }>(
    poll: (wait: number) => Promise<XrayResponse<B>>,
    opts: WaitOptions,
  ): Promise<XrayResponse<B>> {
    const deadline = Date.now() + (opts.timeoutSeconds ?? 120) * 1000;
    const waitMax = Math.min(30, Math.max(0, Math.floor(opts.waitSeconds ?? 20)));
    for (;;) {
      const left = Math.floor((deadline - Date.now()) / 1000);
      const wait = Math.max(0, Math.min(waitMax, left));
      const started = Date.now();
      const res = await poll(wait);
      if (FINISHED.has(res.body.data.status)) return res;
      if (Date.now() >= deadline) {
        throw new XrayError({
          code: "WAIT_TIMEOUT",
          message: `still ${res.body.data.status} after ${opts.timeoutSeconds ?? 120} s`,
          status: res.status,
          requestId: res.requestId,
          headers: res.headers,
          rateLimit: res.rateLimit,
          body: res.body,
        });
      }
      // The server answers a long poll early when it holds its maximum of waiters: then honour
      // Retry-After instead of polling again at once.
      const heldMs = Date.now() - started;
      if (heldMs < wait * 1000 - 250 || wait === 0) {
        const pause = Math.min((res.retryAfterSeconds ?? 1) * 1000, Math.max(0, deadline - Date.now()));
        await sleep(pause, opts.signal);
      }
    }
  }

  private async call<B>(spec: CallSpec, opts: RequestOptions): Promise<XrayResponse<B>> {
    const url = new URL(this.baseUrl + spec.path);
    for (const [k, v] of Object.entries(spec.query ?? {})) {
      if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { Accept: "application/json", ...this.extraHeaders };
    if (spec.auth !== false && this.apiKey) headers.Authorization = `Bearer ${this.apiKey}`;
    if (spec.body !== undefined) headers["Content-Type"] = "application/json";
    if (spec.idempotencyKey) headers["Idempotency-Key"] = spec.idempotencyKey;
    if (opts.requestId) headers["X-Request-Id"] = opts.requestId;
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const maxRetries = opts.maxRetries ?? this.maxRetries;

    for (let attempt = 1; ; attempt++) {
      let error: XrayError;
      let res: Response;
      try {
        res = await this.fetchImpl(url, { method: spec.method, headers, body: payload, signal: opts.signal });
      } catch (cause) {
        if (opts.signal?.aborted) throw cause;
        error = new XrayError({
          code: "NETWORK_ERROR",
          message: `${spec.method} ${url.pathname}: ${(cause as Error)?.message ?? String(cause)}`,
          status: 0,
          attempts: attempt,
          cause,
        });
        if (!spec.retrySafe || attempt > maxRetries) throw error;
        const delay = Math.min(0.25 * 2 ** (attempt - 1), 4);
        this.onRetry?.({ attempt, delaySeconds: delay, error });
        await sleep(delay * 1000, opts.signal);
        continue;
      }

      const text = await res.text();
      let parsed: unknown = text;
      if (text !== "") {
        try {
          parsed = JSON.parse(text);
        } catch {
          /* a bare answer (431, 400 of a broken request): keep the text */
        }
      }
      const rateLimit = parseRateLimit(res.headers);
      const retryAfterHeader = parseRetryAfter(res.headers.get("retry-after"));
      if (res.ok) {
        return {
          body: parsed as B,
          status: res.status,
          headers: res.headers,
          requestId: res.headers.get("x-request-id"),
          rateLimit,
          retryAfterSeconds: retryAfterHeader,
          location: res.headers.get("location"),
          replayed: res.headers.get("idempotent-replayed")?.toLowerCase() === "true",
          idempotencyKey: spec.idempotencyKey,
          attempts: attempt,
        };
      }

      const obj = (parsed as { error?: ErrorObject } | null)?.error;
      const details = (obj?.details ?? undefined) as Record<string, unknown> | undefined;
      const detailRetry = typeof details?.retryAfterSeconds === "number" ? details.retryAfterSeconds : undefined;
      error = new XrayError({
        code: obj?.code ?? `HTTP_${res.status}`,
        message: obj?.message ?? `${spec.method} ${url.pathname}: HTTP ${res.status}`,
        status: res.status,
        requestId: obj?.requestId ?? res.headers.get("x-request-id"),
        details,
        retryAfterSeconds: retryAfterHeader ?? detailRetry,
        rateLimit,
        headers: res.headers,
        body: parsed,
        attempts: attempt,
      });

      // RATE_LIMITED and TOO_MANY_JOBS refuse before any work, whatever the method; 503 and
      // IDEMPOTENCY_KEY_IN_PROGRESS only where a repeat is harmless.
      const retryable =
        error.code === "RATE_LIMITED" ||
        error.code === "TOO_MANY_JOBS" ||
        (spec.retrySafe && RETRYABLE_CODES.has(error.code));
      const delay = error.retryAfterSeconds ?? 1;
      if (!retryable || attempt > maxRetries || delay > this.maxRetryAfterSeconds) throw error;
      this.onRetry?.({ attempt, delaySeconds: delay, error });
      await sleep(delay * 1000, opts.signal);
    }
  }
}

// ---- webhooks -------------------------------------------------------------------------------

/** The header a webhook delivery's signature travels in. */
export const SIGNATURE_HEADER = "Xray-Signature";

/** Why `verifyWebhook` refused a delivery. */
export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: "malformed_header" | "no_timestamp" | "no_signature" | "outside_tolerance" | "signature_mismatch",
    message: string,
  ) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

export interface VerifyWebhookOptions {
  /** Seconds the signing time may differ from now (default 300). */
  toleranceSeconds?: number;
  /** Now, in Unix seconds (default: the clock). */
  nowSeconds?: number;
}

const toBytes = (body: string | Uint8Array) =>
  typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);

/**
 * The `Xray-Signature` value for `body` signed at `timestampSeconds`:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the secret>`. For tests of a receiver.
 */
export function signWebhook(secret: string, timestampSeconds: number, rawBody: string | Uint8Array): string {
  const mac = createHmac("sha256", secret).update(`${timestampSeconds}.`).update(toBytes(rawBody)).digest("hex");
  return `t=${timestampSeconds},v1=${mac}`;
}

/**
 * Checks a webhook delivery: `signatureHeader` is its `Xray-Signature` value, `rawBody` the bytes
 * received (before any JSON parsing), `secret` the account's `whsec_…`. The signature is compared
 * in constant time and the signing time must be within the tolerance of now (a replay older than
 * that is refused). Returns the signing time (Unix seconds); throws `WebhookVerificationError`.
 * Several `v1=` entries are accepted (any that matches).
 */
export function verifyWebhook(
  secret: string,
  signatureHeader: string | null | undefined,
  rawBody: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): number {
  if (!signatureHeader) throw new WebhookVerificationError("malformed_header", "no Xray-Signature header");
  let t: number | undefined;
  const candidates: Buffer[] = [];
  for (const part of signatureHeader.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === "t" && /^\d{1,15}$/.test(v)) t = Number(v);
    else if (k === "v1" && /^[0-9a-fA-F]{64}$/.test(v)) candidates.push(Buffer.from(v, "hex"));
  }
  if (t === undefined) throw new WebhookVerificationError("no_timestamp", "Xray-Signature has no t=");
  if (candidates.length === 0) throw new WebhookVerificationError("no_signature", "Xray-Signature has no valid v1=");
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - t) > tolerance) {
    throw new WebhookVerificationError("outside_tolerance", `signed at ${t}, more than ${tolerance} s from ${now}`);
  }
  const expected = createHmac("sha256", secret).update(`${t}.`).update(toBytes(rawBody)).digest();
  let ok = false;
  for (const c of candidates) ok = timingSafeEqual(expected, c) || ok;
  if (!ok) throw new WebhookVerificationError("signature_mismatch", "the signature is not this secret's for this body");
  return t;
}

// ---- signed reports -------------------------------------------------------------------------

export type SigningKeySet = Schemas["SigningKeySet"];
export type ReportSignature = Schemas["ReportSignature"];
/**
 * What a signed report is: its signature's `type` — the types whose covers this verifier knows.
 * Listed here, not taken from the generated `ReportSignature["type"]`, so that the client builds
 * on either side of a change of the schema's list; a unit test checks that docs/openapi.json
 * names exactly these.
 */
export type ReportType =
  | "xray.analysis.v1"
  | "xray.comparison.v1"
  | "xray.scan.v2"
  | "xray.scan.v3"
  | "xray.scan_sequence.v1"
  | "xray.monitor_event.v1";
/** The type of a scan's answer (asked without `guards`). */
const SCAN_TYPE: ReportType = "xray.scan.v2";
/** The type of the answer of a scan asked with `guards`: a scan's members and `guards`. */
const GUARDED_SCAN_TYPE: ReportType = "xray.scan.v3";
/** The two types of a scan's answer, the reports a `ScanBinding` applies to. */
const SCAN_TYPES: readonly ReportType[] = [SCAN_TYPE, GUARDED_SCAN_TYPE];
/**
 * The type of a sequence scan's answer (`transactions`): never a scan, and a scan never one; the
 * report a `SequenceBinding` applies to.
 */
const SEQUENCE_TYPE: ReportType = "xray.scan_sequence.v1";

/** What a scan's signature (`xray.scan.v2`) covers. */
const SCAN_COVERS: readonly string[] = [
  "verdict",
  "signer",
  "account",
  "origin",
  "transaction",
  "findings",
  "effects",
  "instructions",
  "simulation",
  "counterparties",
  "engineVersions",
  "policy",
  "scannedAt",
  "requestId",
];

/** The members of `data` each report type's signature covers, exactly (README, "Signed reports"). */
export const REPORT_COVERS: Readonly<Record<ReportType, readonly string[]>> = {
  "xray.analysis.v1": ["analysisId", "wallet", "completedAt", "xray"],
  "xray.comparison.v1": ["pairId", "walletA", "walletB", "completedAt", "comparison"],
  "xray.scan.v2": SCAN_COVERS,
  // A scan asked with `guards`: the same members and `guards` (the Lighthouse assertions and the
  // guarded transaction).
  "xray.scan.v3": [...SCAN_COVERS, "guards"],
  // A sequence scan: each transaction's verdict, transaction (its messageSha256), findings,
  // effects, instructions and simulation inside `transactions`; the whole's findings, effects
  // and what applied; and, as a scan's, the rest.
  "xray.scan_sequence.v1": [
    "verdict",
    "signer",
    "mode",
    "transactions",
    "findings",
    "effects",
    "applied",
    "counterparties",
    "engineVersions",
    "policy",
    "origin",
    "account",
    "scannedAt",
    "requestId",
  ],
  // A monitor's event: `data` is the event object (a webhook body's `data.event`, or one item
  // of the events page's `data.events`), its `signature` among its members.
  "xray.monitor_event.v1": ["id", "kind", "account", "monitorId", "wallet", "analysisId", "createdAt", "changes"],
};

/** A verified report: the key that signed it and its signed members — read these, not `data`. */
export interface VerifiedReport {
  keyId: string;
  covered: Record<string, unknown>;
}

/**
 * What a scan's signed answer must be about, on top of its signature (`verifyReport`'s
 * `binding`, for either scan type): each member given is compared with a covered member; one
 * left out is not checked.
 */
export interface ScanBinding {
  /**
   * The transaction sent to the scan — its serialized bytes, or their base64 as sent — signed
   * since or not: `messageSha256` of it must be the signed `transaction.messageSha256`.
   */
  transaction?: Uint8Array | string;
  /** The account whose key asked for the scan (`getStatus()`'s `data.key.account`): the signed `account`. */
  account?: string;
  /**
   * The host of the `origin` the scan was sent with, as the scan reports it (a lowercase domain,
   * or an IP literal, IPv6 in brackets): the signed `origin`; `null` when the scan was sent none.
   */
  origin?: string | null;
  /**
   * The wallet the scan was asked about (base58; the request's `signer`, or the fee payer it
   * defaulted to): the signed `signer`, exactly. Not text (at run time): `malformed`.
   */
  signer?: string;
}

const BINDING_MEMBERS: readonly (keyof ScanBinding)[] = ["transaction", "account", "origin", "signer"];

/**
 * What a sequence scan's signed answer must be about, on top of its signature (`verifyReport`'s
 * `binding` for `xray.scan_sequence.v1`, `verifyScanSequence`'s): each member given is compared
 * with a covered member; one left out is not checked.
 */
export interface SequenceBinding {
  /**
   * The transactions sent to the scan, in the order sent — each its serialized bytes or their
   * base64, signed since or not: the signed `transactions` must have exactly as many items, and
   * item i's `transaction.messageSha256` must be `messageSha256` of transaction i.
   */
  transactions?: ReadonlyArray<Uint8Array | string>;
  /** The account whose key asked for the scan: the signed `account`. */
  account?: string;
  /** The origin host it was sent with, as the scan reports it; `null` when it was sent none. */
  origin?: string | null;
  /** The wallet it was asked about (base58), a signer of every transaction: the signed `signer`, exactly. */
  signer?: string;
  /**
   * The mode it was asked to run them in (`sequence`, the default, or `bundle`): the signed
   * `mode`, exactly. A scan's binding has none (`malformed`).
   */
  mode?: "sequence" | "bundle";
}

const SEQUENCE_BINDING_MEMBERS: readonly (keyof SequenceBinding)[] = ["transactions", "account", "origin", "signer", "mode"];
/** Binding members that must be text when given (else `malformed`). */
const TEXT_BINDING_MEMBERS: readonly string[] = ["signer", "mode"];
/** What a signed answer can be bound to: a scan's request, or a sequence scan's. */
export type ReportBinding = ScanBinding | SequenceBinding;
/** The type of the envelope a batched signature (a scan's) signs, and the longest path read. */
const BATCH_TYPE = "xray.batch.v1";
const BATCH_PATH_STEPS_MAX = 16;

/**
 * Why a verifier refuses a report: the closed list every verifier of this repository gives (the
 * Rust, Python and TypeScript ones; README, "Signed reports"), in the order they are checked —
 * the first that applies is the reason:
 * - `malformed`: the report, the key set or the binding is not the shape it has (no `data`
 *   object, no signature — an unsigned report — `alg` not `EdDSA`, `canon` not `JCS`, `type` or
 *   `keyId` not text, `covers` not a list of names, `value` not 64 bytes of unpadded base64url;
 *   a key set without `keys`, or whose key of that id is no Ed25519 public key; a binding with a
 *   member its type's binding has not — a scan's `transaction`, `account`, `origin`, `signer`; a
 *   sequence's `transactions`, `account`, `origin`, `signer`, `mode` —, of another type than a
 *   scan or a sequence scan, whose transaction is none, whose `transactions` is no list, or whose
 *   `signer` or `mode` is not text);
 * - `unknown_key`: no key of the set has the signature's `keyId` (another server's report);
 * - `wrong_type`: the signature's `type` is not the type expected;
 * - `covers_mismatch`: `covers` is not exactly that type's members, or `data` lacks one; or a
 *   scan of any scan type (`xray.scan.v2`, `xray.scan.v3`, `xray.scan_sequence.v1`) carries a
 *   member besides those and `signature` — one nobody signed, such as `guards` beside an
 *   `xray.scan.v2` signature (an analysis, comparison or monitor event may carry unsigned
 *   members: they are left out of `covered`);
 * - `bad_signature`: the signature does not verify — something it covers was changed;
 * - then a scan's binding, compared with what the signature attests: `digest_mismatch` (its
 *   `transaction.messageSha256` is not the digest of the transaction's message — a sequence's
 *   `transactions` has not exactly as many items as held, or item i's `transaction.messageSha256`
 *   is not the digest of transaction i's; the only digests a report binds — an analysis or
 *   comparison has none), `account_mismatch`, `origin_mismatch`, `signer_mismatch` (it judged
 *   another wallet), and a sequence scan's `mode_mismatch` (it ran them in another mode).
 */
export const VERIFY_REASONS = [
  "malformed",
  "unknown_key",
  "wrong_type",
  "covers_mismatch",
  "bad_signature",
  "digest_mismatch",
  "account_mismatch",
  "origin_mismatch",
  "signer_mismatch",
  "mode_mismatch",
] as const;
/** One of `VERIFY_REASONS`. */
export type VerifyReason = (typeof VERIFY_REASONS)[number];

/** Why `verifyReport` refused a report: `reason` (`VERIFY_REASONS`) and, in `message`, what. */
export class ReportVerificationError extends Error {
  constructor(
    readonly reason: VerifyReason,
    message: string,
  ) {
    super(message);
    this.name = "ReportVerificationError";
  }
}

/** `checkReport`'s answer: the verified report, or the reason it was refused. */
export type ReportCheck =
  | ({ verified: true } & VerifiedReport)
  | { verified: false; reason: VerifyReason; message: string };

/**
 * RFC 8785 (JCS): `value` as canonical JSON — object members sorted by their names' UTF-16 code
 * units (`Array.prototype.sort`'s default order), no whitespace, strings and numbers as
 * `JSON.stringify` writes them (ECMAScript number formatting is what JCS prescribes).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("JCS has no NaN or Infinity");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object") {
    const object = value as Record<string, unknown>;
    const members = Object.keys(object)
      .filter((k) => object[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(object[k])}`);
    return `{${members.join(",")}}`;
  }
  throw new TypeError(`not JSON: ${typeof value}`);
}

/**
 * Checks a report's `data` (a poll's or webhook's `data`, or a scan's; a monitor event's: the
 * event object, a webhook body's `data.event` or an events page's item) as a report of type
 * `expected`: its `signature.type` must be `expected` and `signature.covers` exactly that type's
 * members (`REPORT_COVERS`) — nothing the report says about itself is trusted — and the Ed25519
 * key `signature.keyId` of `keySet` (current or retired) must have signed the JCS form of those
 * members plus `"type"`. A scan has two types: expecting `xray.scan.v2` (a scan) accepts either
 * — the signature's type, `xray.scan.v2` or `xray.scan.v3` (a scan asked with `guards`), picks
 * the exact covers — as the Rust `verify_scan` does, never another type; expecting
 * `xray.scan.v3` accepts a guarded scan only. A sequence scan (`xray.scan_sequence.v1`) is
 * neither: expecting a scan refuses it, and expecting a sequence refuses a scan (`wrong_type`).
 * A scan of any of the three types signs all of its `data`: one carrying a member its type does
 * not cover (`signature` aside) is refused (`covers_mismatch`) — such as `guards` beside an
 * `xray.scan.v2` signature — for nobody signed it, and a client might read it where it reads
 * the signed ones. Then, for a scan with a `binding` (`ScanBinding`), the signed members must be
 * about the caller's own request: its transaction's message (`digest_mismatch`), account
 * (`account_mismatch`), origin (`origin_mismatch`) and signer (`signer_mismatch`); for a
 * sequence scan (`SequenceBinding`), as many transactions as held, each message in its place
 * (`digest_mismatch`), then the account, origin, signer and mode (`mode_mismatch`); a binding
 * for another type, a `mode` for a scan or a `signer` or `mode` that is not text is `malformed`.
 * Returns the key id and the covered members alone (a member added to an analysis', a
 * comparison's or an event's `data` is not among them);
 * throws `ReportVerificationError` with the first of `VERIFY_REASONS`, in their order, that
 * applies. Parsing the report's text is the caller's: a value that is no report object is
 * `malformed`. `checkReport` answers the same without throwing.
 */
export function verifyReport(
  data: unknown,
  keySet: SigningKeySet,
  expected: ReportType,
  binding?: ReportBinding,
): VerifiedReport {
  // 1. malformed: what was asked, the binding, the report, the key set.
  if (!Object.prototype.hasOwnProperty.call(REPORT_COVERS, expected)) {
    throw new ReportVerificationError("malformed", `${String(expected)} is no report type`);
  }
  // A member the binding does not know (a misspelt `acount`, a scan's `transaction` for a
  // sequence's `transactions`) would silently check nothing.
  const sequence = expected === SEQUENCE_TYPE;
  const members: readonly string[] = sequence ? SEQUENCE_BINDING_MEMBERS : BINDING_MEMBERS;
  const held = (binding ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(held).filter((k) => !members.includes(k));
  if (unknown.length > 0) {
    throw new ReportVerificationError("malformed", `no ${sequence ? "sequence " : ""}binding member ${unknown.join(", ")}`);
  }
  const bound = members.some((k) => held[k] !== undefined);
  if (bound && !sequence && !SCAN_TYPES.includes(expected)) {
    throw new ReportVerificationError("malformed", `a binding applies to a scan or a sequence scan only, not ${expected}`);
  }
  for (const name of TEXT_BINDING_MEMBERS) {
    if (held[name] !== undefined && typeof held[name] !== "string") {
      throw new ReportVerificationError("malformed", `the ${name} held is not text`);
    }
  }
  // The digests of what is held, read before anything else: one that is no transaction is malformed.
  const heldDigest = !sequence && held.transaction !== undefined ? messageSha256(held.transaction as Uint8Array | string) : undefined;
  const heldDigests = sequence && held.transactions !== undefined ? sequenceDigests(held.transactions) : undefined;
  const report = isObject(data) ? data : undefined;
  const signature = report?.signature;
  if (!report || !isObject(signature)) {
    throw new ReportVerificationError("malformed", "no data.signature (an unsigned report, or no report)");
  }
  if (signature.alg !== "EdDSA" || signature.canon !== "JCS") {
    throw new ReportVerificationError("malformed", "not an EdDSA signature over JCS");
  }
  const { type, keyId, covers } = signature;
  if (typeof type !== "string" || typeof keyId !== "string") {
    throw new ReportVerificationError("malformed", "signature.type or signature.keyId is not text");
  }
  if (!Array.isArray(covers) || !covers.every((name) => typeof name === "string")) {
    throw new ReportVerificationError("malformed", "covers is not a list of names");
  }
  const value = base64urlBytes(signature.value, "value", 64);
  const batch = "batch" in signature ? batchOf(signature.batch) : undefined;
  const keys: unknown = (keySet as unknown as Record<string, unknown> | null)?.keys;
  if (!Array.isArray(keys)) throw new ReportVerificationError("malformed", "the key set has no keys");
  // 2. unknown_key: the first key of that id.
  const jwk = (keys as unknown[]).find((k): k is Record<string, unknown> => isObject(k) && k.kid === keyId);
  if (!jwk) throw new ReportVerificationError("unknown_key", `no published key ${keyId}`);
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519") {
    throw new ReportVerificationError("malformed", "the key of that id is not an Ed25519 key");
  }
  const key = publicKeyOf(jwk.x);
  // 3. wrong_type, 4. covers_mismatch: a scan (expected `xray.scan.v2`) is either scan type, and
  // the signature's type among those two fixes its covers.
  const wanted = expected === SCAN_TYPE && SCAN_TYPES.includes(type as ReportType) ? (type as ReportType) : expected;
  if (type !== wanted) throw new ReportVerificationError("wrong_type", `a ${type} signature, not ${expected}`);
  const covered = coveredMembers(report, covers as string[], wanted);
  // A scan (any scan type) signs all of its data: a member it does not cover is refused, not
  // verified unsigned beside the signed members (a client may read it there) — guards beside an
  // `xray.scan.v2` signature, which covers none, too.
  if (SCAN_TYPES.includes(wanted) || wanted === SEQUENCE_TYPE) {
    const names: readonly string[] = REPORT_COVERS[wanted];
    const unsigned = Object.keys(report).find((name) => name !== "signature" && !names.includes(name));
    if (unsigned !== undefined) {
      throw new ReportVerificationError("covers_mismatch", `a ${wanted} signature does not cover member ${unsigned} of data`);
    }
  }
  // 5. bad_signature
  let message: Buffer;
  try {
    message = Buffer.from(canonicalJson({ ...covered, type: wanted }), "utf8");
    if (batch) message = batchEnvelope(message, batch);
  } catch (e) {
    // A value JSON cannot carry (a non-finite number, a function) has no canonical form.
    throw new ReportVerificationError("malformed", `no canonical form: ${(e as Error).message}`);
  }
  if (!verifySignature(null, message, key, value)) {
    throw new ReportVerificationError("bad_signature", "the signature does not match the report");
  }
  // 6. the binding, on what the signature attests
  if (bound && sequence) checkSequenceBinding(covered, binding as SequenceBinding, heldDigests);
  else if (bound) checkBinding(covered, binding as ScanBinding, heldDigest);
  return { keyId, covered };
}

/**
 * `verifyReport` of a sequence scan's answer (`data` of what `scanSequence` returned): its
 * signature must be `xray.scan_sequence.v1`'s over exactly that type's covers — a scan's answer
 * is refused (`wrong_type`), as a sequence's is by a scan's verifier — and, with a `binding`, it
 * must be about the caller's own request: the signed `transactions` exactly as many as
 * `binding.transactions` and item i's `transaction.messageSha256` the digest of transaction i's
 * message (`digest_mismatch`), then `account` (`account_mismatch`), `origin`
 * (`origin_mismatch`), `signer` (`signer_mismatch`) and `mode` (`mode_mismatch`). A member of
 * `data` it does not cover is refused (`covers_mismatch`). Returns the key id and the signed
 * members alone; throws
 * `ReportVerificationError` (`checkReport(data, keySet, "xray.scan_sequence.v1", binding)`
 * answers the same without throwing).
 */
export function verifyScanSequence(data: unknown, keySet: SigningKeySet, binding?: SequenceBinding): VerifiedReport {
  return verifyReport(data, keySet, SEQUENCE_TYPE, binding);
}

/**
 * `verifyReport` without throwing: `{verified: true, keyId, covered}`, or `{verified: false,
 * reason, message}` when it refuses. Anything but a refusal (a bug) still throws.
 */
export function checkReport(
  data: unknown,
  keySet: SigningKeySet,
  expected: ReportType,
  binding?: ReportBinding,
): ReportCheck {
  try {
    return { verified: true, ...verifyReport(data, keySet, expected, binding) };
  } catch (e) {
    if (e instanceof ReportVerificationError) return { verified: false, reason: e.reason, message: e.message };
    throw e;
  }
}

/** Whether `value` is a JSON object (not null, not an array). */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Refuses a scan's verified members that are not about `binding`'s transaction (`heldDigest`, its
 * message's digest, read before anything else), account, origin or signer.
 */
function checkBinding(covered: Record<string, unknown>, binding: ScanBinding, heldDigest: string | undefined): void {
  if (heldDigest !== undefined) {
    const signed = (covered.transaction as { messageSha256?: unknown } | null | undefined)?.messageSha256;
    if (heldDigest !== signed) {
      throw new ReportVerificationError("digest_mismatch", "the scan judged another transaction message");
    }
  }
  checkAsker(covered, binding, "scan");
}

/**
 * Refuses a scan's (or sequence scan's) verified members made for another account, origin or
 * signer than held, in that order.
 */
function checkAsker(covered: Record<string, unknown>, binding: ScanBinding | SequenceBinding, what: string): void {
  if (binding.account !== undefined && covered.account !== binding.account) {
    throw new ReportVerificationError("account_mismatch", `the ${what} was asked by ${String(covered.account)}`);
  }
  if (binding.origin !== undefined && covered.origin !== binding.origin) {
    throw new ReportVerificationError("origin_mismatch", `the ${what} judged the origin ${String(covered.origin)}`);
  }
  if (binding.signer !== undefined && covered.signer !== binding.signer) {
    throw new ReportVerificationError("signer_mismatch", `the ${what} judged the signer ${String(covered.signer)}`);
  }
}

/**
 * The digests of a sequence's transactions held (`messageSha256` of each, in order); a value that
 * is no list, or an item that is no transaction, is malformed.
 */
function sequenceDigests(transactions: unknown): string[] {
  if (!Array.isArray(transactions)) {
    throw new ReportVerificationError("malformed", "the transactions held are not a list");
  }
  return transactions.map((transaction, i) => {
    try {
      return messageSha256(transaction as Uint8Array | string);
    } catch (e) {
      if (e instanceof ReportVerificationError) {
        throw new ReportVerificationError("malformed", `transaction ${i} held: ${e.message}`);
      }
      throw e;
    }
  });
}

/**
 * Refuses a sequence scan's verified members that are not about `binding`'s transactions
 * (`heldDigests`, their messages' digests, read before anything else) — exactly as many signed,
 * each in its place —, account, origin, signer or mode, in that order.
 */
function checkSequenceBinding(
  covered: Record<string, unknown>,
  binding: SequenceBinding,
  heldDigests: string[] | undefined,
): void {
  if (heldDigests !== undefined) {
    const items = covered.transactions;
    if (!Array.isArray(items) || items.length !== heldDigests.length) {
      const count = Array.isArray(items) ? items.length : "no list of";
      throw new ReportVerificationError(
        "digest_mismatch",
        `the sequence judged ${count} transactions, not the ${heldDigests.length} held`,
      );
    }
    heldDigests.forEach((held, i) => {
      const item: unknown = items[i];
      const transaction = isObject(item) ? item.transaction : undefined;
      const signed = isObject(transaction) ? transaction.messageSha256 : undefined;
      if (signed !== held) {
        throw new ReportVerificationError("digest_mismatch", `the sequence judged another message as transaction ${i}`);
      }
    });
  }
  checkAsker(covered, binding, "sequence scan");
  if (binding.mode !== undefined && covered.mode !== binding.mode) {
    throw new ReportVerificationError("mode_mismatch", `the sequence scan ran in mode ${String(covered.mode)}`);
  }
}

/** Bytes of a signature in a serialized transaction. */
const SIGNATURE_BYTES = 64;

/**
 * The SHA-256 (64 lowercase hex digits) of a serialized transaction's message — its bytes after
 * the signatures: a compact-u16 count `n`, then `n` × 64 bytes — as a scan signs it in
 * `transaction.messageSha256`. Signatures added or changed after the scan leave it unchanged.
 * `transaction` is the bytes or their base64 (standard alphabet, padding optional). Throws
 * `ReportVerificationError` (`malformed`) for text that is not base64, a count that is not
 * canonical compact-u16, or more signatures than the bytes hold.
 */
export function messageSha256(transaction: Uint8Array | string): string {
  const bytes = typeof transaction === "string" ? base64Bytes(transaction) : transaction;
  if (!(bytes instanceof Uint8Array)) throw new ReportVerificationError("malformed", "the transaction is not bytes");
  const [count, length] = compactU16(bytes);
  const start = length + count * SIGNATURE_BYTES;
  if (start > bytes.length) {
    throw new ReportVerificationError("malformed", `${count} signatures do not fit in ${bytes.length} bytes`);
  }
  return createHash("sha256").update(bytes.subarray(start)).digest("hex");
}

/** Standard base64 as the scan endpoint reads it: padding optional, no other character, no stray bits. */
function base64Bytes(text: string): Buffer {
  const digits = text.replace(/=+$/, "");
  const bytes = Buffer.from(digits, "base64");
  // Buffer skips what is not base64; encoding back shows whether anything was skipped.
  if (!/^[A-Za-z0-9+/]*$/.test(digits) || bytes.toString("base64").replace(/=+$/, "") !== digits) {
    throw new ReportVerificationError("malformed", "the transaction is not base64");
  }
  return bytes;
}

/**
 * Solana's compact-u16 ("shortvec") at the start of `bytes`: [its value, its length]. 7 bits a
 * byte, least significant first, 0x80 when a byte follows; at most 3 bytes and 0xffff, and
 * canonical as Solana decodes it — a last byte 0 after the first is a value written longer
 * than it needs.
 */
function compactU16(bytes: Uint8Array): [number, number] {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    if (i >= bytes.length) throw new ReportVerificationError("malformed", "the signature count is cut short");
    const byte = bytes[i];
    if (byte === 0 && i > 0) throw new ReportVerificationError("malformed", "the signature count is not canonical");
    value |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) === 0) {
      if (value > 0xffff) throw new ReportVerificationError("malformed", "the signature count is past 0xffff");
      return [value, i + 1];
    }
  }
  throw new ReportVerificationError("malformed", "the signature count is longer than 3 bytes");
}

/** Unpadded base64url text of `length` bytes; anything else (padding, other characters, not text) is malformed. */
function base64urlBytes(text: unknown, what: string, length: number): Buffer {
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) {
    throw new ReportVerificationError("malformed", `${what} is not unpadded base64url`);
  }
  const bytes = Buffer.from(text, "base64url");
  if (bytes.length !== length) throw new ReportVerificationError("malformed", `${what} is not ${length} bytes`);
  // Decoding drops stray bits of the last digit (Rust refuses them): encoding back shows them.
  if (bytes.toString("base64url") !== text) {
    throw new ReportVerificationError("malformed", `${what} is not canonical base64url (stray bits in its last digit)`);
  }
  return bytes;
}

/** A batched signature's leaf salt and Merkle path (sides and siblings). */
interface BatchParts {
  salt: Buffer;
  path: Array<["left" | "right", Buffer]>;
}

/**
 * `signature.batch` read: `{salt: 16 bytes base64url, path: [{left|right: 64 lowercase hex}…]}`,
 * at most `BATCH_PATH_STEPS_MAX` steps, nothing else; otherwise malformed.
 */
function batchOf(batch: unknown): BatchParts {
  if (!isObject(batch) || Object.keys(batch).length !== 2 || !("salt" in batch) || !("path" in batch)) {
    throw new ReportVerificationError("malformed", "signature.batch is not {salt, path}");
  }
  const salt = base64urlBytes(batch.salt, "signature.batch.salt", 16);
  if (!Array.isArray(batch.path) || batch.path.length > BATCH_PATH_STEPS_MAX) {
    throw new ReportVerificationError("malformed", `signature.batch.path is not at most ${BATCH_PATH_STEPS_MAX} steps`);
  }
  const path = (batch.path as unknown[]).map((step): ["left" | "right", Buffer] => {
    const entries = isObject(step) ? Object.entries(step) : [];
    const [side, digits] = entries.length === 1 ? entries[0] : [undefined, undefined];
    if ((side !== "left" && side !== "right") || typeof digits !== "string" || !/^[0-9a-f]{64}$/.test(digits)) {
      throw new ReportVerificationError("malformed", "a batch path step is not left or right of 64 lowercase hex digits");
    }
    return [side, Buffer.from(digits, "hex")];
  });
  return { salt, path };
}

/**
 * What a batched signature signs: the JCS of `{root, type: "xray.batch.v1"}`, `root` the hex of
 * the node the report's leaf (`SHA-256(0x00 ‖ salt ‖ message)`) and its path lead to, each step
 * `SHA-256(0x01 ‖ left ‖ right)`.
 */
function batchEnvelope(message: Buffer, batch: BatchParts): Buffer {
  let node = createHash("sha256").update(Buffer.from([0])).update(batch.salt).update(message).digest();
  for (const [side, sibling] of batch.path) {
    const [left, right] = side === "left" ? [sibling, node] : [node, sibling];
    node = createHash("sha256").update(Buffer.from([1])).update(left).update(right).digest();
  }
  return Buffer.from(canonicalJson({ root: node.toString("hex"), type: BATCH_TYPE }), "utf8");
}

/** The Ed25519 public key of a JWK's `x`. */
function publicKeyOf(x: unknown): KeyObject {
  base64urlBytes(x, "the key's x", 32);
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: x as string }, format: "jwk" });
}

/** The members of `data` a signature of type `expected` covers, once `covers` is exactly that list. */
function coveredMembers(
  data: Record<string, unknown>,
  covers: readonly string[],
  expected: ReportType,
): Record<string, unknown> {
  const names: readonly string[] = REPORT_COVERS[expected];
  const exact = covers.length === names.length && names.every((n) => covers.includes(n));
  if (!exact) throw new ReportVerificationError("covers_mismatch", `the covers are not exactly those of ${expected}`);
  const covered: Record<string, unknown> = {};
  for (const name of names) {
    if (!Object.prototype.hasOwnProperty.call(data, name)) {
      throw new ReportVerificationError("covers_mismatch", `covered member ${name} is missing`);
    }
    covered[name] = data[name];
  }
  return covered;
}
