// k6 load test of one GET route of the Wallet X-Ray API (open model).
//
// Open model: the `constant-arrival-rate` executor starts RATE requests per second whatever
// the latency, so a slow server shows up as latency and dropped iterations, not as a politely
// lower request rate (no coordinated omission). Loopback targets only.
//
// Environment:
//   BASE_URL       service root               (default http://127.0.0.1:8080)
//   API_KEY        sent as `Authorization: Bearer <key>` when set
//   TARGET_PATH    path to GET                (default /v1/developer/status)
//   EXPECT_STATUS  the status that counts as success (default 200)
//   RATE           requests per second        (default 2000)
//   DURATION       test length                (default 15s)
//   VUS / MAX_VUS  pre-allocated / maximum virtual users (default 32 / 128)
//   P99_MS         p99 latency threshold in ms (default 50)
//   SUMMARY_JSON   file to write the raw end-of-test summary to (optional)
import http from 'k6/http';
import { check } from 'k6';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const API_KEY = __ENV.API_KEY || '';
const TARGET_PATH = __ENV.TARGET_PATH || '/v1/developer/status';
const EXPECT_STATUS = parseInt(__ENV.EXPECT_STATUS || '200', 10);
const RATE = parseInt(__ENV.RATE || '2000', 10);
const DURATION = __ENV.DURATION || '15s';
const VUS = parseInt(__ENV.VUS || '32', 10);
const MAX_VUS = parseInt(__ENV.MAX_VUS || '128', 10);
const P99_MS = parseFloat(__ENV.P99_MS || '50');

export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(99)', 'p(99.9)', 'max'],
  scenarios: {
    poll: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: VUS,
      maxVUs: MAX_VUS,
    },
  },
  thresholds: {
    // Failures are statuses other than EXPECT_STATUS (see setResponseCallback) and I/O errors.
    http_req_failed: ['rate<0.01'],
    http_req_duration: [`p(99)<${P99_MS}`],
    checks: ['rate>0.99'],
  },
};

http.setResponseCallback(http.expectedStatuses(EXPECT_STATUS));

const params = {
  headers: API_KEY ? { Authorization: `Bearer ${API_KEY}` } : {},
  tags: { name: TARGET_PATH },
};

export default function () {
  const res = http.get(`${BASE_URL}${TARGET_PATH}`, params);
  check(res, { 'expected status': (r) => r.status === EXPECT_STATUS });
}

function fmt(ms) {
  return ms === undefined ? 'n/a' : `${ms.toFixed(3)} ms`;
}

// A short text summary (no remote jslib import: the machine may be offline), plus the raw
// summary as JSON for the harness.
export function handleSummary(data) {
  const m = data.metrics;
  const d = m.http_req_duration ? m.http_req_duration.values : {};
  const dropped = m.dropped_iterations ? m.dropped_iterations.values.count : 0;
  const failed = m.http_req_failed ? m.http_req_failed.values.rate : 0;
  const thresholdsOk = Object.values(m).every((metric) =>
    Object.values(metric.thresholds || {}).every((t) => t.ok));
  const lines = [
    `target      ${BASE_URL}${TARGET_PATH} (expect ${EXPECT_STATUS}), offered ${RATE} req/s for ${DURATION}`,
    `throughput  ${m.http_reqs.values.rate.toFixed(1)} req/s (${m.http_reqs.values.count} requests, ${dropped} dropped)`,
    `latency     p50 ${fmt(d.med)}  p99 ${fmt(d['p(99)'])}  p99.9 ${fmt(d['p(99.9)'])}  max ${fmt(d.max)}`,
    `failed      ${(failed * 100).toFixed(3)} %`,
    `thresholds  ${thresholdsOk ? 'passed' : 'FAILED'}`,
    '',
  ];
  const out = { stdout: lines.join('\n') };
  if (__ENV.SUMMARY_JSON) {
    out[__ENV.SUMMARY_JSON] = JSON.stringify(data);
  }
  return out;
}
