// Fix instructions executed in a LiteSVM of their own, in a child process.
//
// Why a child: in litesvm 0.8.0's linux-x64 binding some executions corrupted the process's memory
// and node died later with "std::bad_alloc" (LiteSVM issue #171): the Associated Token Account
// program always, the (BPF) Stake program when an instruction failed. litesvm 1.5.0 no longer does
// (tests/litesvm/README.md); the child stays because it costs little and keeps any crash of the
// binding on a fix a clear test failure, not a crash of the test file — it executes, prints its
// result and exits at once.
//
//   const r = await runIsolated({ accounts, feePayer, instructions, read });
//   accounts: [[address, raw | null]] (programs and sysvars are LiteSVM's own: skipped)
//   instructions: [{programId, accounts: [{pubkey, isSigner, isWritable}], data (base58)}]
//   r = {ok, err, logs, post: Map(address -> raw | null)} for the addresses in `read`

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import { PublicKey, Transaction, TransactionInstruction } from "@solana/web3.js";
import { IDS } from "./layouts.mjs";
import { bs58, rawAccount, setRawAccount, stringify, parseJson } from "./util.mjs";

const SELF = fileURLToPath(import.meta.url);

const toJson = (raw) => raw && { lamports: raw.lamports, owner: raw.owner, data: Buffer.from(raw.data).toString("base64"), executable: raw.executable, rentEpoch: raw.rentEpoch };
const fromJson = (j) => j && { lamports: BigInt(j.lamports), owner: j.owner, data: Buffer.from(j.data, "base64"), executable: j.executable, rentEpoch: BigInt(j.rentEpoch) };

/** Runs in the child: one transaction of `instructions`, signature checks off, `feePayer` pays. */
function execute(job) {
  const svm = new LiteSVM().withSigverify(false);
  for (const [address, j] of job.accounts) {
    if (!j) continue;
    if (j.executable || j.owner === IDS.sysvar || address.startsWith("Sysvar")) continue;
    setRawAccount(svm, address, fromJson(j));
  }
  // A fix is signed later: at a blockhash past the genesis one every fresh LiteSVM starts from
  // (a nonce created at it could not be emptied: NonceBlockhashNotExpired).
  svm.expireBlockhash();
  svm.expireBlockhash();
  const tx = new Transaction({ feePayer: new PublicKey(job.feePayer), recentBlockhash: svm.latestBlockhash() });
  for (const ix of job.instructions) {
    tx.add(new TransactionInstruction({
      programId: new PublicKey(ix.programId),
      keys: ix.accounts.map((a) => ({ pubkey: new PublicKey(a.pubkey), isSigner: a.isSigner, isWritable: a.isWritable })),
      data: Buffer.from(bs58.decode(ix.data)),
    }));
  }
  const r = svm.inner.sendLegacyTransaction(tx.serialize({ requireAllSignatures: false, verifySignatures: false }));
  const failed = r instanceof FailedTransactionMetadata;
  const meta = failed ? r.meta() : r;
  return {
    ok: !failed,
    err: failed ? r.err().toString() : null,
    logs: meta.logs(),
    post: (job.read ?? []).map((a) => [a, toJson(rawAccount(svm, a))]),
  };
}

export async function runIsolated({ accounts, feePayer, instructions, read = [], timeoutMs = 20_000 }) {
  const job = stringify({ accounts: accounts.map(([a, raw]) => [a, toJson(raw)]), feePayer, instructions, read });
  const child = spawn(process.execPath, [SELF], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const exited = new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  child.stdin.end(job);
  const { code, signal } = await exited;
  clearTimeout(timer);
  const line = out.split("\n").find((l) => l.startsWith("{"));
  if (!line) throw new Error(`fix runner died (${code ?? signal}) before answering: ${err.slice(0, 2000)}`);
  const r = parseJson(line);
  return { ok: r.ok, err: r.err, logs: r.logs, post: new Map(r.post.map(([a, j]) => [a, fromJson(j)])) };
}

// The child: read the job, answer one line, leave before anything else can run.
if (process.argv[1] === SELF) {
  let input = "";
  process.stdin.on("data", (d) => (input += d));
  process.stdin.on("end", () => {
    let answer;
    try {
      answer = execute(parseJson(input));
    } catch (e) {
      answer = { ok: false, err: `runner: ${e.stack}`, logs: [], post: [] };
    }
    process.stdout.write(`${stringify(answer)}\n`, () => process.exit(0));
  });
}
