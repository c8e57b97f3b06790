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
import http from 'k6/http';
import { check } from 'k6';
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
    // Always met: they make the summary list the flows by outcome.
    'xray_flows{outcome:ready}': ['count>=0'],
    'xray_flows{outcome:failed}': ['count>=0'],
    'xray_flows{outcome:busy}': ['count>=0'],
    'xray_flows{outcome:limited}': ['count>=0'],
    'xray_flows{outcome:unfinished}': ['count>=0'],
  },
};

// Submit → final status, per flow that finished (ms).
const flowMs = new Trend('xray_flow_ms', true);
// Submit latency alone (ms).
const submitMs = new Trend('xray_submit_ms', true);
// Flows by how they ended: ready, failed, busy (503), limited (429), unfinished, error.
const outcomes = new Counter('xray_flows');

// 2xx, 429 and 503 are answers of a working server, not transport failures.
http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, 429, 503));

const headers = { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' };

export function setup() {
  if (!API_KEY) {
    throw new Error('API_KEY is required (a key with wallet:analyze and analysis:read)');
  }
}

export default function () {
  const wallet = WALLETS[(__VU * 7919 + __ITER) % WALLETS.length];
  const started = Date.now();
  const submit = http.post(
    `${BASE_URL}/v1/developer/intelligence/wallet`,
    JSON.stringify({ wallet, refresh: REFRESH }),
    { headers, tags: { name: 'submit' } },
  );
  submitMs.add(submit.timings.duration);
  if (submit.status === 503 || submit.status === 429) {
    outcomes.add(1, { outcome: submit.status === 503 ? 'busy' : 'limited' });
    check(submit, { 'busy or limited answers carry Retry-After': (r) => !!r.headers['Retry-After'] });
    return;
  }
  const accepted = check(submit, {
    'submit is 200 or 202 with a pollUrl': (r) => (r.status === 200 || r.status === 202) && !!r.json('pollUrl'),
  });
  if (!accepted) {
    outcomes.add(1, { outcome: 'error' });
    return;
  }
  let status = submit.json('status');
  const pollUrl = submit.json('pollUrl');
  for (let i = 0; i < POLLS_MAX && status !== 'READY' && status !== 'FAILED'; i++) {
    const poll = http.get(`${pollUrl}?wait=${WAIT_S}`, { headers, tags: { name: 'poll' } });
    if (!check(poll, { 'poll is 200': (r) => r.status === 200 })) {
      outcomes.add(1, { outcome: 'error' });
      return;
    }
    status = poll.json('data.status');
  }
  if (status === 'READY' || status === 'FAILED') {
    flowMs.add(Date.now() - started);
    outcomes.add(1, { outcome: status === 'READY' ? 'ready' : 'failed' });
  } else {
    outcomes.add(1, { outcome: 'unfinished' });
  }
}
