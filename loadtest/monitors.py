#!/usr/bin/env python3
"""Helper of loadtest/monitors.sh (Python 3.11, stdlib only): the API calls, the /metrics
deltas and the report of the monitors measurement. monitors.sh starts and stops every process;
this file starts none but the webhook receiver (`hooks`, which monitors.sh starts and stops).

Subcommands (settings come from the environment monitors.sh exports):
  addresses N SEED        N on-curve (wallet-shaped) base58 addresses, deterministic per SEED
  script FILE LEAD_S N EVERY_S
                          a demo timeline script: N events per wallet (timeline_delegate and
                          timeline_dust), EVERY_S apart, the first LEAD_S from now; prints
                          the script's start (Unix ms)
  hooks PORT FILE         a webhook receiver on 127.0.0.1:PORT: answers 200, one line per POST
  quiet | active | cap-setup | cap-window IN_FLIGHT INTERVAL_S WARMUP_S MEASURE_S
                          one measurement phase against the running server; adds its numbers
                          to $RESULTS (JSON)
  report                  prints the tables from $RESULTS
"""
import json
import math
import os
import random
import re
import sys
import time
import urllib.error
import urllib.request

# ---------------------------------------------------------------- addresses

P = 2**255 - 19
D = (-121665 * pow(121666, P - 2, P)) % P
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def on_curve(b: bytes) -> bool:
    """Whether 32 bytes decompress to an ed25519 point (what POST /wallet calls a wallet)."""
    y = int.from_bytes(b, "little") & ((1 << 255) - 1)
    if y >= P:
        return False
    u, v = (y * y - 1) % P, (D * y * y + 1) % P
    x2 = u * pow(v, P - 2, P) % P
    if x2 == 0:
        return not b[31] >> 7
    return pow(x2, (P - 1) // 2, P) == 1


def b58(b: bytes) -> str:
    n, s = int.from_bytes(b, "big"), ""
    while n:
        n, r = divmod(n, 58)
        s = B58[r] + s
    return "1" * (len(b) - len(b.lstrip(b"\0"))) + s


def addresses(n: int, seed: int) -> list[str]:
    rng, out = random.Random(seed), []
    while len(out) < n:
        b = rng.randbytes(32)
        if on_curve(b):
            out.append(b58(b))
    return out


# ---------------------------------------------------------------- HTTP

def env(name: str) -> str:
    value = os.environ.get(name)
    if value is None:
        sys.exit(f"monitors.py: {name} is not set")
    return value


def call(method: str, url: str, bearer: str | None = None, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if bearer:
        req.add_header("Authorization", f"Bearer {bearer}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def admin_token() -> str:
    return open(os.path.join(env("DATA_DIR"), "admin.token")).read().strip()


def create_key(name: str, account: str | None = None) -> tuple[str, str]:
    """A key with the monitors' scopes (and usage:read, to read its quota); (secret, account)."""
    body = {"name": name, "scopes": ["wallet:analyze", "analysis:read", "monitor:write", "monitor:read", "usage:read"],
            "ratePerSecond": 1000000, "burst": 1000000, "quota": 1000000000}
    if account:
        body["account"] = account
    status, answer = call("POST", f"{env('ADMIN')}/v1/admin/keys", admin_token(), body)
    if status != 201:
        sys.exit(f"creating a key: {status} {answer}")
    return answer["data"]["key"], answer["data"]["account"]


def webhook_secret(account: str) -> None:
    status, answer = call("POST", f"{env('ADMIN')}/v1/admin/accounts/{account}/webhook-secret", admin_token())
    if status not in (200, 201):
        sys.exit(f"giving {account} a webhook secret: {status} {answer}")


def create_monitors(key: str, wallets: list[str], min_severity: str | None = None,
                    extra: dict | None = None, hooked: bool = False) -> list[str]:
    """Monitors of at most 100 wallets each over `wallets` (`extra`: more members of the body); their ids.
    `hooked`: with the receiver as `callbackUrl` (the account needs its webhook secret first), else
    poll-only — the quiet and capacity phases make no event to send."""
    ids = []
    for i in range(0, len(wallets), 100):
        body = {"wallets": wallets[i:i + 100], **(extra or {})}
        if hooked:
            body["callbackUrl"] = env("HOOK_URL")
        if min_severity:
            body["minSeverity"] = min_severity
        status, answer = call("POST", f"{env('API')}/v1/developer/monitors", key, body)
        if status != 201:
            sys.exit(f"creating a monitor: {status} {answer}")
        ids.append(answer["data"]["id"])
    return ids


def usage(key: str) -> dict:
    status, answer = call("GET", f"{env('API')}/v1/developer/usage", key)
    if status != 200:
        sys.exit(f"reading usage: {status} {answer}")
    return {"used": answer["data"]["quota"]["used"], "walletAnalysis": answer["data"]["byOperation"]["walletAnalysis"]}


# ---------------------------------------------------------------- metrics

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def metrics() -> dict:
    """/metrics as {(name, ((label, value), …)): value}."""
    req = urllib.request.Request(f"{env('ADMIN')}/metrics", headers={"Authorization": f"Bearer {admin_token()}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if m:
            labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def series(m: dict, name: str, **want) -> float:
    """Sum of the samples of `name` whose labels include `want`."""
    return sum(v for (n, labels), v in m.items()
               if n == name and all((k, w) in labels for k, w in want.items()))


def by_label(m0: dict, m1: dict, name: str, label: str) -> dict:
    """Deltas of counter `name` between two scrapes, summed by one label (nonzero only)."""
    out = {}
    for (n, labels), v in m1.items():
        if n != name:
            continue
        d = v - m0.get((n, labels), 0.0)
        key = dict(labels).get(label, "")
        out[key] = out.get(key, 0.0) + d
    return {k: v for k, v in out.items() if v}


def ledger_calls(m0, m1) -> dict:
    """JSON-RPC requests by method between two scrapes, every outcome (a batch is one)."""
    return by_label(m0, m1, "xray_ledger_calls_total", "method")


def tx_read(m0, m1) -> int:
    """Transactions read from getTransaction answers (the items of its batches)."""
    return int(series(m1, "xray_ledger_transactions_read_total") - series(m0, "xray_ledger_transactions_read_total"))


def checks(m0, m1) -> dict:
    return by_label(m0, m1, "xray_monitor_checks_total", "outcome")


def call_outcomes(m0, m1) -> dict:
    return by_label(m0, m1, "xray_ledger_calls_total", "outcome")


def gauge(name: str, m: dict) -> float:
    return series(m, name)


# ---------------------------------------------------------------- CPU

TICK = os.sysconf("SC_CLK_TCK")


def ticks(path: str) -> int:
    """utime + stime of a /proc stat file (fields 14 and 15), in clock ticks."""
    with open(path) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def threads(pid: int) -> dict:
    """{tid: (comm, ticks)} of a process."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            out[tid] = (comm, ticks(f"/proc/{pid}/task/{tid}/stat"))
        except OSError:
            pass
    return out


class Cpu:
    """CPU the server (and its threads) and the ledger process spent between start and stop."""

    def __init__(self):
        self.server, self.ledger = int(env("SERVER_PID")), int(env("LEDGER_PID"))

    def start(self):
        self.t0 = time.monotonic()
        self.s0, self.l0 = ticks(f"/proc/{self.server}/stat"), ticks(f"/proc/{self.ledger}/stat")
        self.th0 = threads(self.server)

    def stop(self) -> dict:
        dt = time.monotonic() - self.t0
        s1, l1, th1 = ticks(f"/proc/{self.server}/stat"), ticks(f"/proc/{self.ledger}/stat"), threads(self.server)
        by_name = {}
        for tid, (comm, t) in th1.items():
            d = t - self.th0.get(tid, (comm, 0))[1]
            by_name[comm] = by_name.get(comm, 0) + d
        pct = lambda d: round(100.0 * d / TICK / dt, 1)
        top = sorted(by_name.items(), key=lambda kv: -kv[1])[:5]
        return {"seconds": round(dt, 2), "server_pct": pct(s1 - self.s0), "ledger_pct": pct(l1 - self.l0),
                "monitors_thread_pct": pct(by_name.get("xray-monitors", 0)),
                "top_threads": [(name, pct(d)) for name, d in top]}


# ---------------------------------------------------------------- waiting

def log(msg: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def wait_baselines(watches: int, timeout_s: float) -> dict:
    """Until every watch had its first check admitted (`active`: the baseline analysis) and
    every job ended; the scrape at that point."""
    deadline, said = time.monotonic() + timeout_s, 0.0
    while True:
        m = metrics()
        done = series(m, "xray_monitor_checks_total", outcome="active")
        idle = gauge("xray_live_jobs", m) == 0 and gauge("xray_queue_depth", m) == 0
        seen = gauge("xray_monitor_watches", m)
        if done >= watches and seen >= watches and idle:
            return m
        if time.monotonic() > deadline:
            sys.exit(f"baselines not done in {timeout_s:.0f} s: {done:.0f}/{watches} admitted, "
                     f"live jobs {gauge('xray_live_jobs', m):.0f}, watches {seen:.0f}")
        if time.monotonic() - said > 10:
            said = time.monotonic()
            log(f"baselines: {done:.0f}/{watches} admitted, live jobs {gauge('xray_live_jobs', m):.0f}")
        time.sleep(0.5)


def wait_idle(timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        m = metrics()
        if gauge("xray_live_jobs", m) == 0 and gauge("xray_queue_depth", m) == 0:
            return m
        if time.monotonic() > deadline:
            sys.exit(f"jobs still live after {timeout_s:.0f} s")
        time.sleep(0.25)


def sample_lag(seconds: float) -> list[float]:
    """xray_monitor_lag_seconds once a second for `seconds`."""
    out, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        out.append(gauge("xray_monitor_lag_seconds", metrics()))
        time.sleep(max(0.0, min(1.0, end - time.monotonic())))
    return out


# ---------------------------------------------------------------- results

def results() -> dict:
    path = env("RESULTS")
    return json.load(open(path)) if os.path.exists(path) else {}


def save(section: str, data) -> None:
    r = results()
    r[section] = data
    json.dump(r, open(env("RESULTS"), "w"), indent=1)


def demo_wallets() -> dict:
    """Eligible demo archetypes {name: address} (`xray demo list`), from $DEMO_LIST."""
    out = {}
    for a in json.load(open(env("DEMO_LIST"))):
        if not any(s.startswith("not_eligible") for s in a["expectedSignals"]):
            out[a["name"]] = a["address"]
    return out


# ---------------------------------------------------------------- phases

def phase_quiet() -> None:
    n, interval, measure = int(env("QUIET_WALLETS")), int(env("QUIET_INTERVAL_S")), int(env("QUIET_MEASURE_S"))
    demo = demo_wallets()
    # wallets with a history (the demo archetypes that never move; timeline_quiet), busy_trader
    # (1,000+ transactions) last, then empty addresses (never funded) up to n
    named = [a for name, a in demo.items() if name not in ("timeline_delegate", "timeline_dust", "busy_trader")]
    named.append(demo["busy_trader"])
    wallets = (named + addresses(n, 1))[:n]
    with_history = min(len(named), n)
    key, account = create_key("quiet")
    m_before = metrics()
    t_before = time.monotonic()
    create_monitors(key, wallets)
    m0 = wait_baselines(n, float(env("BASELINE_TIMEOUT_S")))
    baseline_s = time.monotonic() - t_before
    base_calls = ledger_calls(m_before, m0)
    log(f"quiet: {n} baselines in {baseline_s:.1f} s; measuring {measure} s")
    time.sleep(interval)  # the first quiet round after the baselines settles
    m0, u0, cpu = metrics(), usage(key), Cpu()
    cpu.start()
    lags = sample_lag(measure)
    m1, u1 = metrics(), usage(key)
    c = checks(m0, m1)
    save("quiet", {
        "wallets": n, "with_history": with_history, "interval_s": interval, "seconds": measure,
        "baseline_s": round(baseline_s, 1), "baseline_calls": base_calls, "baseline_checks": checks(m_before, m0),
        "baseline_tx_read": tx_read(m_before, m0), "tx_read": tx_read(m0, m1),
        "checks": c, "calls": ledger_calls(m0, m1), "call_outcomes": call_outcomes(m0, m1),
        "jobs": by_label(m0, m1, "xray_jobs_total", "outcome"),
        "quota_used": u1["used"] - u0["used"], "lag_max_s": max(lags, default=0.0),
        "cpu": cpu.stop(),
    })


def phase_active() -> None:
    interval, start_ms = int(env("ACTIVE_INTERVAL_S")), int(env("SCRIPT_START_MS"))
    last_ms = start_ms + 1000 * int(env("ACTIVE_EVERY_S")) * (int(env("ACTIVE_EVENTS")) - 1)
    demo = demo_wallets()
    wallets = [demo["timeline_delegate"], demo["timeline_dust"]]
    key, account = create_key("active")
    webhook_secret(account)
    m_before = metrics()
    # Every event re-analyzed, as the phase measures: the dust filter off (the look-alike's dust
    # would be moved past for free) and a budget no number of events reaches (issue #40).
    create_monitors(key, wallets, min_severity="low", extra={"dustLamports": 0, "reanalysesPerDay": 100000}, hooked=True)
    m0 = wait_baselines(len(wallets), float(env("BASELINE_TIMEOUT_S")))
    early = time.time() * 1000 > start_ms
    base_calls = ledger_calls(m_before, m0)
    u0 = usage(key)
    hooks0 = hook_count()
    log(f"active: baselines done {'AFTER' if early else 'before'} the first event; "
        f"events until {(last_ms - time.time() * 1000) / 1000:.0f} s from now")
    cpu = Cpu()
    cpu.start()
    # past the last event by two intervals (each wallet's check after it), then every job ended
    time.sleep(max(0.0, (last_ms - time.time() * 1000) / 1000) + 2 * interval + 0.5)
    m1 = wait_idle(60)
    time.sleep(1.0)  # the events' webhooks
    u1 = usage(key)
    save("active", {
        "interval_s": interval, "events_per_wallet": int(env("ACTIVE_EVENTS")),
        "every_s": int(env("ACTIVE_EVERY_S")), "baseline_after_first_event": early,
        "baseline_calls": base_calls, "baseline_checks": checks(m_before, m0),
        "baseline_tx_read": tx_read(m_before, m0), "tx_read": tx_read(m0, m1),
        "checks": checks(m0, m1), "calls": ledger_calls(m0, m1), "call_outcomes": call_outcomes(m0, m1),
        "jobs": by_label(m0, m1, "xray_jobs_total", "outcome"),
        "cache_hits": by_label(m0, m1, "xray_ledger_cache_hits_total", "kind"),
        "cache_misses": by_label(m0, m1, "xray_ledger_cache_misses_total", "kind"),
        "quota_used": u1["used"] - u0["used"], "wallet_analyses": u1["walletAnalysis"] - u0["walletAnalysis"],
        "webhooks_received": hook_count() - hooks0, "cpu": cpu.stop(),
    })


def hook_count() -> int:
    path = env("HOOK_FILE")
    return sum(1 for _ in open(path)) if os.path.exists(path) else 0


def phase_cap_setup() -> None:
    accounts, per, size = int(env("CAP_ACCOUNTS")), int(env("CAP_MONITORS")), int(env("CAP_WALLETS"))
    bound = int(env("CAP_WATCHES_MAX"))
    total = accounts * per * size
    pool = addresses(total, 2)
    m_before = metrics()
    t_before = time.monotonic()
    for a in range(accounts):
        key, _ = create_key(f"cap{a}")
        mine = pool[a * per * size:(a + 1) * per * size]
        create_monitors(key, mine)
    created_s = time.monotonic() - t_before
    watched = min(total, bound)
    log(f"capacity: {accounts} accounts × {per} monitors × {size} wallets = {total} watches "
        f"(bound {bound}) created in {created_s:.1f} s; waiting for the baselines")
    m0 = wait_baselines(watched, float(env("BASELINE_TIMEOUT_S")))
    baseline_s = time.monotonic() - t_before
    save("cap_setup", {
        "accounts": accounts, "monitors": accounts * per, "wallets_per_monitor": size, "watches_asked": total,
        "watches": gauge("xray_monitor_watches", m0), "left_out": gauge("xray_monitor_watches_left_out", m0),
        "baseline_s": round(baseline_s, 1), "baseline_calls": ledger_calls(m_before, m0),
        "baseline_checks": checks(m_before, m0), "baseline_tx_read": tx_read(m_before, m0),
        "baseline_jobs": by_label(m_before, m0, "xray_jobs_total", "outcome"),
    })


def phase_cap_window(in_flight: int, interval_s: int, warmup: float, measure: float) -> None:
    m = metrics()
    deadline = time.monotonic() + 30
    while gauge("xray_monitor_watches", m) == 0 and time.monotonic() < deadline:
        time.sleep(0.25)
        m = metrics()
    time.sleep(warmup)
    m0, cpu = metrics(), Cpu()
    cpu.start()
    lags = sample_lag(measure)
    m1 = metrics()
    dt = cpu.stop()
    name = "xray_ledger_call_duration_seconds"
    gs = dict(method="getSignaturesForAddress")
    d_sum = series(m1, name + "_sum", **gs) - series(m0, name + "_sum", **gs)
    d_count = series(m1, name + "_count", **gs) - series(m0, name + "_count", **gs)
    r = results()
    windows = r.get("cap_windows", [])
    windows.append({
        "in_flight": in_flight, "interval_s": interval_s, "warmup_s": warmup, "seconds": dt["seconds"],
        "watches": gauge("xray_monitor_watches", m1), "left_out": gauge("xray_monitor_watches_left_out", m1),
        "checks": checks(m0, m1), "calls": ledger_calls(m0, m1), "call_outcomes": call_outcomes(m0, m1),
        "jobs": by_label(m0, m1, "xray_jobs_total", "outcome"),
        "gsfa_mean_s": d_sum / d_count if d_count else None,
        "lag_mean_s": sum(lags) / len(lags) if lags else 0.0, "lag_max_s": max(lags, default=0.0),
        "lag_last_s": lags[-1] if lags else 0.0, "cpu": dt,
    })
    save("cap_windows", windows)


# ---------------------------------------------------------------- report

def fmt(x, digits=2):
    if x is None:
        return "n/a"
    if isinstance(x, float) and x.is_integer() and digits == 0:
        return str(int(x))
    return f"{x:,.{digits}f}"


def per_method(calls: dict, per: float) -> str:
    if not per:
        return "n/a"
    return ", ".join(f"{m} {v / per:.2f}" for m, v in sorted(calls.items(), key=lambda kv: -kv[1])) or "none"


def counts(d: dict) -> str:
    return json.dumps({k: int(v) for k, v in d.items()})


def net_of_quiet(calls: dict, checked: dict, q_vec: dict) -> dict:
    """`calls` less the window's quiet checks at the quiet cost `q_vec` (calls per quiet check)."""
    quiet = checked.get("quiet", 0.0)
    net = {m: calls.get(m, 0.0) - quiet * q_vec.get(m, 0.0) for m in set(calls) | set(q_vec)}
    return {m: v for m, v in net.items() if abs(v) > 1e-9}


def report() -> None:
    r, e = results(), os.environ
    print(f"## Monitors: JSON-RPC cost and capacity ({e.get('RUN_DATE', '')})\n")
    print(f"Machine: {e.get('MACHINE', '')}. Binary: {e.get('XRAY_BIN', '')} ({e.get('XRAY_VERSION', '')}).")
    print(f"Ledger: `xray ledger serve --latency-ms {e.get('LATENCY_MS')}` on loopback (one thread), the server "
          f"`xray serve --ledger rpc:…` (ledger cache on). Every figure below is a delta of the server's "
          f"/metrics over the window named, or /proc CPU time. Calls are xray_ledger_calls_total: one per "
          f"JSON-RPC request the server sent (a getTransaction batch of up to 50 counts once; the transactions "
          f"it read are xray_ledger_transactions_read_total); checks are xray_monitor_checks_total.\n")

    q = r.get("quiet")
    q_vec, assumed = {"getSignaturesForAddress": 1.0}, True
    if q and q["checks"].get("quiet"):
        q_vec, assumed = {m: v / q["checks"]["quiet"] for m, v in q["calls"].items()}, False
    if q:
        quiet = q["checks"].get("quiet", 0.0)
        total = sum(q["checks"].values())
        per_check = sum(q["calls"].values()) / quiet if quiet else None
        base = net_of_quiet(q["baseline_calls"], q["baseline_checks"], q_vec)
        print("### 1. Quiet wallets\n")
        print(f"{q['wallets']} wallets in one account ({q['with_history']} demo wallets with a history — their "
              f"check reads `until` the last signature — the rest never-funded addresses), "
              f"`--monitor-interval-s {q['interval_s']}`, measured {q['seconds']} s once the baselines ended "
              f"({q['baseline_s']} s for all {q['wallets']}) and one more interval passed.\n")
        print("| measure | value |\n|---|---|")
        print(f"| checks in the window (by outcome) | {fmt(total, 0)} ({counts(q['checks'])}) |")
        print(f"| checks/s (expected: wallets / interval = {q['wallets'] / q['interval_s']:.1f}) | {total / q['seconds']:.2f} |")
        print(f"| JSON-RPC calls in the window, by method | {counts(q['calls'])} |")
        print(f"| **calls per quiet check**, by method | **{per_method(q['calls'], quiet)}** |")
        print(f"| **calls per watched wallet per hour at a 60 s interval** (= per check × 60) | **{fmt(per_check * 60 if per_check else None, 1)}** |")
        print(f"| … for 10,000 quiet wallets (the default per-node bound): per hour / per second | "
              f"{fmt(per_check * 60 * 10000 if per_check else None, 0)} / {fmt(per_check * 10000 / 60 if per_check else None, 1)} |")
        print(f"| transactions read (getTransaction items) in the window | {q['tx_read']} |")
        print(f"| ledger call outcomes | {counts(q['call_outcomes'])} |")
        print(f"| jobs ended in the window; quota units charged to the key | {counts(q['jobs'])}; {q['quota_used']} |")
        print(f"| lag (xray_monitor_lag_seconds, max of 1 s samples) | {q['lag_max_s']:.3f} s |")
        print(f"| CPU: server / its xray-monitors thread / ledger server (% of one core) | "
              f"{q['cpu']['server_pct']} / {q['cpu']['monitors_thread_pct']} / {q['cpu']['ledger_pct']} |")
        print(f"| first check of each wallet (its baseline analysis): calls per wallet, by method (the quiet "
              f"checks of the wallets already done taken off) | {per_method(base, q['wallets'])} "
              f"(all: {fmt(sum(base.values()) / q['wallets'])}); transactions read {q['baseline_tx_read']} in all |")
        print()

    a = r.get("active")
    if a:
        active = a["checks"].get("active", 0.0)
        net = net_of_quiet(a["calls"], a["checks"], q_vec)
        per_active = sum(net.values()) / active if active else None
        print("### 2. Active wallets\n")
        print(f"timeline_delegate and timeline_dust in one monitor (minSeverity low), `--monitor-interval-s "
              f"{a['interval_s']}`; the ledger's script gives each {a['events_per_wallet']} events {a['every_s']} s "
              f"apart (an approve of a delegate / dust from a look-alike). Window: from the baselines' end to "
              f"every re-analysis ended. The calls of the window's quiet checks (a check that fell between two "
              f"events) are taken off at the quiet cost "
              f"{'assumed (1 getSignaturesForAddress: section 1 not run)' if assumed else 'measured in section 1'}.\n")
        print("| measure | value |\n|---|---|")
        print(f"| checks in the window (by outcome) | {counts(a['checks'])} |")
        print(f"| JSON-RPC calls in the window, by method | {counts(a['calls'])} |")
        print(f"| re-analyses ended; quota units charged (byOperation.walletAnalysis) | {counts(a['jobs'])}; "
              f"{a['quota_used']} ({a['wallet_analyses']}) |")
        print(f"| **calls per active check** (its getSignaturesForAddress + the re-analysis it admits), by method | "
              f"**{per_method(net, active)}** |")
        print(f"| calls per active check, all methods | **{fmt(per_active)}** |")
        print(f"| **calls per hour, a wallet active at every check of a 60 s interval** (upper bound = per active check × 60) | "
              f"**{fmt(per_active * 60 if per_active else None, 1)}** |")
        print(f"| transactions read (getTransaction items) per active check | {a['tx_read'] / active if active else 0:.2f} |")
        print(f"| ledger cache in the window: hits / misses, by kind | {counts(a['cache_hits'])} / {counts(a['cache_misses'])} |")
        print(f"| event webhooks received | {a['webhooks_received']} |")
        base = net_of_quiet(a["baseline_calls"], a.get("baseline_checks", {}), q_vec)
        print(f"| first check of each of the 2 wallets (baseline analysis): calls per wallet, by method | "
              f"{per_method(base, 2)}; transactions read {a['baseline_tx_read']} in all |")
        if a["baseline_after_first_event"]:
            print("| warning | the baselines ended after the first scripted event: raise ACTIVE_LEAD_S |")
        print()

    s, ws = r.get("cap_setup"), r.get("cap_windows", [])
    if s:
        lat = float(e.get("LATENCY_MS", "50")) / 1000
        tick = float(e.get("TICK_MS", "10")) / 1000
        base = net_of_quiet(s["baseline_calls"], s["baseline_checks"], q_vec)
        watched = s["watches"]
        jobs_n = sum(s["baseline_jobs"].values())
        rpcc, threads_n = int(e.get("RPC_CONCURRENCY", "4")), int(e.get("CAP_COMPUTE_THREADS", "2"))
        print("### 3. Capacity of one node\n")
        print(f"{s['accounts']} accounts × {s['monitors'] // s['accounts']} monitors × {s['wallets_per_monitor']} "
              f"never-funded wallets = {s['watches_asked']} watches asked; the node watches {int(watched)} "
              f"(`--monitor-watches-per-node-max {e.get('CAP_WATCHES_MAX')}`, {int(s['left_out'])} left out). "
              f"Their baselines (one analysis each) ran on a server set up for them only — `--compute-threads "
              f"{e.get('CAP_COMPUTE_THREADS')} --jobs-in-flight-per-thread {e.get('CAP_JOBS_IN_FLIGHT')}`, admission "
              f"queue and live jobs per account raised so that none is refused: each compute thread's ledger source "
              f"sends at most {rpcc} requests at once (RPC_CONCURRENCY_MAX), so {threads_n} threads allow "
              f"{rpcc * threads_n} / {lat:.3f} s = {rpcc * threads_n / lat:,.0f} "
              f"requests/s — and took {s['baseline_s']} s from the first POST ({jobs_n / s['baseline_s']:.1f} analyses/s, "
              f"{sum(s['baseline_calls'].values()) / s['baseline_s']:,.0f} requests/s with the checks): "
              f"{per_method(base, watched)} calls per wallet (quiet checks meanwhile taken off; "
              f"jobs {counts(s['baseline_jobs'])}). Each window below restarts the server on the same data "
              f"directory (cursors kept: no new baselines) with the interval and "
              f"`--monitor-checks-in-flight-max` shown (at most 8 per account: {s['accounts']} accounts allow "
              f"{8 * s['accounts']}), waits the warm-up, then measures. An interval of {e.get('CAP_INTERVAL_S')} s "
              f"makes far more checks due than the node can make: the scheduler runs flat out, and checks/s is "
              f"its capacity; the 60 s row is the default interval at the full watch bound.\n")
        print("| interval s | in flight max (usable) | warm-up + window s | demand: watches / interval /s | checks/s sustained "
              "| outcomes | getSignaturesForAddress per check | mean getSignaturesForAddress s | its calls in flight (checks/s × mean call) "
              "| model: usable / latency | model: usable / (refill × ⌈mean call / refill⌉) | lag s mean / max / at end | **wallets per node at 60 s (= checks/s × 60)** "
              "| CPU % of one core: server / xray-monitors thread / ledger |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for w in ws:
            n = sum(w["checks"].values())
            rate = n / w["seconds"]
            usable = min(w["in_flight"], 8 * s["accounts"])
            demand = w["watches"] / w["interval_s"]
            # saturated: checks are late by half an interval on average (the node cannot keep it)
            saturated = w["lag_mean_s"] >= 0.5 * w["interval_s"]
            gsfa = w["calls"].get("getSignaturesForAddress", 0.0)
            mean = w["gsfa_mean_s"]
            cap = f"**{rate * 60:,.0f}**" if saturated else f"not saturated (kept up with {int(w['watches']):,})"
            print(f"| {w['interval_s']} | {w['in_flight']} ({usable}) | {w['warmup_s']:.0f} + {w['seconds']:.0f} | {demand:,.0f} "
                  f"| {rate:,.1f} | {counts(w['checks'])} | {gsfa / n if n else 0:.2f} | {fmt(mean, 4)} "
                  f"| {fmt(rate * mean if mean else None, 1)} | {usable / lat:,.0f} "
                  f"| {usable / (tick * max(1, math.ceil(mean / tick))) if mean else 0:,.0f} "
                  f"| {w['lag_mean_s']:.1f} / {w['lag_max_s']:.1f} / {w['lag_last_s']:.1f} | {cap} "
                  f"| {w['cpu']['server_pct']} / {w['cpu']['monitors_thread_pct']} / {w['cpu']['ledger_pct']} |")
        print()
        for w in ws:
            other = {k: v for k, v in w["calls"].items() if k != "getSignaturesForAddress"}
            print(f"- interval {w['interval_s']} s, in flight {w['in_flight']}: busiest server threads (% of one core): "
                  + ", ".join(f"{t} {p}" for t, p in w["cpu"]["top_threads"])
                  + f"; ledger call outcomes {counts(w['call_outcomes'])}"
                  + (f"; other calls {counts(other)}" if other else "")
                  + (f"; jobs {counts(w['jobs'])}" if w["jobs"] else ""))
        print()
        print(f"Models: usable in flight = min(--monitor-checks-in-flight-max, 8 × accounts). usable / latency = "
              f"the bound if a slot were refilled the moment its check ends (latency: the {lat * 1000:.0f} ms the "
              f"ledger server adds); usable / (refill × ⌈mean call / refill⌉) = the bound when a free slot is "
              f"refilled at the scheduler's next fill (a finished check wakes it; fills at most every MONITOR_REFILL_MS, "
              f"{tick * 1000:.0f} ms in src/config/mod.rs), so a check holds its slot for a whole number of refill steps "
              f"(the mean getSignaturesForAddress time stands for the check's). CPU is per core (the machine has "
              f"{os.cpu_count()}).")


# ---------------------------------------------------------------- hooks

def hooks(port: int, path: str) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with open(path, "a") as f:
                f.write(f"{self.headers.get('Xray-Webhook-Id', '-')}\n")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Hook).serve_forever()


def script(path: str, lead_s: int, n: int, every_s: int) -> None:
    start_ms = int(time.time() * 1000) + lead_s * 1000
    lines = [f"start_unix_ms = {start_ms}"]
    for k in range(n):
        for wallet in ("timeline_delegate", "timeline_dust"):
            lines += ["[[event]]", f'wallet = "{wallet}"', f"at_s = {k * every_s}"]
    open(path, "w").write("\n".join(lines) + "\n")
    print(start_ms)


def main() -> None:
    cmd, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if cmd == "addresses":
        print("\n".join(addresses(int(args[0]), int(args[1]))))
    elif cmd == "script":
        script(args[0], int(args[1]), int(args[2]), int(args[3]))
    elif cmd == "hooks":
        hooks(int(args[0]), args[1])
    elif cmd == "quiet":
        phase_quiet()
    elif cmd == "active":
        phase_active()
    elif cmd == "cap-setup":
        phase_cap_setup()
    elif cmd == "cap-window":
        phase_cap_window(int(args[0]), int(args[1]), float(args[2]), float(args[3]))
    elif cmd == "report":
        report()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
