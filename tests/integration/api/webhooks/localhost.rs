//! Issue #42 item 2: a refused `callbackUrl` says which rule it breaks (`details.reason`, and
//! in words) and, where the operator could lift the rule, names `--webhook-allow-hosts`; and
//! `localhost` is the loopback it is. Without the flag, `https://localhost:…` and
//! `http://localhost:…` are refused as loopback on every endpoint that takes a `callbackUrl`,
//! monitors included; with `127.0.0.1` allowed, `http://localhost:<port>` is accepted as
//! `http://127.0.0.1:<port>` is, and delivered to a receiver on 127.0.0.1. Real loopback HTTP.

use serde_json::json;

use super::*;

const MONITORS: &str = "/v1/developer/monitors";

/// `url` (a receiver's, on 127.0.0.1) with its host written `localhost`.
fn on_localhost(url: &str) -> String {
    url.replacen("127.0.0.1", "localhost", 1)
}

/// Each endpoint that takes a `callbackUrl`, with a body naming `url`.
fn hooked_bodies(url: &str) -> [(&'static str, String); 4] {
    [
        (WALLET_PATH, json!({ "wallet": CLEAN, "callbackUrl": url }).to_string()),
        (COMPARE_PATH, json!({ "walletA": SYBIL_A, "walletB": SYBIL_B, "callbackUrl": url }).to_string()),
        ("/v1/developer/intelligence/wallets", json!({ "wallets": [CLEAN], "callbackUrl": url }).to_string()),
        (MONITORS, json!({ "wallets": [CLEAN], "callbackUrl": url }).to_string()),
    ]
}

#[test]
fn a_refused_callback_url_names_its_rule_and_the_flag_that_lifts_it() {
    let strict = serve(|_| {});
    let key = strict.key(KeyOptions::default());
    let k = key.secret.as_str();
    let cases = [
        ("https://localhost:8443/hook", "loopback", true),
        ("http://localhost:9000/hook", "loopback", true),
        ("https://LOCALHOST./hook", "loopback", true),
        ("http://127.0.0.1:9000/hook", "loopback", true),
        ("https://[::1]/hook", "loopback", true),
        ("https://10.0.0.1/hook", "private_address", true),
        ("https://169.254.169.254/latest/meta-data/", "private_address", true),
        ("https://8.8.8.8/hook", "address", true),
        ("https://receiver/hook", "host_name", true),
        ("http://hooks.example.com/hook", "not_https", true),
        ("https://hooks.example.com:65535/hook", "port", false),
        ("ftp://hooks.example.com/", "scheme", false),
        ("https://user:pw@hooks.example.com/", "credentials", false),
        ("not a url", "not_url", false),
    ];
    for (url, reason, names_the_flag) in cases {
        for (path, body) in hooked_bodies(url) {
            let reply = post(strict.addr, path, k, &body);
            assert_error_details(&reply, 400, "INVALID_REQUEST", &json!({ "field": "callbackUrl", "reason": reason }));
            let message = reply.error()["message"].as_str().expect("message");
            assert!(message.starts_with("callbackUrl"), "{url} on {path}: {message}");
            assert_eq!(message.contains("--webhook-allow-hosts"), names_the_flag, "{url} on {path}: {message}");
        }
    }
    let usage = strict.usage(k);
    assert_eq!(usage.used + usage.reserved, 0, "refused before anything was recorded");
}

#[test]
fn with_127_0_0_1_allowed_localhost_is_accepted_over_http_and_delivered_there() {
    let server = allowing_loopback();
    let (key, secret) = key_with_secret(&server);
    let k = key.secret.as_str();
    let receiver = Receiver::start(&[200]);
    let url = on_localhost(&receiver.url());
    assert!(url.starts_with("http://localhost:"), "{url}");
    let body = json!({ "wallet": CLEAN, "callbackUrl": url }).to_string();
    let data = settled(&server, &submit(&server, k, WALLET_PATH, &body).poll_path(), k);
    assert_eq!(data["callback"]["status"], "DELIVERED", "{data}");
    assert_eq!(data["callback"]["url"], url.as_str(), "{data}");
    let got = receiver.wait_for(1);
    let signature = got[0].header("xray-signature").expect("Xray-Signature");
    assert!(verify(&secret, signature, &got[0].body, now_s(), 300).is_ok(), "{signature}");

    // Every endpoint takes it, https too (the allowed host may use either), monitors included.
    for url in [url.as_str(), "https://localhost:1/hook"] {
        for (path, body) in hooked_bodies(url) {
            let reply = post(server.addr, path, k, &body);
            assert!((200..=202).contains(&reply.status), "{url} on {path}: {reply:?}");
        }
    }
    // Another loopback address is not the one allowed: refused, naming the flag.
    let body = json!({ "wallet": CLEAN, "callbackUrl": "http://127.0.0.2:9/hook" }).to_string();
    let reply = post(server.addr, WALLET_PATH, k, &body);
    assert_error_details(&reply, 400, "INVALID_REQUEST", &json!({ "field": "callbackUrl", "reason": "loopback" }));
    assert!(reply.error()["message"].as_str().is_some_and(|m| m.contains("--webhook-allow-hosts")), "{reply:?}");
}
