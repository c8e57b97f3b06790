// k6 load test of the pre-sign scan (open model): integrators' backends scanning the
// transactions their users are about to sign — `POST /v1/developer/intelligence/transaction`
// with `{"transaction": "<base64>"}`, answered synchronously with a verdict, findings and effects.
//
// Open model: `constant-arrival-rate` starts RATE scans per second whatever the latency, so a
// slow server shows as latency and dropped iterations, not as a politely lower rate. Each
// iteration scans one transaction of the mix, in turn. Loopback targets only; every scan is
// one bounded request (TIMEOUT).
//
// The mix: CASES_FILE, one transaction per line, `<case> <base64>` — what `xray ledger demo-tx`
// prints for each of its cases (`loadtest/flows.sh` writes it; by hand:
//   X=${CARGO_TARGET_DIR:-/var/tmp/xray-target}/release/xray
//   $X ledger demo-tx --list | while read -r c _; do echo "$c $($X ledger demo-tx "$c")"; done > cases.txt
// ). `setup()` scans each case once; then every answer under load must be 200 with the same
// verdict as that first one (a scan is a pure function of the transaction and the ledger's
// state, which the demo ledger does not change), with `findings` and `effects` lists and a
// simulation that ran (`simulation.status` "ok": not timed out, not skipped). Two cases are
// anchored whatever the first answer says: `drain` is `malicious`, `sol-transfer` `benign`.
// Every case is scanned in turn without and with `guards: true` (the mix's second pass asks
// for them): a guarded answer must carry `guards` — `added` unless the verdict is malicious
// (`withheld`) — signed as `xray.scan.v3`; a plain one none, signed as `xray.scan.v2`.
// Then two sequence scans (`{"transactions": [...], "mode"}`, README "Sequences and bundles"):
// the split drain, `split-drain-1` then `split-drain-2` (each a payment alone), once as a
// `sequence` and once as a `bundle`. Each must answer 200 with the verdict it first got, signed
// as `xray.scan_sequence.v1`, every transaction's simulation `ok` and applied, and the whole's
// `findings` holding an `asset_sweep` (the drain neither part shows). A sequence of N costs N
// quota units: this one 2. SEQUENCES=0 leaves them out (a CASES_FILE without the two cases).
//
// Environment:
//   BASE_URL    service root                         (default http://127.0.0.1:8080)
//   API_KEY     a key with transaction:scan (required); each 200 costs one quota unit a
//               transaction (a sequence here: 2), so give it a quota and a rate limit above
//               what the run offers, or it measures 429s
//   CASES_FILE  the mix, as above (required; an absolute path, or relative to this script)
//   RATE        scans started per second            (default 50)
//   DURATION    test length                          (default 20s)
//   VUS / MAX_VUS  pre-allocated / maximum virtual users (default 8 / 64)
//   TIMEOUT     one scan's request timeout           (default 10s)
//   P99_MS      p99 threshold of a scan, ms          (default 50; a sequence is one scan here)
//   SEQUENCES   1: scan the split drain as a sequence and a bundle too (default 1; needs
//               split-drain-1 and split-drain-2 in CASES_FILE)
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
import { Counter, Trend } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const API_KEY = __ENV.API_KEY || '';
const URL = `${BASE_URL}/v1/developer/intelligence/transaction`;
const TIMEOUT = __ENV.TIMEOUT || '10s';
const P99_MS = parseFloat(__ENV.P99_MS || '50');
const VERDICTS = ['benign', 'warning', 'malicious'];
// Cases whose verdict the scan exists to get right.
const ANCHORS = { drain: 'malicious', 'sol-transfer': 'benign' };
// The sequence scanned in each mode: a drain split in two that only the whole shows.
const SPLIT_DRAIN = ['split-drain-1', 'split-drain-2'];
const SEQUENCE_MODES = ['sequence', 'bundle'];
const SEQUENCE_TYPE = 'xray.scan_sequence.v1';
const SEQUENCES = (__ENV.SEQUENCES || '1') !== '0';

if (!__ENV.CASES_FILE) {
  throw new Error('CASES_FILE is required: lines of `<case> <base64>` (see the top of scan.js)');
}
const LINES = open(__ENV.CASES_FILE)
  .split('\n')
  .map((line) => line.trim().split(/\s+/))
  .filter((words) => words.length >= 2 && words[0] !== '');
const SINGLES = LINES.flatMap(([name, transaction]) => [
  { name, guarded: false, body: JSON.stringify({ transaction }) },
  { name, guarded: true, body: JSON.stringify({ transaction, guards: true }) },
])
  // Plain first, then guarded: each case's first scan (setup) is plain.
  .sort((a, b) => Number(a.guarded) - Number(b.guarded));
if (SINGLES.length === 0) {
  throw new Error(`${__ENV.CASES_FILE} holds no transaction`);
}
// The split drain as a sequence and as a bundle (`count`: its transactions).
function sequences() {
  if (!SEQUENCES) {
    return [];
  }
  const byName = Object.fromEntries(LINES.map(([name, transaction]) => [name, transaction]));
  const missing = SPLIT_DRAIN.filter((name) => !byName[name]);
  if (missing.length > 0) {
    throw new Error(`${__ENV.CASES_FILE} lacks ${missing.join(', ')} for the sequence scans (or SEQUENCES=0)`);
  }
  const transactions = SPLIT_DRAIN.map((name) => byName[name]);
  return SEQUENCE_MODES.map((mode) => ({
    name: `${mode}:${SPLIT_DRAIN.join('+')}`,
    sequence: true,
    count: transactions.length,
    body: JSON.stringify({ transactions, mode }),
  }));
}
const CASES = [...SINGLES, ...sequences()];

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(99)', 'p(99.9)', 'max'],
  scenarios: {
    scan: {
      executor: 'constant-arrival-rate',
      rate: parseInt(__ENV.RATE || '50', 10),
      timeUnit: '1s',
      duration: __ENV.DURATION || '20s',
      preAllocatedVUs: parseInt(__ENV.VUS || '8', 10),
      maxVUs: parseInt(__ENV.MAX_VUS || '64', 10),
    },
  },
  thresholds: {
    checks: ['rate>0.99'],
    http_req_failed: ['rate<0.01'],
    xray_scan_ms: [`p(99)<${P99_MS}`],
    // Always met: they make the summary list the scans by verdict.
    ...Object.fromEntries([...VERDICTS, 'error'].map((v) => [`xray_scans{verdict:${v}}`, ['count>=0']])),
  },
};

// One scan's latency (ms), tagged with its case.
const scanMs = new Trend('xray_scan_ms', true);
// Scans by the verdict answered (`error`: not a 200 with a verdict).
const scans = new Counter('xray_scans');

const params = {
  headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
  timeout: TIMEOUT,
};

function scan(c) {
  const res = http.post(URL, c.body, { ...params, tags: { name: 'scan', case: c.name } });
  let data = null;
  if (res.status === 200) {
    try {
      data = res.json('data');
    } catch (e) {
      data = null;
    }
  }
  return { res, data };
}

// The verdict of each case, as the server answers it with nothing else running.
export function setup() {
  if (!API_KEY) {
    throw new Error('API_KEY is required (a key with transaction:scan)');
  }
  const verdicts = {};
  for (const c of CASES.filter((c) => !c.guarded)) {
    const { res, data } = scan(c);
    if (!data || !VERDICTS.includes(data.verdict)) {
      throw new Error(`${c.name}: the first scan answered ${res.status} ${String(res.body).slice(0, 300)}`);
    }
    if (ANCHORS[c.name] && data.verdict !== ANCHORS[c.name]) {
      throw new Error(`${c.name}: verdict ${data.verdict}, expected ${ANCHORS[c.name]}`);
    }
    // The sequence exists to catch what neither part shows: anchored on the whole's sweep.
    if (c.sequence && !wholeIsASweep(data)) {
      throw new Error(`${c.name}: the whole's findings hold no asset_sweep: ${JSON.stringify(data.findings)}`);
    }
    verdicts[c.name] = data.verdict;
  }
  return { verdicts };
}

function wholeIsASweep(data) {
  return Array.isArray(data.findings) && data.findings.some((f) => f.kind === 'asset_sweep');
}

// Every transaction of the sequence answered, in order, simulated `ok` and applied.
function eachSimulated(c, data) {
  const items = Array.isArray(data.transactions) ? data.transactions : [];
  const applied = data.applied && Array.isArray(data.applied.transactions) ? data.applied.transactions : [];
  return (
    items.length === c.count &&
    items.every((t, i) => t.index === i && t.simulation && t.simulation.status === 'ok') &&
    applied.length === c.count
  );
}

function guardsAsAsked(c, data) {
  const type = data.signature && data.signature.type;
  if (!c.guarded) {
    return data.guards === undefined && type === 'xray.scan.v2';
  }
  const expected = data.verdict === 'malicious' ? 'withheld' : 'added';
  return data.guards !== undefined && data.guards.status === expected && type === 'xray.scan.v3';
}

export default function (state) {
  const c = CASES[exec.scenario.iterationInTest % CASES.length];
  const { res, data } = scan(c);
  scanMs.add(res.timings.duration, { case: c.name });
  const verdict = data && VERDICTS.includes(data.verdict) ? data.verdict : 'error';
  scans.add(1, { verdict });
  const common = {
    'status 200': (r) => r.status === 200,
    'verdict as first answered': () => verdict === state.verdicts[c.name],
    'findings and effects listed': () => data !== null && Array.isArray(data.findings) && Array.isArray(data.effects),
  };
  if (c.sequence) {
    check(res, {
      ...common,
      'sequence: signed xray.scan_sequence.v1': () =>
        data !== null && data.signature && data.signature.type === SEQUENCE_TYPE && data.guards === undefined,
      'sequence: the whole is an asset_sweep': () => data !== null && wholeIsASweep(data),
      'sequence: each transaction simulated ok': () => data !== null && eachSimulated(c, data),
    });
    return;
  }
  check(res, {
    ...common,
    'simulation ran': () => data !== null && data.simulation && data.simulation.status === 'ok',
    'guards as asked': () => data !== null && guardsAsAsked(c, data),
  });
}
