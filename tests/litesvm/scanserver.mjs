// One `xray serve --ledger rpc:<shim>` for a test file: a fresh data dir, free loopback ports
// (retried when a port was taken meanwhile), the given addresses labelled `flagged`, ready once
// /healthz answers and the service key is printed (scan.test.mjs and guards.test.mjs start theirs here;
// sequence.test.mjs its `xray serve --ledger demo`, with `{ledger: "demo"}` and no shim).
//
//   const server = await startScanServer(shim, { flagged: [ATTACKER.publicKey.toBase58()] });
//   const demo = await startScanServer(null, { ledger: "demo" });
//   const { status, text } = await server.scan({ transaction, guards: true });
//   await server.stop();

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startXray, freePort, waitFor, requireBinary, callApi } from "./procs.mjs";

export const SCAN_PATH = "/v1/developer/intelligence/transaction";

export async function startScanServer(shim, { flagged = [], ledger = `rpc:${shim?.url}` } = {}) {
  requireBinary();
  const dir = mkdtempSync(path.join(tmpdir(), "xray-litesvm-"));
  const labels = path.join(dir, "labels.toml");
  writeFileSync(
    labels,
    `version = 1\n` +
      flagged.map((address) => `\n[[label]]\naddress = "${address}"\nname = "LiteSVM harness attacker"\ncategory = "flagged"\ntags = ["attacker"]\n`).join(""),
  );
  let proc;
  let base;
  for (let attempt = 0; ; attempt++) {
    const [port, admin] = [await freePort(), await freePort()];
    proc = startXray([
      "serve", "--ledger", ledger, "--listen", `127.0.0.1:${port}`, "--admin-listen", `127.0.0.1:${admin}`,
      "--data-dir", path.join(dir, `data-${attempt}`), "--labels-extra", labels, "--listener-threads", "1", "--compute-threads", "1",
    ]);
    base = `http://127.0.0.1:${port}`;
    try {
      await waitFor(async () => {
        const r = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) });
        return r.status === 200 && /^svc_live_\S+/m.test(proc.out);
      }, { proc, what: "xray serve", ms: 20_000 });
      break;
    } catch (e) {
      await proc.stop();
      if (attempt >= 2 || !/address|in use|bind/i.test(e.message)) {
        rmSync(dir, { recursive: true, force: true });
        throw e;
      }
    }
  }
  const key = proc.out.match(/^(svc_live_\S+)/m)[1];
  return {
    base,
    key,
    proc,
    /** POST the scan endpoint (retried on 429, bounded): {status, text}. */
    async scan(body, { timeoutMs = 15_000 } = {}) {
      for (let attempt = 0; ; attempt++) {
        const r = await callApi(base, key, "POST", SCAN_PATH, body, { timeoutMs });
        if (r.status === 429 && attempt < 5) {
          await new Promise((ok) => setTimeout(ok, 1000 * Math.min(5, Number(r.headers.get("retry-after") ?? 1))));
          continue;
        }
        return { status: r.status, text: r.text };
      }
    },
    async stop() {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
