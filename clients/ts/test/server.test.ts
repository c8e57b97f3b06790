// Tests against the real server (`xray serve --ledger demo`), started by run-tests.sh, which
// exports XRAY_BASE_URL, XRAY_API_KEY (every scope), XRAY_NARROW_KEY (usage:read only),
// XRAY_SLOW_KEY (usage:read, a bucket of one token), XRAY_WEBHOOK_SECRET (the main key's
// account) and XRAY_DEMO_TX_* (base64 transactions of `xray ledger demo-tx`: approve, sol-transfer,
// revoke, split-drain-1 and -2).
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  ReportVerificationError,
  verifyReport,
  verifyScanSequence,
  type ReportType,
  type ScanSequenceAlone,
  verifyWebhook,
  WebhookVerificationError,
  XrayClient,
  XrayError,
} from "../src/index.js";

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests with clients/ts/run-tests.sh`);
  return v;
};
const baseUrl = env("XRAY_BASE_URL");
const client = new XrayClient({ baseUrl, apiKey: env("XRAY_API_KEY") });

// Demo ledger archetypes (README / `xray demo`).
const OPEN_DELEGATION = "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ";
const CLEAN = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z";
const OUTSIDER_NONCE = "35ze1eichArCaQ3iD7t1KaQKvw7cYksCc8G5PBdVUiVX";
const POISONING_VICTIM = "6oHJpEthxJ7d9zeu9SCgR1rPEXdhLpTsZmpQc6roQr8H";
const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";

const expectError = async (p: Promise<unknown>, code: string, status: number) => {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof XrayError, `not an XrayError: ${e}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.status, status);
    assert.match(e.requestId ?? "", /\S/);
    return e;
  }
  assert.fail(`expected ${status} ${code}`);
};

describe("the real server", () => {
  it("signs reports: verifyReport accepts them with the published keys and refuses a change", async () => {
    const keys = await new XrayClient({ baseUrl }).getSigningKeys();
    assert.equal(keys.status, 200);
    const current = keys.body.keys.find((k) => k.status === "current");
    assert.ok(current, "a current key");
    const accepted = await client.analyzeWallet({ wallet: CLEAN, refresh: true });
    const done = await client.waitForAnalysis(accepted.body.data.analysisId, { waitSeconds: 10, timeoutSeconds: 60 });
    const data = done.body.data as unknown as Record<string, unknown>;
    const verified = verifyReport(data, keys.body, "xray.analysis.v1");
    assert.equal(verified.keyId, current.kid);
    assert.deepEqual(Object.keys(verified.covered).sort(), ["analysisId", "completedAt", "wallet", "xray"]);
    const changed = JSON.parse(JSON.stringify(data));
    changed.xray.score.value = changed.xray.score.value === 1 ? 2 : 1;
    const refused = (d: Record<string, unknown>, type: ReportType, reason: string) =>
      assert.throws(() => verifyReport(d, keys.body, type), (e) => e instanceof ReportVerificationError && e.reason === reason);
    refused(changed, "xray.analysis.v1", "bad_signature");
    refused({ ...data, signature: undefined }, "xray.analysis.v1", "malformed");
    refused(data, "xray.scan.v2", "wrong_type");
  });

  it("signs scans with their time and request id: verifyReport returns those, and refuses an added member", async () => {
    const keys = await new XrayClient({ baseUrl }).getSigningKeys();
    const scan = await client.scanTransaction({ transaction: env("XRAY_DEMO_TX_APPROVE"), signer: CLEAN }, { requestId: "ts-client.scan-signed" });
    const data = scan.body.data as unknown as Record<string, unknown>;
    assert.equal(data.requestId, "ts-client.scan-signed");
    assert.equal(scan.requestId, data.requestId);
    const verified = verifyReport(data, keys.body, "xray.scan.v2");
    assert.equal(verified.covered.requestId, "ts-client.scan-signed");
    assert.match(String(verified.covered.scannedAt), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The server's scan carries its signed members alone: a member added (nobody signed it) is refused.
    assert.deepEqual(Object.keys(verified.covered).sort(), Object.keys(data).filter((k) => k !== "signature").sort());
    assert.throws(
      () => verifyReport({ ...data, xray: { score: { value: 100 } } }, keys.body, "xray.scan.v2"),
      (e) => e instanceof ReportVerificationError && e.reason === "covers_mismatch",
    );
    assert.throws(() => verifyReport(data, keys.body, "xray.analysis.v1"), (e) => e instanceof ReportVerificationError && e.reason === "wrong_type");
  });

  it("binds a signed scan to the transaction it was sent, the key's account and its origin (none)", async () => {
    const keys = await new XrayClient({ baseUrl }).getSigningKeys();
    const account = (await client.getStatus()).body.data.key.account;
    const sent = env("XRAY_DEMO_TX_APPROVE");
    const scan = await client.scanTransaction({ transaction: sent, signer: CLEAN });
    const data = scan.body.data as unknown as Record<string, unknown>;
    const verified = verifyReport(data, keys.body, "xray.scan.v2", { transaction: sent, account, origin: null, signer: CLEAN });
    assert.match(String((verified.covered.transaction as Record<string, unknown>).messageSha256), /^[0-9a-f]{64}$/);
    assert.throws(
      () => verifyReport(data, keys.body, "xray.scan.v2", { transaction: sent, signer: OPEN_DELEGATION }),
      (e) => e instanceof ReportVerificationError && e.reason === "signer_mismatch",
    );
    // The same transaction with one byte of its message changed (its last): another transaction.
    const changed = Buffer.from(sent, "base64");
    changed[changed.length - 1] ^= 0x01;
    assert.throws(
      () => verifyReport(data, keys.body, "xray.scan.v2", { transaction: changed, account, origin: null }),
      (e) => e instanceof ReportVerificationError && e.reason === "digest_mismatch",
    );
  });

  it("asks a scan for guards: the Lighthouse guards and the guarded transaction, signed xray.scan.v3 and verified as a scan", async () => {
    const keys = await new XrayClient({ baseUrl }).getSigningKeys();
    const account = (await client.getStatus()).body.data.key.account;
    const sent = env("XRAY_DEMO_TX_SOL");
    const scan = await client.scanTransaction({ transaction: sent, guards: { slippageBps: 50 } });
    const guards = scan.body.data.guards!;
    assert.equal(guards.status, "added");
    assert.equal(guards.slippageBps, 50);
    assert.equal(guards.guardInstructions[0].programId, "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95");
    // The signer's own account: its SOL floor and its owner (the System program), in one instruction.
    assert.deepEqual(guards.guardInstructions[0].asserts.map((a) => a.kind), ["lamports_at_least", "account_owner"]);
    assert.deepEqual(guards.guardInstructions[0].asserts[1], { kind: "account_owner", owner: "11111111111111111111111111111111" });
    assert.ok(Buffer.from(guards.guardedTransaction!, "base64").length <= 1232);
    assert.equal(scan.body.data.signature?.type, "xray.scan.v3");
    const data = scan.body.data as unknown as Record<string, unknown>;
    // A scan, whichever of its two types: bound to what was sent, its guards among the signed members.
    const verified = verifyReport(data, keys.body, "xray.scan.v2", { transaction: sent, account, origin: null });
    assert.deepEqual(verified.covered.guards, guards);
    assert.equal(verifyReport(data, keys.body, "xray.scan.v3").keyId, verified.keyId);
    assert.throws(() => verifyReport(data, keys.body, "xray.analysis.v1"), (e) => e instanceof ReportVerificationError && e.reason === "wrong_type");
    // Without guards (or with `false`): no `guards`, signed xray.scan.v2 as before.
    const plain = await client.scanTransaction({ transaction: sent, guards: false });
    assert.equal(plain.body.data.guards, undefined);
    assert.equal(plain.body.data.signature?.type, "xray.scan.v2");
    // A plain scan given the guarded one's guards, which it never signed: refused, not verified.
    const grafted = { ...(plain.body.data as unknown as Record<string, unknown>), guards };
    assert.throws(() => verifyReport(grafted, keys.body, "xray.scan.v2"), (e) => e instanceof ReportVerificationError && e.reason === "covers_mismatch");
    // A tolerance past a u64 is refused too.
    const past = `{"transaction":"${sent}","guards":{"solToleranceLamports":18446744073709551616}}`;
    const refused = await fetch(`${baseUrl}/v1/developer/intelligence/transaction`, {
      method: "POST",
      headers: { authorization: `Bearer ${env("XRAY_API_KEY")}`, "content-type": "application/json" },
      body: past,
    });
    assert.equal(refused.status, 400);
    // A malformed `guards` is refused before anything is charged.
    await expectError(client.scanTransaction({ transaction: sent, guards: { slippageBps: 10001 } }), "INVALID_REQUEST", 400);
  });

  it("scans a sequence and a bundle: each transaction in its place, signed xray.scan_sequence.v1 and bound, one unit each", async () => {
    const keys = await new XrayClient({ baseUrl }).getSigningKeys();
    const account = (await client.getStatus()).body.data.key.account;
    // Two transactions of the clean wallet: a SOL transfer, then an unlimited approval.
    const sent = [env("XRAY_DEMO_TX_SOL"), env("XRAY_DEMO_TX_APPROVE")];
    const units = async () => (await client.getUsage()).body.data.byOperation.transactionScan;
    const before = await units();
    const seq = await client.scanSequence(sent, {}, { requestId: "ts-client.sequence" });
    assert.equal(seq.status, 200);
    const data = seq.body.data;
    assert.equal(data.mode, "sequence");
    assert.equal(data.signer, CLEAN);
    assert.equal(data.requestId, "ts-client.sequence");
    assert.deepEqual(data.transactions.map((t) => t.index), [0, 1]);
    assert.ok(data.transactions[1].findings.some((f) => f.kind === "token_approval"));
    assert.ok(data.transactions.every((t) => /^[0-9a-f]{64}$/.test(t.transaction.messageSha256)));
    assert.ok(Array.isArray(data.applied.transactions));
    assert.equal(data.signature?.type, "xray.scan_sequence.v1");
    assert.equal((await units()) - before, 2, "one unit per transaction");
    // Verified bound to what was sent, in order; never as a scan.
    const report = data as unknown as Record<string, unknown>;
    const verified = verifyScanSequence(report, keys.body, { transactions: sent, account, origin: null, signer: CLEAN, mode: "sequence" });
    assert.deepEqual(verified.covered.transactions, data.transactions);
    const refused = (fn: () => unknown, reason: string) =>
      assert.throws(fn, (e) => e instanceof ReportVerificationError && e.reason === reason);
    refused(() => verifyScanSequence(report, keys.body, { transactions: [sent[1], sent[0]] }), "digest_mismatch");
    refused(() => verifyScanSequence(report, keys.body, { transactions: [sent[0]] }), "digest_mismatch");
    refused(() => verifyScanSequence(report, keys.body, { account: "acct_other" }), "account_mismatch");
    refused(() => verifyScanSequence(report, keys.body, { signer: OPEN_DELEGATION }), "signer_mismatch");
    refused(() => verifyScanSequence(report, keys.body, { transactions: sent, mode: "bundle" }), "mode_mismatch");
    refused(() => verifyReport(report, keys.body, "xray.scan.v2"), "wrong_type");
    const single = await client.scanTransaction({ transaction: sent[0] });
    refused(() => verifyScanSequence(single.body.data as unknown as Record<string, unknown>, keys.body), "wrong_type");
    // A bundle of the same, through scanTransaction's sequence form.
    const bundle = await client.scanTransaction({ transactions: sent, mode: "bundle" });
    assert.equal(bundle.body.data.mode, "bundle");
    assert.equal(verifyScanSequence(bundle.body.data as unknown as Record<string, unknown>, keys.body, { transactions: sent, mode: "bundle" }).keyId, verified.keyId);
    refused(() => verifyScanSequence(bundle.body.data as unknown as Record<string, unknown>, keys.body, { mode: "sequence" }), "mode_mismatch");
    // The sequence form's refusals: 400 naming the field, charged nothing.
    const charged = await units();
    const post = (body: unknown) =>
      fetch(`${baseUrl}/v1/developer/intelligence/transaction`, {
        method: "POST",
        headers: { authorization: `Bearer ${env("XRAY_API_KEY")}`, "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
    // [body, status, code, details.field, what the message names]
    const refusals: [unknown, number, string, string | undefined, RegExp?][] = [
      [{ transaction: sent[0], transactions: sent }, 400, "INVALID_REQUEST", "transactions"],
      [{ signer: CLEAN }, 400, "INVALID_REQUEST", "transaction"],
      [{ transactions: [] }, 400, "INVALID_REQUEST", "transactions"],
      [{ transactions: [...sent, ...sent, ...sent] }, 400, "INVALID_REQUEST", "transactions"],
      [{ transactions: [sent[0], 7] }, 400, "INVALID_REQUEST", "transactions"],
      [{ transactions: sent, mode: "parallel" }, 400, "INVALID_REQUEST", "mode"],
      [{ transaction: sent[0], mode: "bundle" }, 400, "INVALID_REQUEST", "mode"],
      [{ transactions: sent, guards: true }, 400, "INVALID_REQUEST", "guards"],
      // The signer must sign every one: the first (else `signer`, as for one), then each after it.
      [{ transactions: sent, signer: OPEN_DELEGATION }, 400, "INVALID_REQUEST", "signer"],
      [{ transactions: [sent[0], env("XRAY_DEMO_TX_REVOKE")] }, 400, "INVALID_REQUEST", "transactions", /transactions\[1\]/],
      [{ transactions: [sent[0], "%%%"] }, 400, "INVALID_TRANSACTION", undefined, /transactions\[1\]: /],
    ];
    for (const [body, status, code, field, names] of refusals) {
      const answer = await post(body);
      const error = ((await answer.json()) as { error: { code: string; message: string; details?: { field?: string } } }).error;
      assert.equal(answer.status, status, JSON.stringify(body).slice(0, 80));
      assert.equal(error.code, code, error.message);
      if (field !== undefined) assert.equal(error.details?.field, field, error.message);
      if (names !== undefined) assert.match(error.message, names);
    }
    // The route's bound: 16 KiB (five transactions of 1,232 bytes fit).
    const large = await post({ transactions: ["A".repeat(17_000)] });
    assert.equal(large.status, 413);
    const tooLarge = ((await large.json()) as { error: { code: string; details: { maxBytes: number } } }).error;
    assert.deepEqual([tooLarge.code, tooLarge.details.maxBytes], ["PAYLOAD_TOO_LARGE", 16384]);
    assert.equal(await units(), charged, "refusals are free");
  });

  it("catches a drain split over two transactions in their sequence, which neither shows alone", async () => {
    const keys = await new XrayClient({ baseUrl }).getSigningKeys();
    const sent = [env("XRAY_DEMO_TX_SPLIT_1"), env("XRAY_DEMO_TX_SPLIT_2")];
    for (const one of sent) {
      const alone = await client.scanTransaction({ transaction: one });
      assert.ok(!alone.body.data.findings.some((f) => f.kind === "asset_sweep"), "no sweep alone");
    }
    const seq = await client.scanSequence(sent);
    const data = seq.body.data;
    assert.deepEqual(data.applied.transactions, [0, 1]);
    assert.ok(data.transactions.every((t) => t.simulation.status === "ok" && !t.findings.some((f) => f.kind === "asset_sweep")));
    // The second also alone, on the ledger as it is (8 % of the SOL: no sweep); the first has no `alone`.
    assert.equal(data.transactions[0].alone, undefined);
    const alone: ScanSequenceAlone | undefined = data.transactions[1].alone;
    assert.deepEqual([alone?.verdict, alone?.simulation.status, alone?.findings.length], ["benign", "ok", 0]);
    // The whole: a sweep on the cumulative balances, and the verdict it gives.
    assert.ok(data.findings.some((f) => f.kind === "asset_sweep"), JSON.stringify(data.findings));
    assert.notEqual(data.verdict, "benign");
    const own = data.effects.find((e) => e.kind === "sol" && "account" in e && e.account === CLEAN) as { deltaLamports: number } | undefined;
    const each = data.transactions.map((t) => (t.effects.find((e) => e.kind === "sol" && "account" in e && e.account === CLEAN) as { deltaLamports: number }).deltaLamports);
    assert.equal(own?.deltaLamports, each[0] + each[1], "the cumulative effect is the sum of the parts");
    // Signed over the whole: bound to both, in order.
    const verified = verifyScanSequence(data as unknown as Record<string, unknown>, keys.body, { transactions: sent });
    assert.deepEqual(verified.covered.findings, data.findings);
  });

  it("health and status", async () => {
    const health = await new XrayClient({ baseUrl }).getHealth();
    assert.equal(health.body.status, "ok");
    const status = await client.getStatus({ requestId: "ts-client.status-1" });
    assert.equal(status.requestId, "ts-client.status-1");
    assert.ok(status.body.data.scopes.some((s) => s.scope === "wallet:analyze" && s.granted));
    assert.equal(status.rateLimit.rateLimit, 100000);
    assert.equal(typeof status.rateLimit.rateRemaining, "number");
  });

  it("analyzes a demo wallet and long-polls it to READY", async () => {
    const accepted = await client.analyzeWallet({ wallet: OPEN_DELEGATION, refresh: true });
    assert.equal(accepted.status, 202);
    assert.match(accepted.body.data.analysisId, /^an_/);
    assert.equal(accepted.location, accepted.body.data.pollUrl);
    assert.equal(accepted.retryAfterSeconds, 1);
    assert.equal(typeof accepted.rateLimit.quotaRemaining, "number");
    const done = await client.waitForAnalysis(accepted.body.data.analysisId, { waitSeconds: 10, timeoutSeconds: 60 });
    assert.equal(done.body.data.status, "READY");
    const xray = done.body.data.xray!;
    assert.equal(xray.wallet, OPEN_DELEGATION);
    assert.ok(xray.score.value >= 0 && xray.score.value <= 100);
    assert.ok(xray.signals.length > 0);
    // a poll of a finished job answers at once, without Retry-After
    const again = await client.getAnalysis(accepted.body.data.analysisId, { wait: 30 });
    assert.equal(again.body.data.status, "READY");
    assert.equal(again.retryAfterSeconds, undefined);
  });

  it("sends feedback on a signal (201, then 200 replacing it) and a miss", async () => {
    const done = await client.analyzeWalletAndWait({ wallet: OPEN_DELEGATION }, { waitSeconds: 10, timeoutSeconds: 60 });
    const analysisId = done.body.data.analysisId;
    const signalId = done.body.data.xray!.signals[0].id;
    const first = await client.submitFeedback({ analysisId, signalId, verdict: "false_positive" });
    assert.ok(first.status === 201 || first.status === 200);
    assert.ok(first.body.data.target === "analysis");
    assert.equal(first.body.data.signalId, signalId);
    assert.match(first.body.data.feedbackId, /^fb_/);
    const again = await client.submitFeedback({ analysisId, signalId, verdict: "confirmed", note: "on reflection" });
    assert.equal(again.status, 200);
    assert.equal(again.body.data.feedbackId, first.body.data.feedbackId);
    assert.equal(again.body.data.verdict, "confirmed");
    const missed = await client.submitFeedback({ analysisId, verdict: "missed" });
    assert.ok(missed.body.data.target === "analysis" && missed.body.data.signalKind === null);
    await expectError(client.submitFeedback({ analysisId: "an_nope", verdict: "missed" }), "NOT_FOUND", 404);
  });

  it("sends a scan's answer back as feedback and reads the account's feedback, newest first", async () => {
    const scan = await client.scanTransaction({ transaction: env("XRAY_DEMO_TX_APPROVE"), signer: CLEAN });
    const given = await client.submitScanFeedback(scan.body, "false_positive", "our own vault");
    assert.ok(given.status === 201 || given.status === 200);
    const record = given.body.data;
    assert.ok(record.target === "scan");
    assert.equal(record.requestId, scan.body.data.requestId);
    assert.equal(record.scanVerdict, scan.body.data.verdict);
    assert.ok(record.findingKinds.includes("token_approval"));
    const again = await client.submitScanFeedback(scan.body, "false_negative");
    assert.equal(again.status, 200);
    assert.equal(again.body.data.feedbackId, record.feedbackId);
    // a changed verdict is not this server's signature any more
    const tampered = structuredClone(scan.body);
    tampered.data.verdict = "benign";
    try {
      await client.submitScanFeedback(tampered, "false_negative");
      assert.fail("a tampered answer was accepted");
    } catch (e) {
      assert.ok(e instanceof XrayError && e.status === 422 && e.code === "REPORT_NOT_VERIFIED", String(e));
      assert.equal(e.details?.reason, "bad_signature");
    }
    // the newest record first; pages follow nextAfter
    const page = await client.listFeedback({ limit: 1 });
    assert.equal(page.body.data.feedback[0].feedbackId, record.feedbackId);
    assert.equal(page.body.data.feedback[0].verdict, "false_negative");
    const all = [];
    for await (const item of client.allFeedback(1)) all.push(item);
    assert.ok(all.length >= 1 && all[0].feedbackId === record.feedbackId);
    assert.equal(new Set(all.map((f) => f.feedbackId)).size, all.length);
  });

  it("compares two wallets", async () => {
    const done = await client.compareWalletsAndWait({ walletA: OPEN_DELEGATION, walletB: CLEAN }, { timeoutSeconds: 60 });
    assert.equal(done.body.data.status, "READY");
    const c = done.body.data.comparison!;
    assert.ok(c.similarity >= 0 && c.similarity <= 1);
    assert.ok([c.walletA.address, c.walletB.address].includes(CLEAN));
    const again = await client.getComparison(done.body.data.pairId);
    assert.equal(again.body.data.pairId, done.body.data.pairId);
  });

  it("analyzes a batch", async () => {
    const res = await client.analyzeWallets({ wallets: [OUTSIDER_NONCE, POISONING_VICTIM, "not-an-address"] });
    assert.equal(res.status, 200);
    const items = res.body.data.items;
    assert.equal(items.length, 3);
    assert.ok("analysisId" in items[0] && items[0].analysisId.startsWith("an_"));
    assert.ok("error" in items[2] && items[2].error.code === "INVALID_ADDRESS");
  });

  it("replays an idempotent request (same key → Idempotent-Replayed: true, same job)", async () => {
    const idempotencyKey = `ts-${randomUUID()}`;
    const first = await client.analyzeWallet({ wallet: CLEAN, refresh: true }, { idempotencyKey });
    assert.equal(first.replayed, false);
    assert.equal(first.idempotencyKey, idempotencyKey);
    const second = await client.analyzeWallet({ wallet: CLEAN, refresh: true }, { idempotencyKey });
    assert.equal(second.replayed, true);
    assert.equal(second.headers.get("idempotent-replayed"), "true");
    assert.equal(second.body.data.analysisId, first.body.data.analysisId);
    // the same key with another request is refused
    await expectError(client.analyzeWallet({ wallet: OPEN_DELEGATION }, { idempotencyKey }), "IDEMPOTENCY_KEY_REUSED", 409);
  });

  it("maps 4xx answers to XrayError with the contract's code", async () => {
    const bad = await expectError(client.analyzeWallet({ wallet: "0OIl" }), "INVALID_ADDRESS", 400);
    assert.equal(bad.details?.field, "wallet");
    const ineligible = await expectError(client.analyzeWallet({ wallet: TOKEN_PROGRAM }), "ACCOUNT_NOT_ELIGIBLE", 422);
    assert.equal(ineligible.details?.field, "wallet");
    await expectError(client.getAnalysis("an_1111111111111111111111"), "NOT_FOUND", 404);
    await expectError(client.compareWallets({ walletA: CLEAN, walletB: CLEAN }), "INVALID_REQUEST", 400);
    const narrow = new XrayClient({ baseUrl, apiKey: env("XRAY_NARROW_KEY") });
    const scope = await expectError(narrow.analyzeWallet({ wallet: CLEAN }), "INSUFFICIENT_SCOPE", 403);
    assert.equal(scope.details?.requiredScope, "wallet:analyze");
    assert.equal(scope.rateLimit?.rateLimit, 100000);
    const nobody = new XrayClient({ baseUrl, apiKey: "svc_live_nope" });
    const unauth = await expectError(nobody.getStatus(), "UNAUTHENTICATED", 401);
    assert.equal(unauth.details?.reason, "malformed");
  });

  it("honours Retry-After on 429 RATE_LIMITED (a key with a bucket of one token)", async () => {
    const retries: number[] = [];
    const slow = new XrayClient({
      baseUrl,
      apiKey: env("XRAY_SLOW_KEY"),
      onRetry: ({ delaySeconds, error }) => {
        assert.equal(error.code, "RATE_LIMITED");
        retries.push(delaySeconds);
      },
    });
    await slow.getUsage();
    const t0 = Date.now();
    const res = await slow.getUsage();
    assert.equal(res.status, 200);
    assert.ok(retries.length >= 1, "the second request was rate limited and retried");
    assert.ok(Date.now() - t0 >= 900, "waited for Retry-After");
    // without retries the refusal surfaces as an XrayError that says when to come back
    const e = await expectError(slow.getUsage({ maxRetries: 0 }), "RATE_LIMITED", 429);
    assert.ok((e.retryAfterSeconds ?? 0) >= 1);
    assert.equal(e.rateLimit?.rateRemaining, 0);
  });

  it("reports usage", async () => {
    const usage = await client.getUsage();
    assert.ok(usage.body.data.quota.used + usage.body.data.quota.reserved >= 1);
    assert.ok(usage.body.data.byOperation.walletAnalysis >= 1);
    assert.equal(usage.rateLimit.quotaLimit, 1000000);
  });

  it("scans real transactions of the demo ledger", async () => {
    const approve = await client.scanTransaction({ transaction: env("XRAY_DEMO_TX_APPROVE"), signer: CLEAN });
    assert.equal(approve.status, 200);
    assert.equal(approve.body.data.signer, CLEAN);
    assert.ok(approve.body.data.findings.some((f) => f.kind === "token_approval"));
    assert.notEqual(approve.body.data.verdict, "looks_safe");
    const transfer = await client.scanTransaction({ transaction: env("XRAY_DEMO_TX_SOL"), signer: CLEAN });
    assert.ok(transfer.body.data.effects.length >= 1);
    await expectError(client.scanTransaction({ transaction: "%%%" }), "INVALID_TRANSACTION", 400);
  });

  it("creates, reads, lists, changes and deletes a monitor", async () => {
    const created = await client.createMonitor({
      wallets: [OPEN_DELEGATION, CLEAN],
      callbackUrl: "https://hooks.example.com/xray",
      minSeverity: "high",
    });
    assert.equal(created.status, 201);
    const id = created.body.data.id;
    assert.match(id, /^mon_/);
    const got = await client.getMonitor(id);
    assert.deepEqual([...got.body.data.wallets].sort(), [OPEN_DELEGATION, CLEAN].sort());
    assert.ok(Array.isArray(got.body.data.watches));
    // The re-analysis budget of the day (issue #40): the defaults, nothing used yet.
    assert.equal(got.body.data.reanalysesPerDay, 100);
    assert.equal(got.body.data.dustLamports, 100_000);
    assert.equal(got.body.data.budget.period, "utc_day");
    assert.equal(got.body.data.budget.limit, 100);
    const ids: string[] = [];
    for await (const m of client.allMonitors(1)) ids.push(m.id);
    assert.ok(ids.includes(id));
    const changed = await client.changeMonitor(id, {
      removeWallets: [CLEAN],
      addWallets: [OUTSIDER_NONCE],
      scoreDrop: 10,
      reanalysesPerDay: 24,
    });
    assert.deepEqual([...changed.body.data.wallets].sort(), [OPEN_DELEGATION, OUTSIDER_NONCE].sort());
    assert.equal(changed.body.data.scoreDrop, 10);
    assert.equal(changed.body.data.reanalysesPerDay, 24);
    const events = await client.listMonitorEvents(id, { limit: 10 });
    assert.ok(Array.isArray(events.body.data.events));
    // callbackUrl: null makes it poll-only (its events are read, never sent); a monitor made
    // without one is poll-only from the start (issue #42 item 1).
    const polled = await client.changeMonitor(id, { callbackUrl: null });
    assert.equal(polled.body.data.callbackUrl, null);
    const pollOnly = await client.createMonitor({ wallets: [CLEAN], scoreDrop: 10 });
    assert.equal(pollOnly.status, 201);
    assert.equal(pollOnly.body.data.callbackUrl, null);
    await client.deleteMonitor(pollOnly.body.data.id);
    await expectError(client.redeliverMonitorEvent(id, "evt_1111111111111111111111"), "NOT_FOUND", 404);
    const deleted = await client.deleteMonitor(id);
    assert.equal(deleted.body.data.deleted, true);
    await expectError(client.getMonitor(id), "NOT_FOUND", 404);
    await expectError(client.deleteMonitor(id), "NOT_FOUND", 404);
  });

  it("reads and replaces the account's policy, with a compare-and-set", async () => {
    const first = await client.getPolicy();
    const before = first.body.data.policy.version;
    const written = await client.putPolicy({ version: before, severityOverrides: { new_wallet: "ignore" } });
    assert.equal(written.body.data.policy.version, before + 1);
    assert.match(written.body.data.policy.id, /^pol_/);
    assert.deepEqual(written.body.data.policy.severityOverrides, { new_wallet: "ignore" });
    assert.deepEqual((await client.getPolicy()).body.data.policy, written.body.data.policy);
    await expectError(client.putPolicy({ version: before, denyList: [] }), "CONFLICT", 409);
    await expectError(client.putPolicy({ weights: { authority_exposure: 1, asset_risk: 1, counterparty_risk: 0, behaviour: 0, data_quality: 0 } }), "INVALID_REQUEST", 400);
  });

  describe("a webhook the server delivers", () => {
    const deliveries: { headers: IncomingMessage["headers"]; body: Buffer }[] = [];
    let waiters: (() => void)[] = [];
    const hook = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        deliveries.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(204).end();
        waiters.forEach((w) => w());
        waiters = [];
      });
    });
    before(() => new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", resolve)));
    after(() => new Promise<void>((resolve) => hook.close(() => resolve())));

    it("is signed with the account's secret (verifyWebhook), and a tampered byte is refused", async () => {
      const { port } = hook.address() as AddressInfo;
      const accepted = await client.analyzeWallet({
        wallet: POISONING_VICTIM,
        refresh: true,
        callbackUrl: `http://127.0.0.1:${port}/hook`,
      });
      const deadline = Date.now() + 30_000;
      while (!deliveries.some((d) => d.headers["xray-webhook-id"] === accepted.body.data.analysisId)) {
        assert.ok(Date.now() < deadline, "no delivery within 30 s");
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 500);
        });
      }
      const d = deliveries.find((x) => x.headers["xray-webhook-id"] === accepted.body.data.analysisId)!;
      const header = d.headers["xray-signature"] as string;
      const secret = env("XRAY_WEBHOOK_SECRET");
      const t = verifyWebhook(secret, header, d.body);
      assert.ok(Math.abs(t - Date.now() / 1000) < 60);
      assert.equal(JSON.parse(d.body.toString("utf8")).data.analysisId, accepted.body.data.analysisId);
      const tampered = Buffer.from(d.body);
      tampered[tampered.length - 2] ^= 0x20;
      assert.throws(() => verifyWebhook(secret, header, tampered), (e: unknown) => e instanceof WebhookVerificationError && e.reason === "signature_mismatch");
      assert.throws(() => verifyWebhook("whsec_wrong", header, d.body), WebhookVerificationError);
    });
  });
});
