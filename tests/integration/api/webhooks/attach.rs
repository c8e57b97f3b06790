//! Issue #32: a `callbackUrl` on a request answered by an existing job — a fresh READY result
//! reused, a live job deduplicated onto, a kept answer replayed, a batch item — is attached to
//! that job and delivered (at once when the job already finished), signed, with the document a
//! poll answers; the answer's `callback` says so. A job that already has another webhook keeps
//! it: the answer says `attached: false` and why, and nothing reaches the second URL. Nothing
//! is charged for any of it. Real loopback HTTP, a real RocksDB, local receivers.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;

/// What a request's answer says of its `callbackUrl` when the job's webhook is `url`.
fn attached(url: &str, status: &str, attempts: u64) -> Value {
    json!({ "url": url, "status": status, "attempts": attempts, "lastError": null, "attached": true })
}

/// The same when the job's webhook is another request's `url`.
fn not_attached(url: &str, status: &str, attempts: u64) -> Value {
    let reason = "job_has_other_callback";
    json!({ "url": url, "status": status, "attempts": attempts, "lastError": null, "attached": false, "reason": reason })
}

fn hooked(wallet: &str, url: &str) -> String {
    json!({ "wallet": wallet, "callbackUrl": url }).to_string()
}

/// The delivery is the poll's document less `callback`, signed with the account's secret and
/// named by the job's id.
fn assert_delivers_the_poll(request: &Received, polled: &Value, secret: &str) {
    let signature = request.header("xray-signature").expect("Xray-Signature");
    assert!(verify(secret, signature, &request.body, now_s(), 300).is_ok(), "{signature}");
    assert_eq!(request.header("xray-webhook-id"), polled["analysisId"].as_str());
    let mut document = polled.clone();
    document.as_object_mut().expect("data").remove("callback");
    let sent: Value = serde_json::from_slice(&request.body).expect("JSON body");
    assert_eq!(sent, json!({ "data": document }));
}

/// The README's quick start, step by step: an analysis, then the webhook step on the same
/// wallet. Its fresh READY result answers (200, `deduplicated`) and is delivered at once; the
/// same request again (and its idempotent replay) says it was; another URL is not attached.
#[test]
fn a_callback_on_a_reused_result_is_attached_and_delivered_at_once() {
    let server = allowing_loopback();
    let (key, secret) = key_with_secret(&server);
    let k = key.secret.as_str();
    let first = submit(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION));
    let poll_path = first.poll_path();
    assert_eq!(server.finish(&poll_path, k).job_status(), "READY");

    let receiver = Receiver::start(&[200]);
    let reused = submit(&server, k, WALLET_PATH, &hooked(OPEN_DELEGATION, &receiver.url()));
    assert_eq!((reused.status, &reused.data()["deduplicated"]), (200, &json!(true)), "{reused:?}");
    assert_eq!(reused.data()["analysisId"], first.data()["analysisId"]);
    assert_eq!(reused.data()["callback"], attached(&receiver.url(), "PENDING", 0), "{reused:?}");
    let got = receiver.wait_for(1);
    let polled = settled(&server, &poll_path, k);
    assert_eq!(polled["callback"]["status"], "DELIVERED", "{polled}");
    assert_delivers_the_poll(&got[0], &polled, &secret);

    // Again, plainly and with an Idempotency-Key (then its replay): the job's webhook already
    // is this URL, delivered; nothing is sent twice.
    let again = submit(&server, k, WALLET_PATH, &hooked(OPEN_DELEGATION, &receiver.url()));
    assert_eq!(again.data()["callback"], attached(&receiver.url(), "DELIVERED", 1), "{again:?}");
    let bearer = format!("Bearer {k}");
    let headers =
        [("Authorization", bearer.as_str()), ("Content-Type", "application/json"), ("Idempotency-Key", "qs-1")];
    let keyed = raw(server.addr, "POST", WALLET_PATH, &headers, &hooked(OPEN_DELEGATION, &receiver.url()));
    let replay = raw(server.addr, "POST", WALLET_PATH, &headers, &hooked(OPEN_DELEGATION, &receiver.url()));
    assert_eq!(replay.header("idempotent-replayed"), Some("true"), "{replay:?}");
    for reply in [&keyed, &replay] {
        assert_eq!(reply.data()["callback"], attached(&receiver.url(), "DELIVERED", 1), "{reply:?}");
    }

    // Another URL on the same job: the first stays, the answer says so, nothing goes there.
    let other = Receiver::start(&[200]);
    let refused = submit(&server, k, WALLET_PATH, &hooked(OPEN_DELEGATION, &other.url()));
    assert_eq!(refused.data()["callback"], not_attached(&receiver.url(), "DELIVERED", 1), "{refused:?}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(other.got.lock().expect("log").is_empty(), "nothing delivered to a URL that was not attached");
    assert_eq!(receiver.got.lock().expect("log").len(), 1, "delivered once");
    let usage = server.usage(k);
    assert_eq!((usage.used, usage.reserved), (1, 0), "one analysis charged, attaches free: {usage:?}");
}

/// A `callbackUrl` deduplicated onto a live job: attached (the poll shows it while the job
/// runs) and delivered when the job finishes; a second, different URL on the same live job is
/// not attached, and gets nothing.
#[test]
fn a_callback_deduplicated_onto_a_live_job_is_delivered_when_it_finishes() {
    let server = serve_slow(300, |c| c.webhook_allow_hosts = vec!["127.0.0.1".into()]);
    let (key, secret) = key_with_secret(&server);
    let k = key.secret.as_str();
    let first = submit(&server, k, WALLET_PATH, &wallet_body(SYBIL_C));
    assert_eq!(first.status, 202, "{first:?}");
    let (receiver, other) = (Receiver::start(&[200]), Receiver::start(&[200]));
    let dedup = submit(&server, k, WALLET_PATH, &hooked(SYBIL_C, &receiver.url()));
    assert_eq!((dedup.status, &dedup.data()["deduplicated"]), (202, &json!(true)), "{dedup:?}");
    assert_eq!(dedup.data()["analysisId"], first.data()["analysisId"]);
    assert_eq!(dedup.data()["callback"], attached(&receiver.url(), "PENDING", 0), "{dedup:?}");
    let live = get(server.addr, &first.poll_path(), k);
    if live.job_status() != "READY" {
        assert_eq!(live.data()["callback"]["url"], receiver.url(), "the live job's poll shows it: {live:?}");
    }
    let second = submit(&server, k, WALLET_PATH, &hooked(SYBIL_C, &other.url()));
    assert_eq!(second.data()["analysisId"], first.data()["analysisId"]);
    assert_eq!(second.data()["callback"]["attached"], false, "{second:?}");
    assert_eq!(second.data()["callback"]["url"], receiver.url(), "{second:?}");
    assert_eq!(second.data()["callback"]["reason"], "job_has_other_callback", "{second:?}");

    let got = receiver.wait_for(1);
    let polled = settled(&server, &first.poll_path(), k);
    assert_eq!(
        polled["callback"],
        json!({ "url": receiver.url(), "status": "DELIVERED", "attempts": 1, "lastError": null })
    );
    assert_delivers_the_poll(&got[0], &polled, &secret);
    std::thread::sleep(Duration::from_millis(300));
    assert!(other.got.lock().expect("log").is_empty(), "nothing for the URL that was not attached");
    let usage = server.usage(k);
    assert_eq!((usage.used, usage.reserved), (1, 0), "{usage:?}");
}

/// A batch's `callbackUrl` on items answered by existing jobs: attached to the one without a
/// webhook (and delivered), refused on the one with another; the new job's is its own.
#[test]
fn a_batchs_callback_is_attached_to_each_items_existing_job() {
    let server = allowing_loopback();
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    webhook_secret(&server, &key);
    let (mine, batch_hook) = (Receiver::start(&[200]), Receiver::start(&[200]));
    let taken = submit(&server, k, WALLET_PATH, &hooked(CLEAN, &mine.url()));
    let plain = submit(&server, k, WALLET_PATH, &wallet_body(SYBIL_D));
    assert_eq!(server.finish(&plain.poll_path(), k).job_status(), "READY");
    assert_eq!(settled(&server, &taken.poll_path(), k)["callback"]["status"], "DELIVERED");
    let body = json!({ "wallets": [CLEAN, SYBIL_D, SYBIL_A], "callbackUrl": batch_hook.url() }).to_string();
    let batch = post(server.addr, "/v1/developer/intelligence/wallets", k, &body);
    assert_eq!(batch.status, 200, "{batch:?}");
    let items = batch.data()["items"].as_array().expect("items");
    assert_eq!(items[0]["callback"], not_attached(&mine.url(), "DELIVERED", 1), "{batch:?}");
    assert_eq!(items[1]["callback"], attached(&batch_hook.url(), "PENDING", 0), "{batch:?}");
    assert_eq!(items[2]["callback"], attached(&batch_hook.url(), "PENDING", 0), "a new job: {batch:?}");
    assert_eq!((batch.data()["admitted"].as_u64(), batch.data()["deduplicated"].as_u64()), (Some(1), Some(2)));
    server.finish(&analysis_path(items[2]["analysisId"].as_str().expect("analysisId")), k);
    let got = batch_hook.wait_for(2);
    let mut ids: Vec<_> = got.iter().filter_map(|r| r.header("xray-webhook-id")).collect();
    ids.sort_unstable();
    let mut expected = vec![items[1]["analysisId"].as_str().expect("id"), items[2]["analysisId"].as_str().expect("id")];
    expected.sort_unstable();
    assert_eq!(ids, expected, "the reused job and the new one, not the job with its own webhook");
    assert_eq!(mine.got.lock().expect("log").len(), 1, "the first webhook delivered once");
}
