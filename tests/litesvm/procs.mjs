// Processes of the xray binary the tests start: each on 127.0.0.1 and a free port, waited for
// with a bound, and ended (by its own pid) when the test ends or the test process exits.

import { spawn, execFile } from "node:child_process";
import { existsSync } from "node:fs";
import net from "node:net";
import { promisify } from "node:util";
import { parseJson } from "./util.mjs";

const execFileP = promisify(execFile);

export const XRAY_BIN = process.env.XRAY_BIN || `${process.env.CARGO_TARGET_DIR || "/var/tmp/xray-target"}/release/xray`;

export function requireBinary() {
  if (!existsSync(XRAY_BIN)) throw new Error(`the xray binary is missing: ${XRAY_BIN} (set XRAY_BIN)`);
  return XRAY_BIN;
}

const children = new Set();
const killAll = () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) try { c.kill("SIGKILL"); } catch {}
};
process.on("exit", killAll);
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.once(signal, () => {
    killAll();
    process.exit(128 + (signal === "SIGTERM" ? 15 : 2));
  });
}

/** A port the kernel says is free now (listen on 0, read it, close). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Run `xray args…` to completion (bounded); {code, stdout, stderr}. */
export async function xray(args, { timeoutMs = 30_000 } = {}) {
  try {
    const { stdout, stderr } = await execFileP(requireBinary(), args, { timeout: timeoutMs, maxBuffer: 64 << 20 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    if (e.killed) throw new Error(`xray ${args.join(" ")}: killed after ${timeoutMs} ms`);
    return { code: e.code ?? 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

export async function xrayJson(args, opts) {
  const r = await xray(args, opts);
  if (r.code !== 0) throw new Error(`xray ${args.join(" ")} exited ${r.code}: ${r.stderr.slice(0, 500)}`);
  return parseJson(r.stdout);
}

// A long-running xray runs under a small bash watchdog: it ends xray when the test process is
// gone, even when that process died without running its exit handlers (an abort), and passes a
// SIGTERM on to it. Its exit status is xray's.
const WATCHDOG = `"$@" & child=$!
echo "xray-watchdog: pid $child" >&2
trap 'kill -TERM $child 2>/dev/null; wait $child; exit $?' TERM INT
while kill -0 "$WATCHED" 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 0.3; done
kill -0 $child 2>/dev/null && kill -TERM $child 2>/dev/null
wait $child`;

/** A long-running xray process; `out` and `err` accumulate its output. */
export function startXray(args, { env } = {}) {
  const child = spawn("bash", ["-c", WATCHDOG, "xray-watchdog", requireBinary(), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env, WATCHED: String(process.pid) },
  });
  children.add(child);
  const proc = { child, out: "", err: "", args };
  child.stdout.on("data", (d) => (proc.out += d));
  child.stderr.on("data", (d) => (proc.err += d));
  proc.exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  proc.stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const t = setTimeout(() => {
        // xray did not drain within 5 s: end it and its watchdog.
        const pid = Number(/xray-watchdog: pid (\d+)/.exec(proc.err)?.[1]);
        if (pid) try { process.kill(pid, "SIGKILL"); } catch {}
        child.kill("SIGKILL");
      }, 5000);
      await proc.exited;
      clearTimeout(t);
    }
    children.delete(child);
  };
  return proc;
}

/** Poll `probe()` until it is truthy; fail with the process's output after `ms`. */
export async function waitFor(probe, { ms = 20_000, proc, what = "process" } = {}) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    if (proc && (proc.child.exitCode !== null || proc.child.signalCode !== null)) {
      throw new Error(`${what} exited early (${proc.child.exitCode ?? proc.child.signalCode}):\n${proc.out}\n${proc.err}`);
    }
    try {
      const v = await probe();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} not ready within ${ms} ms (${last?.message ?? "no answer"})${proc ? `:\n${proc.out}\n${proc.err}` : ""}`);
}

/** `xray ledger serve --ledger demo` on a free port; resolves once it answers JSON-RPC. */
export async function startDemoRpc() {
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const proc = startXray(["ledger", "serve", "--ledger", "demo", "--listen", `127.0.0.1:${port}`]);
    proc.url = `http://127.0.0.1:${port}`;
    try {
      await waitFor(
        async () => {
          const r = await fetch(proc.url, { method: "POST", headers: { "content-type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[]}', signal: AbortSignal.timeout(2000) });
          return r.status === 200;
        },
        { proc, what: "xray ledger serve" },
      );
      return proc;
    } catch (e) {
      await proc.stop();
      if (attempt === 2 || !/exited early/.test(e.message)) throw e;
    }
  }
}

/** `method path` of the API at `base` with a bearer key and a JSON body: {status, text, headers}. */
export async function callApi(base, key, method, path, body, { timeoutMs = 15_000 } = {}) {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: r.status, text: await r.text(), headers: r.headers };
}
