"""The README's quick start, driven by a client openapi-python-client generated from
docs/openapi.json (tests/pyclient/run.sh generates it and starts the server).

    quickstart.py OPENAPI_JSON PACKAGE

First checks that the generated package holds the whole document: every operation a module
with `sync_detailed`, parsing every JSON answer its operation documents; every object, enum and
union-branch schema a class of `PACKAGE.models` (string schemas such as `Address` have no class:
the generator types them `str`). Then runs the quick start against XRAY_BASE_URL with
XRAY_API_KEY, asserting the generated classes and their typed fields, never raw JSON — a scan of one
transaction, one asked with guards and a sequence of two among them.
"""

import base64
import importlib
import inspect
import json
import os
import re
import sys
import time
import uuid

DOC_PATH, PACKAGE = sys.argv[1], sys.argv[2]
DOC = json.load(open(DOC_PATH, encoding="utf-8"))

# Demo archetypes (README, "The demo ledger").
OPEN_DELEGATION = "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ"
TOKEN_MINT = "EK5Xr9ERXTAGiaGoBwMUzHUBqWnENnZjnXZShRbZg92N"
SYBIL_A = "6SoUSfvAF7ZVfH4uc5to3DeDxsHeyW2xJAkyDbk6trKu"
SYBIL_B = "8bPtYYeYuDqCYpk7BrTvoRNtUVAQJGxptTGRe6Y3xnm9"
DENIED = "7Rq5TFrYhbp12T3s8UcZm3JWYnVyb7KpmSkpbq2NP7PF"
HOOK = "https://hooks.example.com/xray"


def snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).replace("-", "_").lower()


def check_whole_document():
    models = importlib.import_module(f"{PACKAGE}.models")
    classes = set(models.__all__)
    missing = []
    counts = {"class": 0, "str": 0}

    def need(name, why):
        if name in classes:
            counts["class"] += 1
        else:
            missing.append(f"schema {why}: no class {name} in {PACKAGE}.models")

    for name, schema in DOC["components"]["schemas"].items():
        if "oneOf" in schema or "anyOf" in schema:
            for branch in schema.get("oneOf", schema.get("anyOf")):
                if "$ref" in branch:
                    need(branch["$ref"].rsplit("/", 1)[1], f"{name} (a branch)")
                elif branch.get("type") == "object":
                    if "title" not in branch:
                        missing.append(f"schema {name}: an inline branch without a title")
                    else:
                        need(branch["title"], f"{name} (branch {branch['title']})")
        elif schema.get("type") == "object" or "properties" in schema or "enum" in schema:
            need(name, name)
        elif schema.get("type") == "string":
            counts["str"] += 1
        else:
            missing.append(f"schema {name}: neither an object, an enum, a union nor a string")

    operations = 0
    for path, item in DOC["paths"].items():
        for method, op in item.items():
            if method == "parameters":
                continue
            operations += 1
            where = f"{method.upper()} {path} ({op['operationId']})"
            module_name = f"{PACKAGE}.api.{snake(op['tags'][0])}.{snake(op['operationId'])}"
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                missing.append(f"{where}: no module {module_name}")
                continue
            if not callable(getattr(module, "sync_detailed", None)):
                missing.append(f"{where}: no sync_detailed")
                continue
            parse = inspect.getsource(module._parse_response)
            for status, answer in op["responses"].items():
                ref = answer.get("$ref")
                if ref:
                    answer = DOC["components"]["responses"][ref.rsplit("/", 1)[1]]
                if "application/json" in answer.get("content", {}) and f"status_code == {status}" not in parse:
                    missing.append(f"{where}: the {status} answer is not parsed")
    assert not missing, "the generated client lacks part of the document:\n" + "\n".join(missing)
    print(
        f"ok: every operation ({operations}) a module, every object, enum and union schema a class"
        f" ({counts['class']}), {counts['str']} string schemas typed str"
    )


check_whole_document()

client_mod = importlib.import_module(PACKAGE)
M = importlib.import_module(f"{PACKAGE}.models")
from_api = lambda tag, op: importlib.import_module(f"{PACKAGE}.api.{tag}.{op}")  # noqa: E731

analyze_wallet = from_api("intelligence", "analyze_wallet")
analyze_wallets = from_api("intelligence", "analyze_wallets")
get_analysis = from_api("intelligence", "get_analysis")
compare_wallets = from_api("intelligence", "compare_wallets")
get_comparison = from_api("intelligence", "get_comparison")
scan_transaction = from_api("intelligence", "scan_transaction")
create_monitor = from_api("monitors", "create_monitor")
get_monitor = from_api("monitors", "get_monitor")
list_monitor_events = from_api("monitors", "list_monitor_events")
get_policy = from_api("account", "get_policy")
put_policy = from_api("account", "put_policy")
get_status = from_api("account", "get_status")
get_usage = from_api("account", "get_usage")
get_health = from_api("operations", "get_health")
get_signing_keys = from_api("operations", "get_signing_keys")

BASE = os.environ["XRAY_BASE_URL"]
client = client_mod.AuthenticatedClient(
    base_url=BASE, token=os.environ["XRAY_API_KEY"], raise_on_unexpected_status=True, timeout=40.0
)
anonymous = client_mod.Client(base_url=BASE, raise_on_unexpected_status=True)


def answer(response, status, cls):
    """The parsed answer of `response`, which must have `status` and parse as `cls`."""
    assert response.status_code == status, f"{response.status_code} (not {status}): {response.content[:400]!r}"
    assert isinstance(response.parsed, cls), f"{type(response.parsed).__name__} (not {cls.__name__})"
    return response.parsed


# the key (with its account), its scopes, rate limit, quota and the service status
status = answer(get_status.sync_detailed(client=client), 200, M.Status).data
assert status.key.account == os.environ["XRAY_ACCOUNT"], status.key.account
assert status.key.status == "active", status.key.status
granted = {grant.scope for grant in status.scopes if grant.granted}
assert {"wallet:analyze", "wallet:compare", "transaction:scan", "usage:read"} <= granted, granted
assert isinstance(status.rate_limit, M.RateLimitInfo) and status.rate_limit.burst > 0
assert status.quota.limit > 0 and status.quota.used == 0, status.quota
assert status.service.status == "ok", status.service.status
assert status.service.engine_versions.additional_properties, "engine versions named"
print(f"ok: status — key {status.key.id}, account {status.key.account}, {len(granted)} scopes granted")

# analyze a wallet: 202 with analysisId and pollUrl
accepted = answer(analyze_wallet.sync_detailed(client=client, body=M.WalletRequest(wallet=OPEN_DELEGATION)), 202,
                  M.AcceptedAnalysis)
job = accepted.data
assert isinstance(job, M.AcceptedAnalysisData)
assert job.analysis_id.startswith("an_") and job.wallet == OPEN_DELEGATION, job
assert job.status in ("QUEUED", "RUNNING", "READY") and accepted.status == job.status, (accepted.status, job.status)
assert job.poll_url.endswith(f"/v1/developer/intelligence/analysis/{job.analysis_id}"), job.poll_url
assert accepted.poll_url == job.poll_url, accepted.poll_url
assert job.deduplicated is False
print(f"ok: POST wallet — 202 AcceptedAnalysis {job.analysis_id} ({job.status})")

# the same with an Idempotency-Key: a retry gets the first answer again (Idempotent-Replayed: true)
key = f"payout-{uuid.uuid4()}"
body = M.WalletRequest(wallet=SYBIL_A)
first = analyze_wallet.sync_detailed(client=client, body=body, idempotency_key=key)
again = analyze_wallet.sync_detailed(client=client, body=body, idempotency_key=key)
first_job = answer(first, 202, M.AcceptedAnalysis).data
again_job = answer(again, 202, M.AcceptedAnalysis).data
assert again.headers.get("Idempotent-Replayed") == "true", dict(again.headers)
assert again_job.analysis_id == first_job.analysis_id, (first_job.analysis_id, again_job.analysis_id)
print(f"ok: Idempotency-Key — the resend replays {again_job.analysis_id}")

# up to 100 wallets in one request: each address its job or its error object
batch = answer(analyze_wallets.sync_detailed(client=client, body=M.BatchRequest(wallets=[OPEN_DELEGATION, TOKEN_MINT]),
                                             idempotency_key=f"airdrop-{uuid.uuid4()}"), 200, M.BatchAccepted).data
assert [type(item) for item in batch.items] == [M.BatchItemAccepted, M.BatchItemRefused], batch.items
assert batch.items[0].analysis_id == job.analysis_id and batch.items[0].deduplicated, batch.items[0]
assert batch.items[1].error.code == "ACCOUNT_NOT_ELIGIBLE", batch.items[1].error
assert (batch.admitted, batch.deduplicated, batch.refused) == (0, 1, 1), batch
print("ok: POST wallets — one item deduplicated onto the job, one refused ACCOUNT_NOT_ELIGIBLE")

# a refusal parses as the typed error document
refused = answer(analyze_wallet.sync_detailed(client=client, body=M.WalletRequest(wallet=TOKEN_MINT)), 422, M.Error)
assert refused.error.code == "ACCOUNT_NOT_ELIGIBLE" and refused.error.request_id, refused.error
print(f"ok: a token mint refused — Error {refused.error.code}")

# webhooks: a callbackUrl on the same wallet answers it (deduplicated) and says so in `callback`
response = analyze_wallet.sync_detailed(client=client, body=M.WalletRequest(wallet=OPEN_DELEGATION, callback_url=HOOK))
assert response.status_code in (200, 202), response.status_code
hooked = answer(response, response.status_code, M.AcceptedAnalysis).data
assert hooked.analysis_id == job.analysis_id and hooked.deduplicated, hooked
assert isinstance(hooked.callback, M.AcceptedCallback) and hooked.callback.url == HOOK and hooked.callback.attached
print(f"ok: callbackUrl — attached to {hooked.analysis_id} ({response.status_code})")


def poll(fetch, what, deadline_s=60):
    """Long polls (wait=10) until READY; the typed `data` of the last answer."""
    end = time.monotonic() + deadline_s
    while True:
        data = fetch().data
        if data.status == "READY" or time.monotonic() > end:
            assert data.status == "READY", f"{what}: {data.status} ({data.error})"
            return data
        assert data.status in ("QUEUED", "RUNNING"), f"{what}: {data.status} ({data.error})"


# poll it until READY, then read the X-Ray
done = poll(lambda: answer(get_analysis.sync_detailed(job.analysis_id, client=client, wait=10), 200, M.AnalysisPoll),
            job.analysis_id)
xray = done.xray
assert isinstance(xray, M.XRay) and xray.wallet == OPEN_DELEGATION
assert isinstance(xray.score, M.Score), type(xray.score)
assert 0 <= xray.score.value <= 100 and xray.score.risk_level in ("low", "medium", "high", "critical"), xray.score
assert 0.0 <= xray.score.confidence <= 1.0, xray.score.confidence
kinds = {signal.kind for signal in xray.signals}
assert "open_token_delegation" in kinds, kinds
assert all(isinstance(signal, M.Signal) for signal in xray.signals)
assert all(isinstance(d, M.Dimension) for d in xray.dimensions) and xray.dimensions
assert all(isinstance(e, (M.EvidenceTransaction, M.EvidenceAccount)) for e in xray.evidence) and xray.evidence
assert all(e.kind == ("transaction" if isinstance(e, M.EvidenceTransaction) else "account") for e in xray.evidence)
evidence_ids = {e.id for e in xray.evidence}
assert all(set(signal.evidence_ids) <= evidence_ids for signal in xray.signals)
assert all(isinstance(path, M.AttackPath) for path in xray.attack_paths)
assert isinstance(xray.coverage, M.Coverage) and isinstance(xray.policy, M.PolicyRef)
assert xray.engine_versions.additional_properties, "engine versions"
assert isinstance(done.signature, M.ReportSignature) and done.signature.type_ == "xray.analysis.v1", done.signature
print(f"ok: GET analysis — READY, score {xray.score.value} ({xray.score.risk_level}), {len(xray.signals)} signals,"
      f" {len(xray.evidence)} evidence, signed by {done.signature.key_id}")

# compare two wallets (pairId is deterministic for the unordered pair)
pair = answer(compare_wallets.sync_detailed(client=client, body=M.CompareRequest(wallet_a=SYBIL_A, wallet_b=SYBIL_B)),
              202, M.AcceptedComparison)
assert isinstance(pair.data, M.AcceptedComparisonData) and pair.data.pair_id.startswith("pair_"), pair.data
assert (pair.data.wallet_a, pair.data.wallet_b) == (SYBIL_A, SYBIL_B) and pair.status == pair.data.status
compared = poll(lambda: answer(get_comparison.sync_detailed(pair.data.pair_id, client=client, wait=10), 200,
                               M.ComparisonPoll), pair.data.pair_id)
comparison = compared.comparison
assert isinstance(comparison, M.Comparison)
assert {comparison.wallet_a.address, comparison.wallet_b.address} == {SYBIL_A, SYBIL_B}
assert isinstance(comparison.wallet_a.score, M.Score) and 0 <= comparison.wallet_a.score.value <= 100
assert comparison.relationship == "likely_same_owner", comparison.relationship
assert 0.0 <= comparison.similarity <= 1.0 and comparison.links, comparison
assert all(isinstance(link, M.Link) and 0.0 <= link.strength <= 1.0 for link in comparison.links)
assert compared.signature.type_ == "xray.comparison.v1", compared.signature
print(f"ok: compare — {pair.data.pair_id} READY, {comparison.relationship}, similarity {comparison.similarity},"
      f" {len(comparison.links)} links")

# scan a transaction before it is signed: the demo drain
drain = M.ScanRequest(transaction=os.environ["XRAY_DEMO_TX_DRAIN"])
scan = answer(scan_transaction.sync_detailed(client=client, body=drain), 200, M.TransactionScan).data
assert isinstance(scan, M.ScanReport)
assert scan.verdict == "malicious", scan.verdict
findings = {finding.kind for finding in scan.findings}
assert all(isinstance(finding, M.ScanFinding) for finding in scan.findings) and findings, findings
assert max(("info", "low", "medium", "high", "critical").index(f.severity) for f in scan.findings) >= 3, findings
assert scan.effects, "the signer's predicted effects"
for effect in scan.effects:  # each effect its own class, chosen by its `kind`
    expected = "ScanEffect" + "".join(word.title() for word in effect.kind.split("_"))
    assert type(effect).__name__ == expected, (type(effect), effect.kind)
assert any(isinstance(e, M.ScanEffectSolSent) and e.lamports > 0 for e in scan.effects), scan.effects
assert isinstance(scan.transaction, M.ScanTransactionInfo) and scan.transaction.signed is False
assert scan.signature.type_ == "xray.scan.v2", scan.signature
assert isinstance(scan.engine_versions, M.ScanEngineVersions) and scan.engine_versions.scan
print(f"ok: scan — {scan.verdict}, findings {sorted(findings)}, {len(scan.effects)} effects")

# the same, asked with guards: a token transfer's Lighthouse assertions (the signer's SOL floor and
# owner; its token account's, with 0.5 % slippage on what the transfer moves) and the transaction
# with them appended, signed as xray.scan.v3 (a scan's members and guards)
token = M.ScanRequest(transaction=os.environ["XRAY_DEMO_TX_TOKEN"], guards=M.ScanGuardOptions(slippage_bps=50))
guarded = answer(scan_transaction.sync_detailed(client=client, body=token), 200, M.TransactionScan).data
guards = guarded.guards
assert isinstance(guards, M.ScanGuards) and guards.status == "added" and guards.slippage_bps == 50, guards
assert all(isinstance(ix, M.ScanGuardInstruction) for ix in guards.guard_instructions), guards.guard_instructions
kinds = [type(a).__name__ for ix in guards.guard_instructions for a in ix.asserts]  # each kind its own class
assert kinds == ["ScanGuardAssertLamportsAtLeast", "ScanGuardAssertAccountOwner", "ScanGuardAssertTokenOwner",
                 "ScanGuardAssertTokenDelegate", "ScanGuardAssertTokenCloseAuthority",
                 "ScanGuardAssertTokenAmountAtLeast"], kinds
owner = guards.guard_instructions[0].asserts[1]  # the signer's wallet stays the System program's
assert owner.owner == "11111111111111111111111111111111", owner
assert len(base64.b64decode(guards.guarded_transaction)) <= 1232, guards.guarded_transaction
assert guarded.signature.type_ == "xray.scan.v3", guarded.signature
print(f"ok: scan with guards — {guards.status}, {len(guards.guard_instructions)} guard instructions, signed"
      f" {guarded.signature.type_}")

# several transactions signed together (the token transfer, then the drain), run in order on one
# state: each judged in its place, the whole on the signer's cumulative effects, one quota unit per
# transaction, signed as xray.scan_sequence.v1 (never a scan)
sent = [os.environ["XRAY_DEMO_TX_TOKEN"], os.environ["XRAY_DEMO_TX_DRAIN"]]
body = M.ScanSequenceRequest(transactions=sent, mode=M.ScanSequenceMode.SEQUENCE)
sequence = answer(scan_transaction.sync_detailed(client=client, body=body), 200, M.TransactionScanSequence).data
assert isinstance(sequence, M.ScanSequence) and sequence.mode == M.ScanSequenceMode.SEQUENCE, sequence.mode
assert all(isinstance(item, M.ScanSequenceTransaction) for item in sequence.transactions), sequence.transactions
assert [item.index for item in sequence.transactions] == [0, 1], sequence.transactions
assert [item.transaction.message_sha_256 for item in sequence.transactions] == [guarded.transaction.message_sha_256,
                                                                                 scan.transaction.message_sha_256]
assert sequence.transactions[1].verdict == "malicious" and sequence.verdict == "malicious", sequence.verdict
assert isinstance(sequence.applied, M.ScanSequenceApplied) and sequence.applied.transactions == [0, 1], sequence.applied
assert all(isinstance(finding, M.ScanFinding) for finding in sequence.findings)
assert sequence.signature.type_ == "xray.scan_sequence.v1", sequence.signature
print(f"ok: scan of a sequence — {sequence.verdict}, {len(sequence.transactions)} transactions, applied"
      f" {sequence.applied.transactions}, {len(sequence.effects)} cumulative effects, signed {sequence.signature.type_}")

# watch a wallet
monitor = answer(create_monitor.sync_detailed(client=client, body=M.MonitorRequest(
    wallets=[OPEN_DELEGATION], callback_url=HOOK, min_severity=M.MinSeverity.HIGH, score_drop=10)), 201,
    M.MonitorAnswer).data
assert isinstance(monitor, M.Monitor) and monitor.id.startswith("mon_"), monitor
assert monitor.min_severity == "high" and monitor.score_drop == 10 and monitor.wallets == [OPEN_DELEGATION], monitor
detail = answer(get_monitor.sync_detailed(monitor.id, client=client), 200, M.MonitorDetailAnswer).data
assert isinstance(detail, M.MonitorDetail) and detail.id == monitor.id
assert [watch.wallet for watch in detail.watches] == [OPEN_DELEGATION], detail.watches
events = answer(list_monitor_events.sync_detailed(monitor.id, client=client), 200, M.MonitorEventsPage).data
assert isinstance(events.events, list) and all(isinstance(e, M.MonitorEventListed) for e in events.events)
print(f"ok: monitor {monitor.id} — {len(detail.watches)} wallet watched, {len(events.events)} events")

# the account's policy: read it, then ignore a kind and deny an address
policy = answer(get_policy.sync_detailed(client=client), 200, M.PolicyAnswer).data.policy
assert isinstance(policy, M.Policy) and policy.version == 0 and policy.deny_list == [], policy
request = M.PolicyRequest(
    severity_overrides=M.PolicyRequestSeverityOverridesType0.from_dict({"new_wallet": "ignore"}), deny_list=[DENIED])
written = answer(put_policy.sync_detailed(client=client, body=request), 200, M.PolicyAnswer).data.policy
assert written.version == policy.version + 1 and written.deny_list == [DENIED], written
assert written.severity_overrides.additional_properties == {"new_wallet": "ignore"}, written.severity_overrides
print(f"ok: policy {written.id} — version {written.version}, deny list {written.deny_list}")

# quota and rate-limit usage of this key
usage = answer(get_usage.sync_detailed(client=client), 200, M.Usage).data
assert usage.key_id == status.key.id, usage.key_id
assert usage.by_operation.wallet_analysis == 2, usage.by_operation  # OPEN_DELEGATION and SYBIL_A
# two scans of one transaction, and a sequence of two: one unit per transaction
assert usage.by_operation.comparison == 1 and usage.by_operation.transaction_scan == 4, usage.by_operation
assert usage.quota.used + usage.quota.reserved == 7 and usage.quota.remaining == usage.quota.limit - 7, usage.quota
print(f"ok: usage — {usage.quota.used} used, {usage.quota.reserved} reserved, {usage.quota.remaining} remaining")

# liveness (no key) and the keys reports are signed with
health = answer(get_health.sync_detailed(client=anonymous), 200, M.Health)
assert health.status == "ok", health.status
keys = answer(get_signing_keys.sync_detailed(client=anonymous), 200, M.SigningKeySet)
assert done.signature.key_id in {k.kid for k in keys.keys}, keys.keys
print(f"ok: /healthz {health.status}; {len(keys.keys)} signing key(s), the report's among them")
