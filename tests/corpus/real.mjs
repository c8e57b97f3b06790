// The benign set: the real mainnet transactions of real.jsonl (sources: docs/corpus-sources.md),
// each scanned with its fee payer as the signer, and the LiteSVM state they are scanned against on
// the rpc source.

import { readFileSync } from "node:fs";
import { LiteSVM } from "litesvm";
import { VersionedTransaction, LAMPORTS_PER_SOL } from "@solana/web3.js";
import { IDS, encodeLookupTable } from "../litesvm/layouts.mjs";
import { seededKeypair, setRawAccount, track, airdrop } from "../litesvm/util.mjs";

const U64_MAX = 2n ** 64n - 1n;
/** What each real fee payer holds on the LiteSVM source: an ordinary wallet's SOL, far above what
 *  any of the transactions moves (its tokens and the dApps' programs are not there: those
 *  simulations fail, and the scan judges what it decodes). */
export const REAL_PAYER_LAMPORTS = 1000n * BigInt(LAMPORTS_PER_SOL);

/** real.jsonl's lines as corpus cases: class `benign`, expected `benign`, signer the fee payer. */
export function realCases(path = new URL("./real.jsonl", import.meta.url)) {
  return readFileSync(path, "utf8").split("\n").filter((l) => l.trim()).map((line) => {
    const row = JSON.parse(line);
    const tx = VersionedTransaction.deserialize(Buffer.from(row.transaction, "base64"));
    return {
      name: `real_${row.name}`, class: "benign", expected: "benign", what: row.what, version: row.version,
      transaction: row.transaction, signer: tx.message.staticAccountKeys[0].toBase58(), row, tx,
    };
  });
}

/**
 * One LiteSVM for every real transaction: each fee payer funded (`REAL_PAYER_LAMPORTS`), and each
 * lookup table a v0 transaction uses rebuilt from the addresses it resolved to on mainnet
 * (`loadedAddresses`: writable indexes of every table in order, then read-only ones) — the
 * entries it uses at their indexes, the others filled with keys derived from the table's
 * address. A table two transactions disagree on keeps the first one's entries (reported).
 */
export function realSvm(cases) {
  const svm = new LiteSVM();
  const tables = new Map();
  const conflicts = [];
  for (const c of cases) {
    const m = c.tx.message;
    airdrop(svm, m.staticAccountKeys[0], REAL_PAYER_LAMPORTS);
    track(svm, m.staticAccountKeys[0]);
    const lookups = m.addressTableLookups ?? [];
    if (lookups.length === 0) continue;
    const loaded = c.row.loadedAddresses ?? { writable: [], readonly: [] };
    let w = 0;
    let r = 0;
    const place = (table, index, address) => {
      const entries = tables.get(table) ?? [];
      if (entries[index] && entries[index] !== address) conflicts.push(`${c.name}: ${table}[${index}]`);
      else entries[index] = address;
      tables.set(table, entries);
    };
    for (const l of lookups) for (const i of l.writableIndexes) place(l.accountKey.toBase58(), i, loaded.writable[w++]);
    for (const l of lookups) for (const i of l.readonlyIndexes) place(l.accountKey.toBase58(), i, loaded.readonly[r++]);
  }
  for (const [table, entries] of tables) {
    const addresses = Array.from({ length: entries.length }, (_, i) => entries[i] ?? seededKeypair(`corpus/filler/${table}/${i}`).publicKey.toBase58());
    const data = encodeLookupTable({ type: "lookupTable", info: { deactivationSlot: U64_MAX, lastExtendedSlot: 0, lastExtendedSlotStartIndex: 0, authority: null, addresses } });
    setRawAccount(svm, table, { lamports: svm.minimumBalanceForRentExemption(BigInt(data.length)), owner: IDS.alt, data, executable: false, rentEpoch: 0n });
  }
  // A table's entries are usable from the slot after its last extension. (A fresh litesvm 1.x
  // starts at slot 447,552,000, 0.8.0 at 0: the clock is set to 10 as it was.)
  svm.warpToSlot(10n);
  return { svm, tables: tables.size, conflicts };
}
