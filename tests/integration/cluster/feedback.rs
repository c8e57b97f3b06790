//! Feedback on a cluster (issue #31 item 2): posted on one node, listed through another node's
//! admin API, its repeat on a third node a replace (one record in etcd, whichever node wrote).

use serde_json::json;

use super::nodes::{admin, cluster, finished};
use crate::api::support::{get, post, wallet_body, OPEN_DELEGATION};

#[test]
fn feedback_posted_on_one_node_is_listed_by_another() {
    let (nodes, key) = cluster("feedback", &[]);
    let accepted = post(nodes[0].server.api, "/v1/developer/intelligence/wallet", &key, &wallet_body(OPEN_DELEGATION));
    assert!(matches!(accepted.status, 200 | 202), "{accepted:?}");
    let id = accepted.body["data"]["analysisId"].as_str().expect("analysisId").to_owned();
    let done = finished(&nodes[0], &format!("/v1/developer/intelligence/analysis/{id}"), &key);
    let signal = done["data"]["xray"]["signals"][0]["id"].as_str().expect("a signal").to_owned();
    let body = json!({"analysisId": id, "signalId": signal, "verdict": "false_positive"}).to_string();
    let first = post(nodes[0].server.api, "/v1/developer/feedback", &key, &body);
    assert_eq!(first.status, 201, "{first:?}");
    let again = json!({"analysisId": id, "signalId": signal, "verdict": "confirmed"}).to_string();
    let again = post(nodes[2].server.api, "/v1/developer/feedback", &key, &again);
    assert_eq!(again.status, 200, "a replace on another node: {again:?}");
    assert_eq!(again.body["data"]["feedbackId"], first.body["data"]["feedbackId"]);

    let status = get(nodes[1].server.api, "/v1/developer/status", &key);
    let account = status.body["data"]["key"]["account"].as_str().expect("account").to_owned();
    let page = admin(&nodes[1], "GET", &format!("/v1/admin/accounts/{account}/feedback"));
    assert_eq!(page.status, 200, "{page:?}");
    let listed = page.body["data"]["feedback"].as_array().expect("feedback").clone();
    assert_eq!(listed.len(), 1, "{page:?}");
    assert_eq!((listed[0]["analysisId"].as_str(), listed[0]["verdict"].as_str()), (Some(&*id), Some("confirmed")));
}
