//! `docs/admin-openapi.json` against the admin listener: the document lists exactly the routes
//! of the admin router (`AdminRoute` in src/admin/mod.rs) with the methods each serves — a
//! running server serves each, and answers every other method with the documented 405 and
//! `Allow` —, its error shape is the public document's, and real answers of a running server
//! (keys, webhook secret, feedback page, policy, labels reload, signing keys, backups, and the
//! refusals: 400, 401, 404, 405, 409, 413, 415) validate against the schemas of their status,
//! with the headers the document says they carry.
//!
//! The validator is `openapi.rs`'s (see there for the subset of JSON Schema it reads; an object
//! with `properties` and no `additionalProperties` is closed).

use std::collections::BTreeSet;
use std::net::SocketAddr;

use super::openapi::{assert_documented, load_document, operations, response, schema, violations};
use super::support::*;
use serde_json::{json, Value};

fn document() -> Value {
    load_document("docs/admin-openapi.json")
}

/// Every route of the admin router, listed once: its `AdminRoute` variant, its path template as
/// the document writes it, and its methods in the router's order (the `Allow` header's).
const ROUTES: [(&str, &str, &[&str]); 11] = [
    ("Metrics", "/metrics", &["GET"]),
    ("Keys", KEYS, &["GET", "POST"]),
    ("Revoke", REVOKE_T, &["POST"]),
    ("Rotate", ROTATE_T, &["POST"]),
    ("WebhookSecret", WEBHOOK_SECRET_T, &["POST"]),
    ("Policy", POLICY_T, &["GET", "PUT"]),
    ("Feedback", FEEDBACK_T, &["GET"]),
    ("LabelsReload", LABELS_RELOAD, &["POST"]),
    ("SigningKeys", SIGNING_KEYS, &["GET"]),
    ("SigningKeysRotate", SIGNING_KEYS_ROTATE, &["POST"]),
    ("Backup", BACKUP, &["GET", "POST"]),
];

const KEYS: &str = "/v1/admin/keys";
const REVOKE_T: &str = "/v1/admin/keys/{id}/revoke";
const ROTATE_T: &str = "/v1/admin/keys/{id}/rotate";
const WEBHOOK_SECRET_T: &str = "/v1/admin/accounts/{account}/webhook-secret";
const POLICY_T: &str = "/v1/admin/accounts/{account}/policy";
const FEEDBACK_T: &str = "/v1/admin/accounts/{account}/feedback";
const LABELS_RELOAD: &str = "/v1/admin/labels/reload";
const SIGNING_KEYS: &str = "/v1/admin/signing-keys";
const SIGNING_KEYS_ROTATE: &str = "/v1/admin/signing-keys/rotate";
const BACKUP: &str = "/v1/admin/backup";

/// Methods the 405 check tries on every path.
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// `template` with its `{id}` and `{account}` filled in.
fn fill(template: &str, id: &str, account: &str) -> String {
    template.replace("{id}", id).replace("{account}", account)
}

/// The variants of `enum AdminRoute` in src/admin/mod.rs: one per route the router matches.
fn router_variants() -> BTreeSet<String> {
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/admin/mod.rs")).expect("source");
    let at = source.find("enum AdminRoute<").expect("enum AdminRoute in src/admin/mod.rs");
    let rest = &source[at..];
    let body = &rest[rest.find('{').expect("{") + 1..rest.find("\n}").expect("}")];
    let variant = |line: &str| line.split(|c: char| !c.is_ascii_alphanumeric()).next().map(str::to_owned);
    body.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
        .filter_map(variant)
        .collect()
}

fn admin_addr(server: &TestServer) -> SocketAddr {
    server.running().admin.local_addr()
}

/// A request to the admin listener with exactly `headers` (no admin token unless given).
fn admin_raw(server: &TestServer, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    raw(admin_addr(server), method, path, headers, body)
}

/// The admin token's `Authorization` value.
fn bearer(server: &TestServer) -> String {
    let token = std::fs::read_to_string(server.data_dir().join(xray::admin::files::TOKEN_FILE_NAME));
    format!("Bearer {}", token.expect("admin token").trim())
}

/// `reply` has `status`, its body validates against the schema the document gives that status
/// of `method template`, and it carries each header the document says is required (with its
/// `const` value, when the document fixes one).
fn check(doc: &Value, method: &str, template: &str, reply: &Reply, status: u16) {
    assert_documented(doc, method, template, reply, status);
    let documented = response(doc, method, template, status);
    for (name, header) in documented["headers"].as_object().into_iter().flatten() {
        let header = match header.get("$ref").and_then(Value::as_str) {
            Some(r) => &doc["components"]["headers"][r.trim_start_matches("#/components/headers/")],
            None => header,
        };
        if header["required"] != true {
            continue;
        }
        let value = reply.header(name).unwrap_or_else(|| panic!("{method} {template} {status}: no {name}: {reply:?}"));
        if let Some(fixed) = header["schema"]["const"].as_str() {
            assert_eq!(value, fixed, "{method} {template} {status}: {name}");
        }
    }
}

/// `check` of a refusal, and its `details.field`.
fn check_field(doc: &Value, method: &str, template: &str, reply: &Reply, status: u16, field: &str) {
    check(doc, method, template, reply, status);
    assert_eq!(reply.error()["details"]["field"], field, "{method} {template}: {reply:?}");
}

#[test]
fn the_document_lists_exactly_the_admin_routes() {
    let doc = document();
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "{}", doc["openapi"]);
    // Every `METHOD path` of the router, and nothing else; every route of the router listed.
    let routes: BTreeSet<String> =
        ROUTES.iter().flat_map(|(_, path, methods)| methods.iter().map(move |m| format!("{m} {path}"))).collect();
    assert_eq!(operations(&doc), routes);
    let variants: BTreeSet<String> = ROUTES.iter().map(|(variant, ..)| (*variant).to_owned()).collect();
    assert_eq!(router_variants(), variants, "a route of the router is missing here (and in the document?)");
    // Every operation needs the admin token (none overrides the document's `security`), and
    // documents the answers every route can give; each path parameter is declared.
    assert_eq!(doc["security"], json!([{"adminToken": []}]));
    let scheme = &doc["components"]["securitySchemes"]["adminToken"];
    assert_eq!((&scheme["type"], &scheme["scheme"]), (&json!("http"), &json!("bearer")));
    for (_, template, methods) in ROUTES {
        let item = &doc["paths"][template];
        let declared: BTreeSet<&str> = item["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .map(|p| match p.get("$ref").and_then(Value::as_str) {
                Some(r) => &doc["components"]["parameters"][r.trim_start_matches("#/components/parameters/")],
                None => p,
            })
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str())
            .collect();
        let in_template: BTreeSet<&str> =
            template.split('/').filter_map(|s| s.strip_prefix('{')?.strip_suffix('}')).collect();
        assert_eq!(declared, in_template, "{template}");
        for method in methods {
            let operation = &item[method.to_lowercase()];
            assert!(operation.get("security").is_none(), "{method} {template} overrides security");
            let statuses = operation["responses"].as_object().expect("responses");
            for status in ["401", "405", "500"] {
                assert!(statuses.contains_key(status), "{method} {template} does not document {status}");
            }
            assert!(statuses.keys().any(|s| s.starts_with('2')), "{method} {template}: no success");
        }
    }
    // The error shape is the public document's: the same members (a subset of `details`'), the
    // same required ones, the same types; the codes are public codes.
    let public = load_document("docs/openapi.json");
    for name in ["Error", "ErrorObject", "ErrorDetails"] {
        let (ours, theirs) = (schema(&doc, name), schema(&public, name));
        assert_eq!(ours["required"], theirs["required"], "{name}");
        assert_eq!(ours.get("additionalProperties"), theirs.get("additionalProperties"), "{name}");
        for (member, s) in ours["properties"].as_object().expect("properties") {
            let public_member = &theirs["properties"][member];
            assert!(public_member.is_object(), "{name}.{member} is not in the public document");
            assert_eq!((&s["type"], &s["$ref"]), (&public_member["type"], &public_member["$ref"]), "{name}.{member}");
        }
    }
    let codes = |d: &Value| -> BTreeSet<String> {
        let codes = schema(d, "ErrorObject")["properties"]["code"]["x-extensible-enum"].as_array().expect("codes");
        codes.iter().filter_map(Value::as_str).map(str::to_owned).collect()
    };
    assert!(codes(&doc).is_subset(&codes(&public)), "{:?}", codes(&doc));

    // A running server serves each documented method, and answers every other one with 405
    // and the documented `Allow` — before it looks at the token.
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let (backups, token) = (tempfile::tempdir().expect("tempdir"), bearer(&server));
    // A first backup: `GET /v1/admin/backup` answers 404 before one.
    let started = server.admin_json("POST", BACKUP, Some(&json!({"to": backups.path().join("bk")})));
    check(&doc, "post", BACKUP, &started, 202);
    for (_, template, methods) in ROUTES {
        let path = fill(template, &key.id, &key.account);
        for method in METHODS {
            let reply = server.admin(method, &path);
            let unauthenticated = admin_raw(&server, method, &path, &[], "");
            if methods.contains(&method) {
                assert!(![404, 405].contains(&reply.status), "{method} {path} is not served: {reply:?}");
                check(&doc, &method.to_lowercase(), template, &unauthenticated, 401);
                continue;
            }
            let m = methods[0].to_lowercase();
            for reply in [&reply, &unauthenticated] {
                check(&doc, &m, template, reply, 405);
                assert_eq!(reply.header("allow"), Some(methods.join(", ").as_str()), "{method} {path}");
                assert_eq!(reply.error()["details"]["allow"], json!(methods), "{method} {path}");
            }
        }
        let head = admin_raw(&server, "HEAD", &path, &[("authorization", token.as_str())], "");
        assert_eq!((head.status, head.header("allow")), (405, Some(methods.join(", ").as_str())), "HEAD {path}");
    }
    // Paths the router does not match: 404, token or not.
    for path in ["/", "/metrics/", "/v1/admin/keys/", "/v1/admin/keys/key_1", "/v1/admin/nope", "/v1/admin/backup/x"] {
        for reply in [server.admin("GET", path), admin_raw(&server, "POST", path, &[], "")] {
            assert_error(&reply, 404, "NOT_FOUND");
            let found = violations(&doc, schema(&doc, "Error"), &reply.body, path);
            assert!(found.is_empty(), "{found:?}");
        }
    }
}

#[test]
fn the_admin_answers_match_the_document() {
    let doc = document();
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = dir.path().join("extra-labels.toml");
    std::fs::write(&extra, "version = 1\n").expect("labels written");
    let extra_path = extra.clone();
    let server = serve(|c| c.labels_extra = vec![extra_path]);
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let admin = |method: &str, path: &str, body: Option<Value>| server.admin_json(method, path, body.as_ref());

    // Keys: create (the least and every option), list, rotate, revoke.
    let created = admin("POST", KEYS, Some(json!({"name": "ci", "scopes": ["usage:read", "wallet:analyze"]})));
    check(&doc, "post", KEYS, &created, 201);
    assert_eq!(created.data()["scopes"], json!(["wallet:analyze", "usage:read"]), "{created:?}");
    let every = json!({"name": "nightly", "scopes": ["usage:read"], "account": key.account, "ratePerSecond": 5,
        "burst": 10, "quota": 0, "period": "day", "expiresAt": "2099-01-01T00:00:00Z"});
    let every = admin("POST", KEYS, Some(every));
    check(&doc, "post", KEYS, &every, 201);
    assert_eq!((&every.data()["account"], &every.data()["quota"]["period"]), (&json!(key.account), &json!("day")));
    let id = created.data_str("id");
    let rotated = admin("POST", &fill(ROTATE_T, &id, ""), None);
    check(&doc, "post", ROTATE_T, &rotated, 201);
    let successor = rotated.data_str("id");
    assert_ne!(successor, id);
    let revoked = admin("POST", &fill(REVOKE_T, &successor, ""), None);
    check(&doc, "post", REVOKE_T, &revoked, 200);
    assert_eq!(revoked.data()["status"], "revoked", "{revoked:?}");
    let again = admin("POST", &fill(REVOKE_T, &successor, ""), None);
    check(&doc, "post", REVOKE_T, &again, 200);
    assert_eq!(again.data()["revokedAt"], revoked.data()["revokedAt"], "the first revocation's time is kept");
    let listed = admin("GET", KEYS, None);
    check(&doc, "get", KEYS, &listed, 200);
    let old = listed.data().as_array().expect("keys").iter().find(|k| k["id"] == id.as_str()).cloned();
    let old = old.unwrap_or_else(|| panic!("{id} listed: {listed:?}"));
    assert_eq!((&old["status"], &old["replacedBy"]), (&json!("revoked"), &json!(successor)), "{old}");
    check_field(&doc, "post", ROTATE_T, &admin("POST", &fill(ROTATE_T, &successor, ""), None), 400, "id");
    for id in ["key_1111111111111111111111", "nope"] {
        check(&doc, "post", ROTATE_T, &admin("POST", &fill(ROTATE_T, id, ""), None), 404);
        check(&doc, "post", REVOKE_T, &admin("POST", &fill(REVOKE_T, id, ""), None), 404);
    }
    let scopes = json!(["usage:read"]);
    for (body, field) in [
        (json!({"name": "ci"}), "body"),
        (json!({"name": "ci", "scopes": "usage:read"}), "body"),
        (json!(["ci"]), "body"),
        (json!({"name": "", "scopes": scopes}), "body"),
        (json!({"name": "ci", "scopes": scopes, "ratePerSecond": 0}), "body"),
        (json!({"name": "ci", "scopes": scopes, "quota": -1}), "body"),
        (json!({"name": "ci", "scopes": ["wallet:fly"]}), "scopes"),
        (json!({"name": "ci", "scopes": []}), "scopes"),
        (json!({"name": "ci", "scopes": scopes, "account": "not an id!"}), "account"),
        (json!({"name": "ci", "scopes": scopes, "period": "week"}), "period"),
        (json!({"name": "ci", "scopes": scopes, "expiresAt": "2001-01-01T00:00:00Z"}), "expiresAt"),
    ] {
        check_field(&doc, "post", KEYS, &admin("POST", KEYS, Some(body)), 400, field);
    }
    let b = bearer(&server);
    let not_json =
        admin_raw(&server, "POST", KEYS, &[("authorization", &b), ("content-type", "application/json")], "{");
    check_field(&doc, "post", KEYS, &not_json, 400, "body");
    let no_type =
        admin_raw(&server, "POST", KEYS, &[("authorization", &b)], r#"{"name":"ci","scopes":["usage:read"]}"#);
    check(&doc, "post", KEYS, &no_type, 415);
    let large = admin("POST", KEYS, Some(json!({"name": "x".repeat(5_000), "scopes": scopes})));
    check(&doc, "post", KEYS, &large, 413);
    assert_eq!(large.error()["details"]["maxBytes"], 4096, "{large:?}");

    // The token: missing, malformed, another (an API key is not one).
    let api_key = format!("Bearer {k}");
    for (authorization, reason) in
        [(None, "missing"), (Some("Token abc"), "malformed"), (Some(api_key.as_str()), "unknown")]
    {
        let headers: Vec<(&str, &str)> = authorization.map(|a| ("authorization", a)).into_iter().collect();
        let refused = admin_raw(&server, "GET", KEYS, &headers, "");
        check(&doc, "get", KEYS, &refused, 401);
        assert_eq!(refused.error()["details"]["reason"], reason, "{refused:?}");
    }

    // The account's webhook secret: the object itself, not in `data`.
    let made = admin("POST", &fill(WEBHOOK_SECRET_T, "", &key.account), None);
    check(&doc, "post", WEBHOOK_SECRET_T, &made, 201);
    assert_eq!(made.body["account"], key.account.as_str(), "{made:?}");
    check(&doc, "post", WEBHOOK_SECRET_T, &admin("POST", &fill(WEBHOOK_SECRET_T, "", "acct_nobody"), None), 404);
    let bad_account = admin("POST", &fill(WEBHOOK_SECRET_T, "", "not%20an%20id"), None);
    check_field(&doc, "post", WEBHOOK_SECRET_T, &bad_account, 400, "account");

    // The account's feedback: on an analysis and on a scan, paged and filtered.
    let (analysis, signal, kind) = super::feedback::ready_analysis(&server, k, OPEN_DELEGATION);
    let feedback = |body: Value| post(server.addr, "/v1/developer/feedback", k, &body.to_string());
    let on_signal = feedback(json!({"analysisId": analysis, "signalId": signal, "verdict": "confirmed"}));
    assert_eq!(on_signal.status, 201, "{on_signal:?}");
    let missed = feedback(json!({"analysisId": analysis, "verdict": "missed", "note": "a drainer"}));
    assert_eq!(missed.status, 201, "{missed:?}");
    let scan = post(server.addr, SCAN_PATH, k, &scan_body(&demo_tx("drain"), None));
    let on_scan = feedback(json!({"verdict": "false_positive", "scan": scan.body}));
    assert_eq!(on_scan.status, 201, "{on_scan:?}");
    let page = |query: &str| admin("GET", &format!("{}{query}", fill(FEEDBACK_T, "", &key.account)), None);
    let all = page("");
    check(&doc, "get", FEEDBACK_T, &all, 200);
    let targets: Vec<&Value> =
        all.data()["feedback"].as_array().expect("feedback").iter().map(|f| &f["target"]).collect();
    assert_eq!(targets, [&json!("analysis"), &json!("analysis"), &json!("scan")], "oldest first: {all:?}");
    let first = page("?limit=1");
    check(&doc, "get", FEEDBACK_T, &first, 200);
    let after = first.data_str("nextAfter");
    check(&doc, "get", FEEDBACK_T, &page(&format!("?limit=2&after={after}")), 200);
    let filtered = page(&format!("?verdict=confirmed&kind={kind}"));
    check(&doc, "get", FEEDBACK_T, &filtered, 200);
    assert_eq!(filtered.data()["feedback"].as_array().map(Vec::len), Some(1), "{filtered:?}");
    let none = page("?kind=none");
    check(&doc, "get", FEEDBACK_T, &none, 200);
    assert_eq!(none.data()["feedback"].as_array().map(Vec::len), Some(2), "missed and the scan: {none:?}");
    // An account no key belongs to: 404, as for its policy and webhook secret.
    check(&doc, "get", FEEDBACK_T, &admin("GET", &fill(FEEDBACK_T, "", "acct_nobody"), None), 404);
    let refusals = [
        ("?limit=0", "limit"),
        ("?limit=1001", "limit"),
        ("?after=0OIl", "after"),
        ("?after=", "after"),
        ("?verdict=nope", "verdict"),
        ("?kind=Open", "kind"),
    ];
    for (query, field) in refusals {
        check_field(&doc, "get", FEEDBACK_T, &page(query), 400, field);
    }
    check_field(&doc, "get", FEEDBACK_T, &admin("GET", &fill(FEEDBACK_T, "", "a%20b"), None), 400, "account");

    // The account's policy: the default, one written, a stale write, mistakes.
    let policy_path = fill(POLICY_T, "", &key.account);
    let default = admin("GET", &policy_path, None);
    check(&doc, "get", POLICY_T, &default, 200);
    assert_eq!(default.data()["policy"]["id"], "default", "{default:?}");
    let policy = json!({"version": 0, "severityOverrides": {"new_wallet": "ignore"}, "denyList": [CLEAN]});
    let written = admin("PUT", &policy_path, Some(policy.clone()));
    check(&doc, "put", POLICY_T, &written, 200);
    assert_eq!(written.data()["policy"]["version"], 1, "{written:?}");
    check(&doc, "get", POLICY_T, &admin("GET", &policy_path, None), 200);
    check(&doc, "put", POLICY_T, &admin("PUT", &policy_path, Some(policy)), 409);
    check_field(&doc, "put", POLICY_T, &admin("PUT", &policy_path, Some(json!({"denylist": []}))), 400, "body");
    check_field(&doc, "put", POLICY_T, &admin("PUT", &policy_path, Some(json!({"version": "1"}))), 400, "version");
    check(&doc, "put", POLICY_T, &admin_raw(&server, "PUT", &policy_path, &[("authorization", &b)], "{}"), 415);
    let huge = admin("PUT", &policy_path, Some(json!({"denyList": ["x".repeat(70_000)]})));
    check(&doc, "put", POLICY_T, &huge, 413);
    assert_eq!(huge.error()["details"]["maxBytes"], 65536, "{huge:?}");
    check(&doc, "get", POLICY_T, &admin("GET", &fill(POLICY_T, "", "acct_nobody"), None), 404);
    check(&doc, "put", POLICY_T, &admin("PUT", &fill(POLICY_T, "", "acct_nobody"), Some(json!({}))), 404);
    check_field(&doc, "get", POLICY_T, &admin("GET", &fill(POLICY_T, "", "a%20b"), None), 400, "account");

    // The labels: reloaded, then a file that fails changes nothing.
    let reloaded = admin("POST", LABELS_RELOAD, None);
    check(&doc, "post", LABELS_RELOAD, &reloaded, 200);
    assert_eq!(reloaded.data()["generation"], 1, "{reloaded:?}");
    std::fs::write(&extra, "version = 7\n").expect("labels written");
    check_field(&doc, "post", LABELS_RELOAD, &admin("POST", LABELS_RELOAD, None), 400, "labels");

    // The report-signing keys: listed, rotated, listed again with the old one retired.
    let keys = admin("GET", SIGNING_KEYS, None);
    check(&doc, "get", SIGNING_KEYS, &keys, 200);
    let rotation = admin("POST", SIGNING_KEYS_ROTATE, None);
    check(&doc, "post", SIGNING_KEYS_ROTATE, &rotation, 201);
    assert_eq!(rotation.data()["retiredKeyId"], keys.data()["keys"][0]["kid"], "{rotation:?}");
    let after_rotation = admin("GET", SIGNING_KEYS, None);
    check(&doc, "get", SIGNING_KEYS, &after_rotation, 200);
    assert_eq!(after_rotation.data()["keys"][0]["kid"], rotation.data()["keyId"], "{after_rotation:?}");
    assert_eq!(after_rotation.data()["keys"][1]["status"], "retired", "{after_rotation:?}");

    // Metrics: the Prometheus text the document names.
    let metrics = admin("GET", "/metrics", None);
    assert_eq!(metrics.status, 200, "{metrics:?}");
    assert!(doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"]["text/plain"].is_object());
    assert_eq!(metrics.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    assert!(metrics.header("x-request-id").is_some(), "{metrics:?}");
    assert!(String::from_utf8_lossy(&metrics.raw_body).contains("# TYPE "), "{metrics:?}");
}

#[test]
fn the_backup_answers_match_the_document() {
    let doc = document();
    // Paced so that a backup of a fresh server runs for a few seconds (~110 KB at 32 KiB/s).
    let server = serve(|c| c.backup_rate_kib_per_s = 32);
    let backups = tempfile::tempdir().expect("tempdir");
    let target = |name: &str| backups.path().join(name).display().to_string();
    let start = |body: Value| server.admin_json("POST", BACKUP, Some(&body));
    check(&doc, "get", BACKUP, &server.admin("GET", BACKUP), 404);

    // Refused targets, then bodies: nothing started.
    let inside = server.data_dir().join("bk").display().to_string();
    let refusals = [
        (json!({"to": "relative/dir"}), "to"),
        (json!({"to": backups.path()}), "to"),
        (json!({"to": target("missing/bk")}), "to"),
        (json!({"to": format!("{}/../bk", backups.path().display())}), "to"),
        (json!({"to": inside}), "to"),
        (json!({"to": target("bk"), "rate": 1}), "body"),
        (json!({"to": 5}), "body"),
        (json!({}), "body"),
    ];
    for (body, field) in refusals {
        check_field(&doc, "post", BACKUP, &start(body), 400, field);
    }
    let b = bearer(&server);
    let no_type = admin_raw(&server, "POST", BACKUP, &[("authorization", &b)], r#"{"to":"/tmp/x"}"#);
    check(&doc, "post", BACKUP, &no_type, 415);
    let large = start(json!({"to": format!("/{}", "x".repeat(5_000))}));
    check(&doc, "post", BACKUP, &large, 413);
    check(&doc, "get", BACKUP, &server.admin("GET", BACKUP), 404);

    // Started: RUNNING at once, one at a time, then DONE.
    let started = start(json!({"to": target("bk")}));
    check(&doc, "post", BACKUP, &started, 202);
    let id = started.data_str("id");
    assert_eq!(
        (started.data_str("state"), started.data_str("to")),
        (String::from("RUNNING"), target("bk")),
        "{started:?}"
    );
    let second = start(json!({"to": target("bk2")}));
    check(&doc, "post", BACKUP, &second, 409);
    assert_eq!(second.error()["details"]["limit"], 1, "{second:?}");
    let running = server.admin("GET", BACKUP);
    check(&doc, "get", BACKUP, &running, 200);
    assert_eq!(
        (running.data_str("id"), running.data_str("state")),
        (id.clone(), String::from("RUNNING")),
        "{running:?}"
    );
    let done = eventually("the backup ends", || server.admin("GET", BACKUP), |r| r.data()["state"] != "RUNNING");
    check(&doc, "get", BACKUP, &done, 200);
    let data = done.data();
    assert_eq!((data["id"].as_str(), data["state"].as_str()), (Some(id.as_str()), Some("DONE")), "{done:?}");
    assert!(
        data["bytesTotal"].as_u64().is_some_and(|n| n > 0) && data["bytesCopied"] == data["bytesTotal"],
        "{done:?}"
    );
    assert!(data["files"].as_u64().is_some_and(|n| n > 0) && data["schemaVersion"].is_u64(), "{done:?}");
    assert!(is_timestamp(&data["endedAt"]) && data["error"].is_null(), "{done:?}");
    // The target exists now: refused.
    check_field(&doc, "post", BACKUP, &start(json!({"to": target("bk")})), 400, "to");
}
