// k6 load test of the integrator's flow (open model): submit a wallet, long-poll its pollUrl
// until READY or FAILED, as a client of the Wallet X-Ray API does.
//
// Open model: `constant-arrival-rate` starts RATE flows per second whatever the latency, so a
// saturated server shows as 503 SERVICE_BUSY answers, latency and dropped iterations — not as
// a politely lower rate. Loopback targets only; every flow is bounded (POLLS_MAX polls).
//
// Environment:
//   BASE_URL   service root                         (default http://127.0.0.1:8080)
//   API_KEY    a key with wallet:analyze and analysis:read (required); give it a rate limit
//              and quota above what the run offers, or the run measures 429s
//   WALLETS    comma-separated addresses to cycle through (default: the demo archetypes that
//              are wallets)
//   REFRESH    "true" to force a new, charged analysis each time (default "false": repeats
//              are deduplicated or reuse a fresh READY result, as for a real client)
//   WAIT_S     `wait` of each poll, 1–30            (default 10)
//   POLLS_MAX  polls per flow before giving up      (default 6)
//   RATE       flows started per second             (default 20)
//   DURATION   test length                          (default 20s)
//   VUS / MAX_VUS  pre-allocated / maximum virtual users (default 16 / 256)
//   BATCH      N in 1–100: each flow submits N wallets in one `POST …/wallets` and long-polls
//              every job the batch answered with (default 0: one wallet per flow, `POST …/wallet`)
//   IDEMPOTENT "true": every submit carries an `Idempotency-Key` (unique per flow); a submit
//              refused with 429 or 503 — or a batch with refused items — is retried with the
//              same key after `Retry-After` (at most RETRIES_MAX times), and an accepted submit
//              is sent once more with its key, as by a client whose answer was lost: that must
//              come back `Idempotent-Replayed: true` naming the same jobs (default "false")
//   RETRIES_MAX  retries of one submit with its key (default 3)
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const API_KEY = __ENV.API_KEY || '';
const DEMO_WALLETS = [
  'DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z', // clean
  '958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ', // open_delegation
  '5o6v3Td9ytgimfJwPRbuDs1ZtXt2xS6C2ddGQAM6F19w', // owner_change_drained
  '69ZJ3Facy9HXBZ17fDEmBL6aTF3DVzQzV2RdM762k7eY', // foreign_nonce_authority
  'DHdEcT9YqynY7Zicaw5Vkd67tigaDoogF82pC9kW9XTq', // foreign_stake_authority
  'DFVgjwHHnhJgpurkcMhMQ5eBm5Sa8i2tLm8G6pYBE16w', // permanent_delegate_holder
  '6oHJpEthxJ7d9zeu9SCgR1rPEXdhLpTsZmpQc6roQr8H', // poisoning_victim
  '6LxktvcB1Gxs3V6hhbcWtHJagBhQhSkwMeYjXUtaaEnS', // drainer_contact
  '6SoUSfvAF7ZVfH4uc5to3DeDxsHeyW2xJAkyDbk6trKu', // sybil_a
  '4Wu1mrzaAQ5Z54ANdUAEG8j4apxQM8kNED6i5mvbumiW', // busy_trader
];
const WALLETS = __ENV.WALLETS ? __ENV.WALLETS.split(',').map((w) => w.trim()) : DEMO_WALLETS;
const REFRESH = (__ENV.REFRESH || 'false') === 'true';
const WAIT_S = Math.min(30, Math.max(1, parseInt(__ENV.WAIT_S || '10', 10)));
const POLLS_MAX = Math.max(1, parseInt(__ENV.POLLS_MAX || '6', 10));
const BATCH = Math.min(100, Math.max(0, parseInt(__ENV.BATCH || '0', 10)));
const IDEMPOTENT = (__ENV.IDEMPOTENT || 'false') === 'true';
const RETRIES_MAX = Math.max(0, parseInt(__ENV.RETRIES_MAX || '3', 10));

// A flow's or a job's outcomes, the worst first: a batch flow ends as its worst item did.
const OUTCOMES = ['error', 'unfinished', 'busy', 'limited', 'refused', 'failed', 'ready'];

function byOutcome(metric) {
  return Object.fromEntries(OUTCOMES.map((outcome) => [`${metric}{outcome:${outcome}}`, ['count>=0']]));
}

function worst(outcomes) {
  return OUTCOMES.find((outcome) => outcomes.includes(outcome)) || 'ready';
}

export const options = {
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(99)', 'p(99.9)', 'max'],
  scenarios: {
    analyze: {
      executor: 'constant-arrival-rate',
      rate: parseInt(__ENV.RATE || '20', 10),
      timeUnit: '1s',
      duration: __ENV.DURATION || '20s',
      preAllocatedVUs: parseInt(__ENV.VUS || '16', 10),
      maxVUs: parseInt(__ENV.MAX_VUS || '256', 10),
    },
  },
  thresholds: {
    checks: ['rate>0.99'],
    // Always met: they make the summary list the flows and the jobs by outcome.
    ...byOutcome('xray_flows'),
    ...byOutcome('xray_jobs'),
    'xray_resends{kind:retry}': ['count>=0'],
    'xray_resends{kind:replay}': ['count>=0'],
  },
};

// Submit → final status of its last job, per flow whose jobs all finished (ms).
const flowMs = new Trend('xray_flow_ms', true);
// Submit latency alone (ms).
const submitMs = new Trend('xray_submit_ms', true);
// Flows (one per iteration; a batch is one flow) by how they ended: ready, failed, busy (503),
// limited (429), refused (a batch item the single endpoint would answer 4xx), unfinished, error;
// a batch flow by its worst item, in `OUTCOMES` order.
const flows = new Counter('xray_flows');
// Jobs and refused items (a single flow is one; a batch, one per address) by the same outcomes.
const jobs = new Counter('xray_jobs');
// Submits sent again with their Idempotency-Key: after a refusal (`retry`), or as a lost answer
// would be (`replay`).
const resends = new Counter('xray_resends');

// 2xx, 429 and 503 are answers of a working server, not transport failures.
http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, 429, 503));

const headers = { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' };

export function setup() {
  if (!API_KEY) {
    throw new Error('API_KEY is required (a key with wallet:analyze and analysis:read)');
  }
}

export default function () {
  const started = Date.now();
  const first = (__VU * 7919 + __ITER) % WALLETS.length;
  const key = IDEMPOTENT ? `k6-${__VU}-${__ITER}-${started}` : null;
  let items;
  if (BATCH > 0) {
    const wallets = Array.from({ length: BATCH }, (_, i) => WALLETS[(first + i) % WALLETS.length]);
    items = batchFlow(wallets, key);
  } else {
    items = singleFlow(WALLETS[first], key);
  }
  const outcome = worst(items);
  flows.add(1, { outcome });
  if (outcome === 'ready' || outcome === 'failed') {
    flowMs.add(Date.now() - started);
  }
}

// Counts `count` jobs (or refused items) that ended as `outcome`; returns them, for the flow.
function counted(outcome, count) {
  jobs.add(count, { outcome });
  return Array(count).fill(outcome);
}

// POST `body` to `path` with the flow's Idempotency-Key (if any); with a key, a refusal the
// server asks to retry (429, 503, or a batch whose items were refused so) is retried with the
// same key after Retry-After.
function submitWithRetries(path, body, key, refusedItems) {
  const params = { headers: key ? { ...headers, 'Idempotency-Key': key } : headers, tags: { name: 'submit' } };
  let reply = http.post(`${BASE_URL}${path}`, body, params);
  submitMs.add(reply.timings.duration);
  for (let retry = 0; key && retry < RETRIES_MAX && wantsRetry(reply, refusedItems); retry++) {
    sleep(Math.min(5, parseInt(reply.headers['Retry-After'] || '1', 10)));
    resends.add(1, { kind: 'retry' });
    reply = http.post(`${BASE_URL}${path}`, body, params);
    submitMs.add(reply.timings.duration);
  }
  return { reply, params };
}

function wantsRetry(reply, refusedItems) {
  if (reply.status === 503 || reply.status === 429) {
    return true;
  }
  return reply.status === 200 && refusedItems !== undefined && refusedItems(reply) > 0;
}

// With a key: the accepted submit sent again, as by a client whose answer was lost — the same
// jobs, marked as a replay.
function replayMatches(path, body, params, jobsOf, reply) {
  resends.add(1, { kind: 'replay' });
  const again = http.post(`${BASE_URL}${path}`, body, params);
  check(again, {
    'a resent Idempotency-Key is replayed': (r) => r.headers['Idempotent-Replayed'] === 'true',
    'a replay names the same jobs': (r) => r.status === reply.status && jobsOf(r) === jobsOf(reply),
  });
}

// One wallet: the outcome of its job (one item).
function singleFlow(wallet, key) {
  const path = '/v1/developer/intelligence/wallet';
  const body = JSON.stringify({ wallet, refresh: REFRESH });
  const { reply: submit, params } = submitWithRetries(path, body, key);
  if (submit.status === 503 || submit.status === 429) {
    check(submit, { 'busy or limited answers carry Retry-After': (r) => !!r.headers['Retry-After'] });
    return counted(submit.status === 503 ? 'busy' : 'limited', 1);
  }
  const accepted = check(submit, {
    'submit is 200 or 202 with a pollUrl': (r) => (r.status === 200 || r.status === 202) && !!r.json('pollUrl'),
  });
  if (!accepted) {
    return counted('error', 1);
  }
  if (key) {
    replayMatches(path, body, params, (r) => r.json('data.analysisId'), submit);
  }
  return counted(follow(submit.json('pollUrl'), submit.json('status')), 1);
}

// One batch: the outcome of each of its jobs and refused items.
function batchFlow(wallets, key) {
  const path = '/v1/developer/intelligence/wallets';
  const body = JSON.stringify({ wallets, refresh: REFRESH });
  const retryable = (item) => !!item.error && ['SERVICE_BUSY', 'RATE_LIMITED', 'TOO_MANY_JOBS'].includes(item.error.code);
  const limited = ['RATE_LIMITED', 'QUOTA_EXHAUSTED', 'TOO_MANY_JOBS'];
  const refusedItems = (r) => (r.json('data.items') || []).filter(retryable).length;
  const { reply: submit, params } = submitWithRetries(path, body, key, refusedItems);
  if (submit.status === 503 || submit.status === 429) {
    return counted(submit.status === 503 ? 'busy' : 'limited', wallets.length);
  }
  const accepted = check(submit, {
    'a batch is 200 with one item per address': (r) => r.status === 200 && r.json('data.items').length === wallets.length,
  });
  if (!accepted) {
    return counted('error', wallets.length);
  }
  const items = submit.json('data.items');
  // A replay of a batch with items still refused would submit those again: not a replay.
  if (key && refusedItems(submit) === 0) {
    const jobs = (r) => (r.json('data.items') || []).map((item) => item.analysisId || '-').join(',');
    replayMatches(path, body, params, jobs, submit);
  }
  const polled = new Set();
  const outcomes = [];
  for (const item of items) {
    if (item.error) {
      const code = item.error.code;
      const outcome = code === 'SERVICE_BUSY' ? 'busy' : limited.includes(code) ? 'limited' : 'refused';
      outcomes.push(...counted(outcome, 1));
    } else if (!polled.has(item.analysisId)) {
      // An address repeated in the batch names its first occurrence's job: followed once.
      polled.add(item.analysisId);
      outcomes.push(...counted(follow(item.pollUrl, item.status), 1));
    }
  }
  return outcomes;
}

// Long-polls `pollUrl` until READY or FAILED (at most POLLS_MAX polls): the job's outcome.
function follow(pollUrl, status) {
  for (let i = 0; i < POLLS_MAX && status !== 'READY' && status !== 'FAILED'; i++) {
    const poll = http.get(`${pollUrl}?wait=${WAIT_S}`, { headers, tags: { name: 'poll' } });
    if (!check(poll, { 'poll is 200': (r) => r.status === 200 })) {
      return 'error';
    }
    status = poll.json('data.status');
  }
  if (status === 'READY' || status === 'FAILED') {
    return status === 'READY' ? 'ready' : 'failed';
  }
  return 'unfinished';
}
