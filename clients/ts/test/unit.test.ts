// Tests that need no server: header parsing, webhook signatures, signed reports and a scan's
// and a sequence scan's binding — transaction(s), account, origin, signer, mode — (a key made
// here), the retry loop (a fake fetch), and that the client has a method for
// every operation of docs/openapi.json and knows its report types.
import { createHash, createHmac, generateKeyPairSync, randomBytes, sign as ed25519Sign } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  canonicalJson,
  checkReport,
  messageSha256,
  REPORT_COVERS,
  ReportVerificationError,
  verifyReport,
  verifyScanSequence,
  VERIFY_REASONS,
  type ReportBinding,
  type ReportType,
  type ScanBinding,
  type SequenceBinding,
  type SigningKeySet,
  parseRateLimit,
  parseRateLimitList,
  parseRetryAfter,
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
  XrayClient,
  XrayError,
} from "../src/index.js";

describe("RateLimit headers", () => {
  it("parses the contract's structured fields", () => {
    const h = new Headers({
      "RateLimit-Policy": '"rate";q=100;w=2, "quota";q=10000;w=2592000',
      RateLimit: '"rate";r=98;t=1, "quota";r=9999;t=654180',
    });
    const rl = parseRateLimit(h);
    assert.equal(rl.rateLimit, 100);
    assert.equal(rl.rateWindowSeconds, 2);
    assert.equal(rl.quotaLimit, 10000);
    assert.equal(rl.quotaWindowSeconds, 2592000);
    assert.equal(rl.rateRemaining, 98);
    assert.equal(rl.rateResetSeconds, 1);
    assert.equal(rl.quotaRemaining, 9999);
    assert.equal(rl.quotaResetSeconds, 654180);
  });
  it("tolerates absent headers, unknown items and junk", () => {
    assert.deepEqual(parseRateLimitList(null), {});
    assert.deepEqual(parseRateLimitList('"burst";r=3;x=y, ;, "rate";r=1'), { burst: { r: 3 }, rate: { r: 1 } });
    assert.equal(parseRateLimit(new Headers()).rateRemaining, undefined);
  });
  it("reads Retry-After as seconds or an HTTP date", () => {
    assert.equal(parseRetryAfter("7"), 7);
    assert.equal(parseRetryAfter(null), undefined);
    assert.equal(parseRetryAfter("Thu, 01 Jan 1970 00:00:10 GMT", 0), 10);
  });
});

describe("JCS (RFC 8785)", () => {
  it("canonicalizes the RFC's own examples", () => {
    const input = {
      numbers: [333333333.33333329, 1e30, 4.5, 2e-3, 0.000000000000000000000000001],
      string: "\u20ac$\u000f\nA'B\"\\\\\"/",
      literals: [null, true, false],
    };
    assert.equal(
      canonicalJson(input),
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
    const names = { "\u20ac": 1, "\r": 2, "\ufb33": 3, "1": 4, "\ud83d\ude00": 5, "\u0080": 6, "\u00f6": 7 };
    assert.equal(canonicalJson(names), '{"\\r":2,"1":4,"\u0080":6,"\u00f6":7,"\u20ac":1,"\ud83d\ude00":5,"\ufb33":3}');
  });
});

describe("signed reports (a key made here)", () => {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const kid = "0123456789abcdef";
  const x = publicKey.export({ format: "jwk" }).x!;
  const keySet = { keys: [{ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig", kid, x, status: "current" }] } as unknown as SigningKeySet;
  /** `data` signed as the server signs: JCS of the covered members plus `type`. */
  const signed = (data: Record<string, unknown>, type: string, covers: readonly string[]) => {
    const members: Record<string, unknown> = { type };
    for (const name of covers) members[name] = data[name];
    const value = ed25519Sign(null, Buffer.from(canonicalJson(members)), privateKey).toString("base64url");
    return { ...data, signature: { keyId: kid, alg: "EdDSA", canon: "JCS", type, covers: [...covers].sort(), value } };
  };
  const scanData = () => {
    const data: Record<string, unknown> = {};
    REPORT_COVERS["xray.scan.v2"].forEach((name, i) => (data[name] = { n: i }));
    return data;
  };
  const reason = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      assert.ok(e instanceof ReportVerificationError, `${e}`);
      return e.reason;
    }
    assert.fail("accepted");
  };

  it("verifies a report as its type and returns its signed members only", () => {
    const data = signed(scanData(), "xray.scan.v2", REPORT_COVERS["xray.scan.v2"]);
    const verified = verifyReport(data, keySet, "xray.scan.v2");
    assert.equal(verified.keyId, kid);
    assert.deepEqual(Object.keys(verified.covered).sort(), [...REPORT_COVERS["xray.scan.v2"]].sort());
    // A scan signs all of its data: an unsigned member added to it is refused, before the
    // signature is checked (even with a covered member changed too).
    for (const grafted of [{ xray: { score: { value: 100 } } }, { verdictOverride: "benign" }, { verdictOverride: null }]) {
      assert.equal(reason(() => verifyReport({ ...data, ...grafted }, keySet, "xray.scan.v2")), "covers_mismatch", Object.keys(grafted)[0]);
    }
    assert.equal(reason(() => verifyReport({ ...data, verdict: "benign", verdictOverride: "benign" }, keySet, "xray.scan.v2")), "covers_mismatch");
    assert.equal(reason(() => verifyReport({ ...data, verdict: "benign" }, keySet, "xray.scan.v2")), "bad_signature");
    // An analysis may carry unsigned members (its `status`, say): still verifies, and they are not returned.
    const analysis = signed(
      { analysisId: "an_1", wallet: "W", completedAt: "2025-01-01T00:00:00.000Z", xray: {}, status: "READY" },
      "xray.analysis.v1",
      REPORT_COVERS["xray.analysis.v1"],
    );
    const again = verifyReport({ ...analysis, verdictOverride: "benign" }, keySet, "xray.analysis.v1");
    assert.ok(!("verdictOverride" in again.covered) && !("status" in again.covered), "the added members are not verified");
  });

  it("refuses another type, and covers that are a subset, a superset or doubled", () => {
    const scan = signed(scanData(), "xray.scan.v2", REPORT_COVERS["xray.scan.v2"]);
    for (const other of ["xray.analysis.v1", "xray.comparison.v1"] as ReportType[]) {
      assert.equal(reason(() => verifyReport(scan, keySet, other)), "wrong_type", other);
    }
    const covers = REPORT_COVERS["xray.scan.v2"];
    const forged = [
      signed(scanData(), "xray.scan.v2", covers.slice(1)),
      signed({ ...scanData(), extra: 1 }, "xray.scan.v2", [...covers, "extra"]),
      signed(scanData(), "xray.scan.v2", [...covers.slice(1), covers[2]]),
      // A scan's members signed under an analysis' type: as an analysis its covers are wrong.
      signed(scanData(), "xray.analysis.v1", covers),
    ];
    const expected: ReportType[] = ["xray.scan.v2", "xray.scan.v2", "xray.scan.v2", "xray.analysis.v1"];
    forged.forEach((data, i) => assert.equal(reason(() => verifyReport(data, keySet, expected[i])), "covers_mismatch", `${i}`));
    const analysis = signed(
      { analysisId: "an_1", wallet: "W", completedAt: "2025-01-01T00:00:00.000Z", xray: { lamports: 2 ** 64 }, status: "READY" },
      "xray.analysis.v1",
      REPORT_COVERS["xray.analysis.v1"],
    );
    assert.equal(verifyReport(analysis, keySet, "xray.analysis.v1").keyId, kid);
    assert.equal(reason(() => verifyReport(analysis, keySet, "xray.scan.v2")), "wrong_type");
    const untyped = { ...analysis, signature: { ...analysis.signature, type: undefined } };
    assert.equal(reason(() => verifyReport(untyped, keySet, "xray.analysis.v1")), "malformed");
    // Malformed input is a refusal with a reason, never a TypeError: as the Rust verifier.
    const sig = analysis.signature as Record<string, unknown>;
    const malformed: [Record<string, unknown>, unknown][] = [
      [{ ...analysis, signature: { ...sig, value: `${String(sig.value)}==` } }, keySet],
      [{ ...analysis, signature: { ...sig, value: 7 } }, keySet],
      [analysis, { keys: "none" }],
      [analysis, { keys: [{ ...keySet.keys[0], x: 7 }] }],
      [analysis, { keys: [{ ...keySet.keys[0], x: "AAAA" }] }],
    ];
    for (const [data, keys] of malformed) {
      assert.equal(reason(() => verifyReport(data, keys as typeof keySet, "xray.analysis.v1")), "malformed");
    }
    assert.equal(reason(() => verifyReport(analysis, keySet, "xray.nothing.v1" as ReportType)), "malformed");
  });

  // A serialized transaction as the scan reads it: compact-u16 n, n signatures, the message.
  const transaction = (signatures: Buffer[], message: Buffer) =>
    Buffer.concat([Buffer.from([signatures.length]), ...signatures, message]);
  const message = randomBytes(200);
  const unsigned = transaction([Buffer.alloc(64), Buffer.alloc(64)], message);
  const ACCOUNT = "acct_3JqTmXb1QW7CeT4kz9pNvd";
  const SIGNER = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z";
  const OTHER_SIGNER = "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ";
  /** A scan's answer for `unsigned`, asked by ACCOUNT from `origin` about SIGNER, signed as the server signs it. */
  const scan = (origin: string | null) => {
    const data = scanData();
    data.account = ACCOUNT;
    data.origin = origin;
    data.signer = SIGNER;
    data.transaction = {
      version: "legacy",
      signed: false,
      messageSha256: createHash("sha256").update(message).digest("hex"),
      signatures: [
        { signer: "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z", status: "missing" },
        { signer: "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ", status: "missing" },
      ],
    };
    return signed(data, "xray.scan.v2", REPORT_COVERS["xray.scan.v2"]);
  };

  it("message digest: a known vector, the bytes after the signatures whatever their count", () => {
    // hashlib.sha256(b"xray").hexdigest() of one (zero) signature then the message b"xray"
    const vector = "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB4cmF5";
    const digest = "1a46e6a68c37e8f969bab5d6fe6ce7b4deda2a17d80e1a7142e9c005b108f608";
    assert.equal(messageSha256(vector), digest);
    assert.equal(messageSha256(`${vector}=`), digest, "a trailing = is ignored, as the scan endpoint reads base64");
    assert.equal(messageSha256(Buffer.from(vector, "base64")), digest);
    assert.equal(messageSha256(Buffer.concat([Buffer.from([0xee]), Buffer.from(vector, "base64")]).subarray(1)), digest);
    // 128 signatures: a two-byte count (0x80 0x01)
    const many = Buffer.concat([Buffer.from([0x80, 0x01]), Buffer.alloc(128 * 64), Buffer.from("xray")]);
    assert.equal(messageSha256(many), digest);
    // No signature at all: the message is everything after the count.
    assert.equal(messageSha256(Buffer.from([0x00, 0x2a])), createHash("sha256").update(Buffer.from([0x2a])).digest("hex"));
  });

  it("message digest: malformed counts and text are refused", () => {
    const malformed: [string, Uint8Array | string][] = [
      ["empty", Buffer.alloc(0)],
      ["cut short", Buffer.from([0x80])],
      ["not canonical (0x80 0x00 for 0)", Buffer.concat([Buffer.from([0x80, 0x00]), Buffer.alloc(64)])],
      ["not canonical (0x81 0x80 0x00 for 1)", Buffer.concat([Buffer.from([0x81, 0x80, 0x00]), Buffer.alloc(64)])],
      ["a third byte that continues", Buffer.concat([Buffer.from([0x80, 0x80, 0x81, 0x00]), Buffer.alloc(64)])],
      ["past 0xffff", Buffer.from([0xff, 0xff, 0x04])],
      ["0xffff signatures in 3 bytes", Buffer.from([0xff, 0xff, 0x03])],
      ["2 signatures in 64 bytes", Buffer.concat([Buffer.from([0x02]), Buffer.alloc(64), Buffer.from("message")])],
      ["not base64", "%%%"],
      ["base64url", "AQ_-"],
      ["stray bits", "AB"],
      ["a length no base64 has", "AQAAA"],
    ];
    for (const [what, bytes] of malformed) {
      assert.equal(reason(() => messageSha256(bytes)), "malformed", what);
    }
  });

  it("binds a scan to the caller's transaction, account, origin and signer", () => {
    const data = scan("phantom.app");
    const binding = { transaction: unsigned.toString("base64"), account: ACCOUNT, origin: "phantom.app" };
    assert.equal(verifyReport(data, keySet, "xray.scan.v2", binding).covered.account, ACCOUNT);
    assert.equal(verifyReport(data, keySet, "xray.scan.v2", { ...binding, transaction: unsigned }).keyId, kid);
    // Signed after the scan (other signature bytes): the same message, so the same scan.
    const signedSince = transaction([randomBytes(64), randomBytes(64)], message);
    assert.equal(verifyReport(data, keySet, "xray.scan.v2", { transaction: signedSince }).keyId, kid);
    // One byte changed anywhere in the message: another transaction.
    for (let i = 0; i < message.length; i++) {
      const changed = Buffer.from(unsigned);
      changed[1 + 128 + i] ^= 0x01;
      assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { transaction: changed })), "digest_mismatch", `${i}`);
    }
    // A changed count moves where the message starts.
    const recounted = Buffer.from(unsigned);
    recounted[0] = 1;
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { transaction: recounted })), "digest_mismatch");
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { ...binding, account: "acct_other" })), "account_mismatch");
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { ...binding, origin: "phantom.app.claim-now.io" })), "origin_mismatch");
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { origin: null })), "origin_mismatch");
    // The signer it judged: exactly the one held (base58 is case-sensitive).
    assert.equal(verifyReport(data, keySet, "xray.scan.v2", { ...binding, signer: SIGNER }).covered.signer, SIGNER);
    assert.equal(verifyReport(data, keySet, "xray.scan.v2", { signer: SIGNER }).keyId, kid);
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { ...binding, signer: OTHER_SIGNER })), "signer_mismatch");
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { signer: SIGNER.toLowerCase() })), "signer_mismatch");
    // In order: the digest, the account, the origin, then the signer.
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { origin: null, signer: OTHER_SIGNER })), "origin_mismatch");
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { account: "acct_other", signer: OTHER_SIGNER })), "account_mismatch");
    const other = Buffer.from(unsigned);
    other[other.length - 1] ^= 0x01;
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { transaction: other, signer: OTHER_SIGNER })), "digest_mismatch");
    // Members left out of the binding are not checked.
    assert.equal(verifyReport(data, keySet, "xray.scan.v2", { account: ACCOUNT }).keyId, kid);
    assert.equal(verifyReport(data, keySet, "xray.scan.v2", {}).keyId, kid);
  });

  it("binds a scan sent without an origin to origin null only", () => {
    const data = scan(null);
    assert.equal(verifyReport(data, keySet, "xray.scan.v2", { transaction: unsigned, origin: null }).covered.origin, null);
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { origin: "phantom.app" })), "origin_mismatch");
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { origin: "" })), "origin_mismatch");
  });

  it("checks the signature before the binding, and refuses a binding it cannot check", () => {
    const data = scan("phantom.app");
    // A forged account fails as a forgery, whatever the binding expects.
    const forged = { ...data, account: "acct_other" };
    assert.equal(reason(() => verifyReport(forged, keySet, "xray.scan.v2", { account: "acct_other" })), "bad_signature");
    // The binding's transaction is malformed: no digest to compare.
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { transaction: Buffer.from([0x80, 0x00]) })), "malformed");
    // A binding of another type's report, or a member no binding has (it would check nothing).
    const analysis = signed(
      { analysisId: "an_1", wallet: "W", completedAt: "2025-01-01T00:00:00.000Z", xray: {} },
      "xray.analysis.v1",
      REPORT_COVERS["xray.analysis.v1"],
    );
    assert.equal(reason(() => verifyReport(analysis, keySet, "xray.analysis.v1", { account: ACCOUNT })), "malformed");
    assert.equal(verifyReport(analysis, keySet, "xray.analysis.v1", {}).keyId, kid);
    const misspelt = { acount: "acct_other" } as unknown as ScanBinding;
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", misspelt)), "malformed");
    // A sequence's mode for a scan, a signer that is not text: malformed, before the report.
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { mode: "sequence" } as ReportBinding)), "malformed");
    for (const signer of [7, null, [SIGNER], { address: SIGNER }]) {
      const loose = { signer } as unknown as ScanBinding;
      assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", loose)), "malformed", JSON.stringify(signer));
      assert.equal(checkReport({ ...data, verdict: "benign" }, keySet, "xray.scan.v2", loose).verified, false);
    }
    assert.equal(reason(() => verifyReport(analysis, keySet, "xray.analysis.v1", { signer: SIGNER })), "malformed");
    // A forged signer fails as a forgery; an unsigned member added, before the binding.
    assert.equal(reason(() => verifyReport({ ...data, signer: OTHER_SIGNER }, keySet, "xray.scan.v2", { signer: OTHER_SIGNER })), "bad_signature");
    assert.equal(reason(() => verifyReport({ ...data, verdictOverride: "benign" }, keySet, "xray.scan.v2", { signer: OTHER_SIGNER })), "covers_mismatch");
    // A scan signed as v1 (no account, origin nor digest covered) is not a v2 scan.
    const v1 = REPORT_COVERS["xray.scan.v2"].filter((n) => n !== "account" && n !== "origin");
    assert.equal(reason(() => verifyReport(signed(scanData(), "xray.scan.v1", v1), keySet, "xray.scan.v2")), "wrong_type");
  });

  /** `scan(origin)` asked with guards: a scan's members and `guards`, signed as the server signs it (`xray.scan.v3`). */
  const guardedScan = (origin: string | null) => {
    const data: Record<string, unknown> = { ...scan(origin) };
    delete data.signature;
    data.guards = {
      slippageBps: 50,
      solToleranceLamports: 0,
      status: "added",
      guardInstructions: [
        {
          programId: "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95",
          accounts: [{ address: "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z", isSigner: false, isWritable: false }],
          // The signer's guard (AssertAccountInfoMulti): its SOL floor and its owner.
          data: "BgACALDHXaIFAAAABAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
          asserts: [
            { kind: "lamports_at_least", lamports: 24198891440 },
            { kind: "account_owner", owner: "11111111111111111111111111111111" },
          ],
        },
      ],
      guardedTransaction: "AQAAAA==",
    };
    return signed(data, "xray.scan.v3", REPORT_COVERS["xray.scan.v3"]) as Record<string, unknown> & {
      signature: Record<string, unknown>;
    };
  };

  it("verifies a guarded scan (xray.scan.v3) as a scan: its own covers, guards signed, bound", () => {
    const data = guardedScan("phantom.app");
    const binding = { transaction: unsigned, account: ACCOUNT, origin: "phantom.app" };
    // Expected as a scan, the signature's type picks the covers: `guards` is among the signed members.
    const verified = verifyReport(data, keySet, "xray.scan.v2", binding);
    assert.equal(verified.keyId, kid);
    assert.deepEqual(Object.keys(verified.covered).sort(), [...REPORT_COVERS["xray.scan.v3"]].sort());
    assert.deepEqual(verified.covered.guards, data.guards);
    assert.deepEqual(checkReport(data, keySet, "xray.scan.v2", binding), { verified: true, ...verified });
    // Expected as a guarded scan: the same; a plain scan is not one (it signed no guards).
    assert.equal(verifyReport(data, keySet, "xray.scan.v3", binding).keyId, kid);
    assert.equal(reason(() => verifyReport(scan("phantom.app"), keySet, "xray.scan.v3")), "wrong_type");
    assert.equal(verifyReport(scan("phantom.app"), keySet, "xray.scan.v2", binding).keyId, kid, "a plain scan still is a scan");
    // The binding holds for it as for a plain scan.
    const changed = Buffer.from(unsigned);
    changed[changed.length - 1] ^= 0x01;
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { transaction: changed })), "digest_mismatch");
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { account: "acct_other" })), "account_mismatch");
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { origin: null })), "origin_mismatch");
    // Its guards are signed: a weaker floor is refused, and so is an answer without them.
    const weaker = structuredClone(data);
    (weaker.guards as { guardInstructions: { asserts: { lamports: number }[] }[] }).guardInstructions[0].asserts[0].lamports = 1;
    assert.equal(reason(() => verifyReport(weaker, keySet, "xray.scan.v2")), "bad_signature");
    const dropped: Record<string, unknown> = { ...data };
    delete dropped.guards;
    assert.equal(reason(() => verifyReport(dropped, keySet, "xray.scan.v2")), "covers_mismatch");
    // Relabelled as a plain scan (covers without `guards`): a v2 signature covers no guards, so
    // carrying them is refused before the signature is checked.
    const relabelled = { ...data, signature: { ...data.signature, type: "xray.scan.v2", covers: [...REPORT_COVERS["xray.scan.v2"]].sort() } };
    assert.equal(reason(() => verifyReport(relabelled, keySet, "xray.scan.v2")), "covers_mismatch");
    // A plain scan with guards nobody signed added to its data: refused the same, never verified
    // with them beside the signed members (even as `null`).
    const plain = scan("phantom.app");
    assert.equal(reason(() => verifyReport({ ...plain, guards: data.guards }, keySet, "xray.scan.v2", binding)), "covers_mismatch");
    assert.equal(reason(() => verifyReport({ ...plain, guards: null }, keySet, "xray.scan.v2")), "covers_mismatch");
    // So is any other member nobody signed, beside a guarded scan's signature as beside a plain one's.
    assert.equal(reason(() => verifyReport({ ...plain, extra: data.guards }, keySet, "xray.scan.v2")), "covers_mismatch");
    assert.equal(reason(() => verifyReport({ ...data, verdictOverride: "benign" }, keySet, "xray.scan.v2", binding)), "covers_mismatch");
    assert.equal(reason(() => verifyReport({ ...data, verdictOverride: "benign" }, keySet, "xray.scan.v3")), "covers_mismatch");
    // Bound to its signer as a plain scan is.
    assert.equal(verifyReport(data, keySet, "xray.scan.v2", { ...binding, signer: SIGNER }).keyId, kid);
    assert.equal(reason(() => verifyReport(data, keySet, "xray.scan.v2", { ...binding, signer: OTHER_SIGNER })), "signer_mismatch");
    // Each type fixes its exact covers: v3 over v2's list, or v2 over v3's, is refused.
    const { signature: _signature, ...members } = data;
    assert.equal(reason(() => verifyReport(signed(members, "xray.scan.v3", REPORT_COVERS["xray.scan.v2"]), keySet, "xray.scan.v2")), "covers_mismatch");
    assert.equal(reason(() => verifyReport(signed(members, "xray.scan.v2", REPORT_COVERS["xray.scan.v3"]), keySet, "xray.scan.v2")), "covers_mismatch");
    // Never another type: a scan is not an analysis, a comparison or a monitor event.
    for (const other of ["xray.analysis.v1", "xray.comparison.v1", "xray.monitor_event.v1"] as ReportType[]) {
      assert.equal(reason(() => verifyReport(data, keySet, other)), "wrong_type", other);
    }
  });
  // A sequence scan: three transactions (one signature slot each, distinct messages) as sent.
  const SEQUENCE = "xray.scan_sequence.v1";
  const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
  const messages = [randomBytes(150), randomBytes(170), randomBytes(190)];
  const sequenceSent = messages.map((m) => transaction([Buffer.alloc(64)], m));
  /** A sequence scan's answer for `judged` (messages), asked by ACCOUNT from `origin` in `mode`, signed as the server signs it. */
  const sequenceScan = (origin: string | null, judged: Buffer[] = messages, mode = "sequence") => {
    const data: Record<string, unknown> = {
      verdict: "malicious",
      signer: SIGNER,
      mode,
      transactions: judged.map((m, index) => ({
        index,
        verdict: "benign",
        transaction: {
          version: "legacy",
          signed: false,
          messageSha256: sha256(m),
          signatures: [{ signer: "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z", status: "missing" }],
        },
        findings: [],
        effects: [{ kind: "sol", account: "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z", deltaLamports: -5000 }],
        instructions: [],
        simulation: { status: "ok", slot: 300000001 },
      })),
      // A drain split over the transactions: a sweep of the whole, no single one shows it.
      findings: [{ kind: "asset_sweep", severity: "critical", title: "Sweeps the wallet", detail: "…", facts: {} }],
      effects: [{ kind: "sol", account: "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z", deltaLamports: -24000000000 }],
      applied: { transactions: judged.map((_, i) => i) },
      counterparties: { checked: true, transactions: 7 },
      engineVersions: { scan: "1.4.0" },
      policy: { id: "default", version: 0 },
      origin,
      account: ACCOUNT,
      scannedAt: "2026-11-29T10:00:00.000Z",
      requestId: "ts-unit.sequence",
    };
    return signed(data, SEQUENCE, REPORT_COVERS[SEQUENCE]) as Record<string, unknown> & { signature: Record<string, unknown> };
  };
  const b64 = (bytes: Buffer) => bytes.toString("base64");

  it("verifies a sequence scan (xray.scan_sequence.v1) bound to its transactions, each in its place, its account, origin, signer and mode", () => {
    const data = sequenceScan("phantom.app");
    const binding: SequenceBinding = { transactions: sequenceSent.map(b64), account: ACCOUNT, origin: "phantom.app" };
    const verified = verifyScanSequence(data, keySet, binding);
    assert.equal(verified.keyId, kid);
    assert.deepEqual(Object.keys(verified.covered).sort(), [...REPORT_COVERS[SEQUENCE]].sort());
    assert.deepEqual(verifyReport(data, keySet, SEQUENCE, binding), verified);
    assert.deepEqual(checkReport(data, keySet, SEQUENCE, binding), { verified: true, ...verified });
    // Bytes or base64, mixed; signed since the scan (other signature bytes): the same messages.
    const signedSince = messages.map((m) => transaction([randomBytes(64)], m));
    assert.equal(verifyScanSequence(data, keySet, { transactions: [sequenceSent[0], b64(sequenceSent[1]), signedSince[2]] }).keyId, kid);
    assert.equal(verifyScanSequence(data, keySet, { transactions: signedSince }).keyId, kid);
    // Members left out of the binding are not checked; an added member (nobody signed it) is refused.
    assert.equal(verifyScanSequence(data, keySet, { account: ACCOUNT }).keyId, kid);
    assert.equal(verifyScanSequence(data, keySet).keyId, kid);
    assert.equal(reason(() => verifyScanSequence({ ...data, xray: { score: 1 } }, keySet, {})), "covers_mismatch");
    assert.equal(reason(() => verifyScanSequence({ ...data, guards: { status: "added" } }, keySet, binding)), "covers_mismatch");
    assert.equal(reason(() => verifyScanSequence({ ...data, mode: "bundle", verdictOverride: "benign" }, keySet)), "covers_mismatch");
    // Its signer and its mode, exactly.
    const full: SequenceBinding = { ...binding, signer: SIGNER, mode: "sequence" };
    assert.deepEqual(verifyScanSequence(data, keySet, full), verified);
    const bundle = sequenceScan("phantom.app", messages, "bundle");
    assert.equal(verifyScanSequence(bundle, keySet, { ...full, mode: "bundle" }).covered.mode, "bundle");
    // One transaction alone is a sequence of one.
    const one = sequenceScan(null, messages.slice(0, 1));
    assert.equal(verifyScanSequence(one, keySet, { transactions: [sequenceSent[0]], origin: null }).keyId, kid);
  });

  it("refuses a sequence scan about other transactions (digest_mismatch), then another account, origin, signer or mode", () => {
    const data = sequenceScan("phantom.app");
    const bound = (transactions: Buffer[]) => reason(() => verifyScanSequence(data, keySet, { transactions }));
    const [first, second, third] = sequenceSent;
    const other = transaction([Buffer.alloc(64)], randomBytes(170));
    assert.equal(bound([first, second]), "digest_mismatch", "one fewer");
    assert.equal(bound([first, second, third, first]), "digest_mismatch", "one more");
    assert.equal(bound([]), "digest_mismatch", "none");
    assert.equal(bound([second, first, third]), "digest_mismatch", "two swapped");
    assert.equal(bound([first, other, third]), "digest_mismatch", "one replaced");
    assert.equal(bound([first, first, third]), "digest_mismatch", "one twice");
    for (let i = 0; i < messages[1].length; i += 17) {
      const changed = Buffer.from(second);
      changed[1 + 64 + i] ^= 0x01;
      assert.equal(bound([first, changed, third]), "digest_mismatch", `byte ${i} of the second`);
    }
    // The count of judged transactions is signed: a report signed over two does not bind three.
    const two = sequenceScan("phantom.app", messages.slice(0, 2));
    assert.equal(reason(() => verifyScanSequence(two, keySet, { transactions: sequenceSent })), "digest_mismatch");
    assert.equal(verifyScanSequence(two, keySet, { transactions: [first, second] }).keyId, kid);
    // An item signed without its digest binds nothing.
    const undigested = structuredClone(data);
    delete (undigested.transactions as { transaction: Record<string, unknown> }[])[1].transaction.messageSha256;
    const { signature: _unused, ...members } = undigested;
    assert.equal(reason(() => verifyScanSequence(signed(members, SEQUENCE, REPORT_COVERS[SEQUENCE]), keySet, { transactions: sequenceSent })), "digest_mismatch");
    // Then the account and the origin, as a scan's; the digest is checked first.
    const held = sequenceSent.map(b64);
    assert.equal(reason(() => verifyScanSequence(data, keySet, { transactions: held, account: "acct_other" })), "account_mismatch");
    assert.equal(reason(() => verifyScanSequence(data, keySet, { transactions: held, origin: "phantom.app.claim-now.io" })), "origin_mismatch");
    assert.equal(reason(() => verifyScanSequence(data, keySet, { origin: null })), "origin_mismatch");
    assert.equal(reason(() => verifyScanSequence(sequenceScan(null), keySet, { origin: "phantom.app" })), "origin_mismatch");
    assert.equal(reason(() => verifyScanSequence(data, keySet, { transactions: [first], account: "acct_other" })), "digest_mismatch");
    assert.equal(reason(() => verifyScanSequence(data, keySet, { account: "acct_other", origin: null })), "account_mismatch");
    // Then the signer, then the mode.
    assert.equal(reason(() => verifyScanSequence(data, keySet, { transactions: held, signer: OTHER_SIGNER })), "signer_mismatch");
    assert.equal(reason(() => verifyScanSequence(data, keySet, { transactions: held, mode: "bundle" })), "mode_mismatch");
    assert.equal(reason(() => verifyScanSequence(sequenceScan("phantom.app", messages, "bundle"), keySet, { mode: "sequence" })), "mode_mismatch");
    assert.equal(reason(() => verifyScanSequence(data, keySet, { signer: OTHER_SIGNER, mode: "bundle" })), "signer_mismatch");
    assert.equal(reason(() => verifyScanSequence(data, keySet, { origin: null, signer: OTHER_SIGNER, mode: "bundle" })), "origin_mismatch");
    assert.equal(reason(() => verifyScanSequence(data, keySet, { transactions: [first], signer: OTHER_SIGNER, mode: "bundle" })), "digest_mismatch");
    assert.equal(reason(() => verifyScanSequence({ ...data, mode: "bundle" }, keySet, { mode: "bundle" })), "bad_signature");
  });

  it("never takes a sequence scan for a scan, nor a scan for a sequence (wrong_type)", () => {
    const sequence = sequenceScan("phantom.app");
    for (const type of ["xray.scan.v2", "xray.scan.v3", "xray.analysis.v1", "xray.comparison.v1", "xray.monitor_event.v1"] as ReportType[]) {
      assert.equal(reason(() => verifyReport(sequence, keySet, type)), "wrong_type", type);
    }
    // Even bound as a scan to its first transaction: the type is refused before any binding.
    assert.equal(reason(() => verifyReport(sequence, keySet, "xray.scan.v2", { transaction: sequenceSent[0] })), "wrong_type");
    for (const scanned of [scan("phantom.app"), guardedScan("phantom.app")]) {
      assert.equal(reason(() => verifyScanSequence(scanned, keySet)), "wrong_type");
      assert.equal(reason(() => verifyScanSequence(scanned, keySet, { transactions: [unsigned] })), "wrong_type");
    }
    // Relabelled: a sequence's members under a scan's type, a scan's under a sequence's — the
    // covers are not that type's.
    const { signature: _s, ...sequenceMembers } = sequence;
    const { signature: _t, ...scanMembers } = scan("phantom.app");
    assert.equal(reason(() => verifyReport(signed(sequenceMembers, "xray.scan.v2", REPORT_COVERS[SEQUENCE]), keySet, "xray.scan.v2")), "covers_mismatch");
    assert.equal(reason(() => verifyScanSequence(signed(scanMembers, SEQUENCE, REPORT_COVERS["xray.scan.v2"]), keySet)), "covers_mismatch");
    const relabelled = { ...sequence, signature: { ...sequence.signature, type: "xray.scan.v2" } };
    assert.equal(reason(() => verifyReport(relabelled, keySet, "xray.scan.v2")), "covers_mismatch");
    assert.equal(reason(() => verifyScanSequence(relabelled, keySet)), "wrong_type");
    // What it signs is signed: a transaction's verdict, what applied, a member gone.
    const milder = structuredClone(sequence);
    (milder.transactions as { verdict: string }[])[2].verdict = "malicious";
    assert.equal(reason(() => verifyScanSequence(milder, keySet)), "bad_signature");
    assert.equal(reason(() => verifyScanSequence({ ...sequence, applied: { transactions: [0] } }, keySet)), "bad_signature");
    assert.equal(reason(() => verifyScanSequence({ ...sequence, mode: "bundle" }, keySet)), "bad_signature");
    const { applied: _a, ...withoutApplied } = sequence;
    assert.equal(reason(() => verifyScanSequence(withoutApplied, keySet)), "covers_mismatch");
    const shortCovers = { ...sequence, signature: { ...sequence.signature, covers: REPORT_COVERS[SEQUENCE].filter((n) => n !== "mode") } };
    assert.equal(reason(() => verifyScanSequence(shortCovers, keySet)), "covers_mismatch");
  });

  it("refuses a sequence binding it cannot check, before the report (malformed)", () => {
    const data = sequenceScan("phantom.app");
    // A scan's binding member for a sequence, a sequence's for a scan: each would check nothing.
    assert.equal(reason(() => verifyReport(data, keySet, SEQUENCE, { transaction: sequenceSent[0] } as ReportBinding)), "malformed");
    assert.equal(reason(() => verifyReport(scan("phantom.app"), keySet, "xray.scan.v2", { transactions: [unsigned] } as ReportBinding)), "malformed");
    assert.equal(reason(() => verifyScanSequence(data, keySet, { transactions: b64(sequenceSent[0]) } as unknown as SequenceBinding)), "malformed");
    const analysis = signed({ analysisId: "an_1", wallet: "W", completedAt: "2025-01-01T00:00:00.000Z", xray: {} }, "xray.analysis.v1", REPORT_COVERS["xray.analysis.v1"]);
    assert.equal(reason(() => verifyReport(analysis, keySet, "xray.analysis.v1", { transactions: [unsigned] } as ReportBinding)), "malformed");
    // A held transaction that is no transaction: malformed, whatever the report (even forged).
    const none = Buffer.from([0x80, 0x00]);
    assert.equal(reason(() => verifyScanSequence(data, keySet, { transactions: [sequenceSent[0], none, sequenceSent[2]] })), "malformed");
    assert.equal(reason(() => verifyScanSequence({ ...data, verdict: "benign" }, keySet, { transactions: ["%%%"] })), "malformed");
    // A signer or mode that is not text, whatever the report.
    for (const loose of [{ signer: 7 }, { signer: null }, { mode: true }, { mode: ["sequence"] }, { mode: null }]) {
      assert.equal(reason(() => verifyScanSequence(data, keySet, loose as unknown as SequenceBinding)), "malformed", JSON.stringify(loose));
      assert.equal(reason(() => verifyScanSequence({ ...data, verdict: "benign" }, keySet, loose as unknown as SequenceBinding)), "malformed");
    }
    // A forged account is a forgery, whatever the binding expects.
    assert.equal(reason(() => verifyScanSequence({ ...data, account: "acct_other" }, keySet, { account: "acct_other" })), "bad_signature");
  });
});

describe("why a report is refused (tests/signing/refusals.json, the table every verifier is held to)", () => {
  const table = JSON.parse(readFileSync(new URL("../../../../tests/signing/refusals.json", import.meta.url), "utf8")) as {
    reasons: string[];
    keySets: Record<string, SigningKeySet>;
    cases: { name: string; type: ReportType; data: unknown; keys: string; binding?: ReportBinding; loose?: boolean; reason: string | null }[];
  };

  it("names the same reasons in the same order", () => {
    assert.deepEqual([...VERIFY_REASONS], table.reasons);
  });

  it("gives every case the reason the table names, as a throw and as a result", () => {
    for (const c of table.cases) {
      const checked = checkReport(c.data, table.keySets[c.keys], c.type, c.binding);
      assert.equal(checked.verified ? null : checked.reason, c.reason, c.name);
      if (c.reason === null) {
        assert.equal(verifyReport(c.data, table.keySets[c.keys], c.type, c.binding).keyId, checked.verified && checked.keyId, c.name);
      } else {
        assert.throws(
          () => verifyReport(c.data, table.keySets[c.keys], c.type, c.binding),
          (e) => e instanceof ReportVerificationError && e.reason === c.reason && e.message !== "",
          c.name,
        );
      }
    }
    const refused = new Set(table.cases.map((c) => c.reason).filter((r) => r !== null));
    assert.deepEqual([...refused].sort(), [...VERIFY_REASONS].sort(), "every reason has a case");
    // The Rust verifier skips the loose cases (its types rule them out): every reason needs another.
    const strict = new Set(table.cases.filter((c) => !c.loose).map((c) => c.reason).filter((r) => r !== null));
    assert.deepEqual([...strict].sort(), [...VERIFY_REASONS].sort(), "every reason has a case that is not loose");
  });

  it("refuses what JSON.parse made of no report, and a number JCS cannot write", () => {
    for (const data of [null, 7, "a report", [], { data: {} }]) {
      assert.equal(checkReport(data, table.keySets.ours, "xray.analysis.v1").verified, false);
    }
    const analysis = table.cases.find((c) => c.type === "xray.analysis.v1" && c.reason === null)!.data as Record<string, unknown>;
    const infinite = { ...analysis, xray: { lamports: JSON.parse("1e400") } };
    const checked = checkReport(infinite, table.keySets.ours, "xray.analysis.v1");
    assert.deepEqual(checked.verified ? null : checked.reason, "malformed");
  });
});

describe("webhook signatures", () => {
  // Known vectors, computed outside this package (Python's hmac module):
  //   hmac.new(b"whsec_test", b"1.{}", hashlib.sha256).hexdigest()
  const vector1 = "7500d5d4be4b3ef07af1fe56f7d522d135cdaa7530de557e67cc1049c52de094";
  const secret2 = "whsec_HLSgtp5vhxj4619uz52h2AtUWJcrNDCSAH16JfEbzrfH";
  const body2 = '{"data":{"analysisId":"an_x","status":"READY"}}';
  const vector2 = "ef3fbc03213b56430e2fd51a30762a83043b4402bdebcba5efaa32f44e40cddc";

  it("accepts the known vectors", () => {
    assert.equal(verifyWebhook("whsec_test", `t=1,v1=${vector1}`, "{}", { nowSeconds: 100 }), 1);
    assert.equal(
      verifyWebhook(secret2, `t=1764151200,v1=${vector2}`, Buffer.from(body2), { nowSeconds: 1764151200 }),
      1764151200,
    );
    assert.equal(signWebhook("whsec_test", 1, "{}"), `t=1,v1=${vector1}`);
  });

  it("agrees with an independent HMAC of `<t>.<body>`", () => {
    const body = JSON.stringify({ data: { event: { id: "evt_1", type: "risk_changed" } } });
    const t = 1_800_000_000;
    const mac = createHmac("sha256", "whsec_abc").update(`${t}.${body}`).digest("hex");
    assert.equal(verifyWebhook("whsec_abc", `t=${t},v1=${mac}`, body, { nowSeconds: t + 10 }), t);
  });

  it("refuses one tampered byte of the body, the signature, another secret, an old time", () => {
    const header = `t=1764151200,v1=${vector2}`;
    const now = { nowSeconds: 1764151200 };
    const tampered = Buffer.from(body2);
    tampered[10] ^= 0x01;
    const reason = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        assert.ok(e instanceof WebhookVerificationError);
        return e.reason;
      }
      assert.fail("accepted");
    };
    assert.equal(reason(() => verifyWebhook(secret2, header, tampered, now)), "signature_mismatch");
    const badSig = `t=1764151200,v1=${(vector2[0] === "0" ? "1" : "0") + vector2.slice(1)}`;
    assert.equal(reason(() => verifyWebhook(secret2, badSig, body2, now)), "signature_mismatch");
    assert.equal(reason(() => verifyWebhook("whsec_other", header, body2, now)), "signature_mismatch");
    assert.equal(
      reason(() => verifyWebhook(secret2, header, body2, { nowSeconds: 1764151200 + 301 })),
      "outside_tolerance",
    );
    assert.equal(reason(() => verifyWebhook(secret2, `v1=${vector2}`, body2, now)), "no_timestamp");
    assert.equal(reason(() => verifyWebhook(secret2, "t=1764151200,v1=zz", body2, now)), "no_signature");
    assert.equal(reason(() => verifyWebhook(secret2, undefined, body2, now)), "malformed_header");
  });
});

describe("retries (a fake fetch)", () => {
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

  it("retries 429 RATE_LIMITED after Retry-After with the same Idempotency-Key", async () => {
    const seen: { key: string | null; at: number }[] = [];
    const answers = [
      json(429, { error: { code: "RATE_LIMITED", message: "slow down", requestId: "r1", details: { retryAfterSeconds: 1 } } }, { "Retry-After": "1" }),
      json(503, { error: { code: "SERVICE_BUSY", message: "busy", requestId: "r2" } }, { "Retry-After": "1" }),
      json(202, { data: { analysisId: "an_1", status: "QUEUED" } }, { RateLimit: '"rate";r=5;t=1' }),
    ];
    const client = new XrayClient({
      baseUrl: "http://x.invalid/",
      apiKey: "svc_live_x",
      fetch: async (_url, init) => {
        seen.push({ key: new Headers(init?.headers).get("idempotency-key"), at: Date.now() });
        return answers.shift()!;
      },
    });
    const res = await client.analyzeWallet({ wallet: "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ" });
    assert.equal(res.status, 202);
    assert.equal(res.attempts, 3);
    assert.equal(res.rateLimit.rateRemaining, 5);
    assert.equal(seen.length, 3);
    assert.ok(seen[0].key && seen.every((s) => s.key === seen[0].key), "one key for every attempt");
    assert.equal(res.idempotencyKey, seen[0].key);
    assert.ok(seen[1].at - seen[0].at >= 950, "waited Retry-After");
  });

  it("gives up after maxRetries, and never waits a Retry-After longer than allowed", async () => {
    let calls = 0;
    const client = new XrayClient({
      baseUrl: "http://x.invalid",
      apiKey: "k",
      maxRetries: 1,
      maxRetryAfterSeconds: 5,
      fetch: async () => {
        calls++;
        return json(429, { error: { code: "QUOTA_EXHAUSTED", message: "q", requestId: "r" } }, { "Retry-After": "86400" });
      },
    });
    await assert.rejects(client.getUsage(), (e: unknown) => e instanceof XrayError && e.code === "QUOTA_EXHAUSTED" && e.retryAfterSeconds === 86400);
    assert.equal(calls, 1);
  });

  it("does not retry a 503 of a request that is not idempotent", async () => {
    let calls = 0;
    const client = new XrayClient({
      baseUrl: "http://x.invalid",
      apiKey: "k",
      fetch: async () => {
        calls++;
        return json(503, { error: { code: "SERVICE_BUSY", message: "b", requestId: "r" } }, { "Retry-After": "1" });
      },
    });
    await assert.rejects(client.createMonitor({ wallets: ["958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ"], callbackUrl: "https://hooks.example.com/x" }), XrayError);
    assert.equal(calls, 1);
  });

  it("maps a bare (non-JSON) answer to HTTP_<status>", async () => {
    const client = new XrayClient({ baseUrl: "http://x.invalid", fetch: async () => new Response("", { status: 431 }) });
    await assert.rejects(client.getStatus(), (e: unknown) => e instanceof XrayError && e.code === "HTTP_431" && e.status === 431);
  });
});

describe("coverage of the OpenAPI document", () => {
  it("has a method for every operationId", () => {
    const doc = JSON.parse(readFileSync(new URL("../../../../docs/openapi.json", import.meta.url), "utf8"));
    const ids: string[] = [];
    for (const item of Object.values<Record<string, { operationId?: string }>>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (["get", "post", "put", "patch", "delete"].includes(method) && op.operationId) ids.push(op.operationId);
      }
    }
    assert.ok(ids.length >= 16, `${ids.length} operations`);
    const proto = XrayClient.prototype as unknown as Record<string, unknown>;
    const missing = ids.filter((id) => typeof proto[id] !== "function");
    assert.deepEqual(missing, []);
  });

  it("is listed whole in the README: every public method and every exported function", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const src = readFileSync(new URL("../../src/index.ts", import.meta.url), "utf8");
    const from = src.slice(src.indexOf("export class XrayClient"));
    const cls = from.slice(0, from.indexOf("\n}\n"));
    // Public methods: declared at the class' indent without `private` (the compiled prototype
    // holds the private ones too).
    const methods = [...cls.matchAll(/^ {2}(?:async\s*\*?\s*)?([a-z]\w*)\(/gm)].map((m) => m[1]).filter((n) => n !== "constructor");
    const functions = [...src.matchAll(/^export (?:async )?function (\w+)/gm)].map((m) => m[1]);
    assert.ok(methods.length >= 20 && functions.length >= 5, `${methods.length} methods, ${functions.length} functions`);
    assert.deepEqual([...methods, ...functions].filter((n) => !readme.includes("`" + n + "(")), []);
  });

  it("names exactly the report types whose covers the verifier knows", () => {
    const doc = JSON.parse(readFileSync(new URL("../../../../docs/openapi.json", import.meta.url), "utf8"));
    const types: string[] = doc.components.schemas.ReportSignature.properties.type.enum;
    assert.deepEqual([...types].sort(), Object.keys(REPORT_COVERS).sort());
  });
});
