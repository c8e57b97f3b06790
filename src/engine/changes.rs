//! What changed since the last X-Ray of the same wallet (issue #15): signals that appeared,
//! that disappeared, that changed their facts, and the score's movement, between two X-Ray
//! payloads made by the same engine versions.
//!
//! Owns: `Changes` (the `changes` member of an analysis the API serves) and `changes`, which
//! compares two payloads as stored (the JSON the engine produced). Pure and deterministic;
//! called on compute threads when an analysis finishes.
//!
//! A signal is "the same" in both when its kind and the accounts it names (every fact whose
//! value is an address) are equal: a delegation of the same token account to the same delegate
//! whose balance moved is `changed` (the facts that differ are named), not gone and back.
//! Signals with equal identities pair in order. Lists follow the current X-Ray's signal order
//! (`disappeared`: the previous one's), so equal inputs always give equal bytes.
//! Invariant: payloads made by other engine versions or policies are not compared (`None`): a
//! new rule, weight or override would show as a change of the wallet.
//! Deliberately absent: changes of evidence, dimensions or attack paths (they follow from the
//! signals), and any store access (the caller finds the previous analysis).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::engine::report::Severity;
use crate::pubkey::Pubkey;

/// The previous analysis a new one is compared with.
#[derive(Debug, Clone, Copy)]
pub struct Previous<'a> {
    pub analysis_id: &'a str,
    /// RFC 3339 with milliseconds (`clock::rfc3339_ms`).
    pub completed_at: &'a str,
    /// Its X-Ray, as stored.
    pub payload: &'a [u8],
}

/// `xray.changes` of an analysis that has a previous one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    pub previous_analysis_id: String,
    pub previous_completed_at: String,
    pub score: ScoreMove,
    pub appeared: Vec<SignalRef>,
    pub disappeared: Vec<SignalRef>,
    pub changed: Vec<SignalChange>,
}

impl Changes {
    /// Whether these changes cross a monitor's thresholds: a signal appeared at or above
    /// `min_severity`, or — when `score_drop` is set — the score fell by at least that many
    /// points. Signals that disappeared or only changed their facts never do.
    pub fn crosses(&self, min_severity: Severity, score_drop: Option<u8>) -> bool {
        let severe = |s: &SignalRef| Severity::parse(&s.severity).is_some_and(|s| s >= min_severity);
        let dropped = score_drop.is_some_and(|drop| -self.score.delta >= i64::from(drop.max(1)));
        self.appeared.iter().any(severe) || dropped
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreMove {
    pub previous: i64,
    pub current: i64,
    /// `current − previous` (negative: less safe than before).
    pub delta: i64,
    pub previous_risk_level: String,
    pub current_risk_level: String,
}

/// A signal of one of the two X-Rays, by its id there.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalRef {
    pub signal_id: String,
    pub kind: String,
    pub severity: String,
    pub title: String,
}

/// A signal present in both whose facts differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalChange {
    pub signal_id: String,
    pub previous_signal_id: String,
    pub kind: String,
    /// The names of the facts whose values differ, in name order.
    pub facts: Vec<String>,
}

/// The parts of a stored X-Ray a comparison reads.
struct Parsed {
    score: i64,
    risk_level: String,
    engine_versions: Value,
    policy: Value,
    signals: Vec<Value>,
}

fn parse(payload: &[u8]) -> Result<Parsed, String> {
    let value: Value = serde_json::from_slice(payload).map_err(|e| format!("X-Ray payload: {e}"))?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    Ok(Parsed {
        score: value["score"]["value"].as_i64().ok_or("X-Ray payload without a score")?,
        risk_level: text(&value["score"]["riskLevel"]),
        engine_versions: value["engineVersions"].clone(),
        policy: value["policy"].clone(),
        signals: value["signals"].as_array().cloned().unwrap_or_default(),
    })
}

/// A signal's identity: its kind and the addresses among its facts.
fn identity(signal: &Value) -> String {
    let mut id = signal["kind"].as_str().unwrap_or_default().to_owned();
    if let Some(facts) = signal["facts"].as_object() {
        let accounts: BTreeMap<&String, &str> = facts
            .iter()
            .filter_map(|(name, value)| value.as_str().filter(|text| Pubkey::parse(text).is_ok()).map(|a| (name, a)))
            .collect();
        for (name, account) in accounts {
            id.push_str(&format!("|{name}={account}"));
        }
    }
    id
}

fn signal_ref(signal: &Value) -> SignalRef {
    let text = |field: &str| signal[field].as_str().unwrap_or_default().to_owned();
    SignalRef { signal_id: text("id"), kind: text("kind"), severity: text("severity"), title: text("title") }
}

/// The names of the facts whose values differ between two signals.
fn differing_facts(previous: &Value, current: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (before, after) =
        (previous["facts"].as_object().unwrap_or(&empty), current["facts"].as_object().unwrap_or(&empty));
    let mut names: Vec<String> =
        before.keys().chain(after.keys()).filter(|name| before.get(*name) != after.get(*name)).cloned().collect();
    names.sort();
    names.dedup();
    names
}

/// The changes from `previous` to `current` (a new X-Ray payload of the same wallet), or
/// `None` when the two were made by different engine versions or policies (or versions of one). `Err` when a payload is not an
/// X-Ray.
pub fn changes(previous: Previous<'_>, current: &[u8]) -> Result<Option<Changes>, String> {
    let (before, after) = (parse(previous.payload)?, parse(current)?);
    if before.engine_versions != after.engine_versions || before.policy != after.policy {
        return Ok(None);
    }
    // Previous signals by identity, in order; each current signal takes the first unpaired.
    let mut unpaired: HashMap<String, std::collections::VecDeque<usize>> = HashMap::new();
    for (i, signal) in before.signals.iter().enumerate() {
        unpaired.entry(identity(signal)).or_default().push_back(i);
    }
    let (mut appeared, mut changed) = (Vec::new(), Vec::new());
    for signal in &after.signals {
        match unpaired.get_mut(&identity(signal)).and_then(|queue| queue.pop_front()) {
            None => appeared.push(signal_ref(signal)),
            Some(i) => {
                let facts = differing_facts(&before.signals[i], signal);
                if !facts.is_empty() {
                    let previous_signal_id = before.signals[i]["id"].as_str().unwrap_or_default().to_owned();
                    let SignalRef { signal_id, kind, .. } = signal_ref(signal);
                    changed.push(SignalChange { signal_id, previous_signal_id, kind, facts });
                }
            }
        }
    }
    let mut gone: Vec<usize> = unpaired.into_values().flatten().collect();
    gone.sort_unstable();
    Ok(Some(Changes {
        previous_analysis_id: previous.analysis_id.to_owned(),
        previous_completed_at: previous.completed_at.to_owned(),
        score: ScoreMove {
            previous: before.score,
            current: after.score,
            delta: after.score - before.score,
            previous_risk_level: before.risk_level,
            current_risk_level: after.risk_level,
        },
        appeared,
        disappeared: gone.into_iter().map(|i| signal_ref(&before.signals[i])).collect(),
        changed,
    }))
}

/// `Changes` made to order, for the tests of the decisions made on them (here and in
/// `jobs::sink`).
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// Changes of a score that moved from 70 by `delta`, where one signal of each of
    /// `appeared` severities appeared (and, so that only `appeared` can count, one `critical`
    /// signal disappeared and one changed its facts).
    pub(crate) fn moved(delta: i64, appeared: &[Severity]) -> Changes {
        let signal = |i: usize, severity: Severity| SignalRef {
            signal_id: format!("sig_{i}"),
            kind: "open_token_delegation".into(),
            severity: severity.as_str().into(),
            title: format!("signal {i}"),
        };
        Changes {
            previous_analysis_id: "an_prev".into(),
            previous_completed_at: "2026-11-24T10:00:00.000Z".into(),
            score: ScoreMove {
                previous: 70,
                current: 70 + delta,
                delta,
                previous_risk_level: "low".into(),
                current_risk_level: "low".into(),
            },
            appeared: appeared.iter().enumerate().map(|(i, s)| signal(i + 1, *s)).collect(),
            disappeared: vec![signal(90, Severity::Critical)],
            changed: vec![SignalChange {
                signal_id: "sig_91".into(),
                previous_signal_id: "sig_92".into(),
                kind: "wallet_assigned".into(),
                facts: vec!["balance".into()],
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::moved;
    use super::*;
    use serde_json::json;

    #[test]
    fn a_score_drop_crosses_at_and_above_score_drop_never_below_nor_on_a_rise() {
        let min_severity = Severity::Critical; // no signal appears: the score alone decides
        assert!(moved(-10, &[]).crosses(min_severity, Some(10)), "a drop of exactly scoreDrop");
        assert!(moved(-11, &[]).crosses(min_severity, Some(10)), "a drop past scoreDrop");
        assert!(moved(-70, &[]).crosses(min_severity, Some(1)), "to zero");
        assert!(!moved(-9, &[]).crosses(min_severity, Some(10)), "a drop short of scoreDrop");
        assert!(!moved(-1, &[]).crosses(min_severity, Some(2)));
        for rise in [1, 10, 11, 30] {
            assert!(!moved(rise, &[]).crosses(min_severity, Some(10)), "a rise of {rise}");
            assert!(!moved(rise, &[]).crosses(min_severity, Some(1)), "a rise of {rise}");
        }
        assert!(!moved(-50, &[]).crosses(min_severity, None), "without scoreDrop a drop alone makes nothing");
    }

    #[test]
    fn no_change_crosses_nothing_with_or_without_score_drop() {
        for score_drop in [None, Some(1), Some(10), Some(100)] {
            for min_severity in Severity::ALL {
                assert!(!moved(0, &[]).crosses(min_severity, score_drop), "{min_severity:?} {score_drop:?}");
            }
        }
        // Equal payloads, compared for real: no change, nothing crosses.
        let payload = xray(40, json!([signal("sig_1", "open_token_delegation", "5", DELEGATE)]));
        let same = changes(previous(&payload), &payload).unwrap().unwrap();
        assert!(!same.crosses(Severity::Info, Some(1)));
    }

    #[test]
    fn a_new_signal_crosses_at_and_above_min_severity_never_below() {
        assert!(moved(0, &[Severity::High]).crosses(Severity::High, None), "at minSeverity");
        assert!(moved(0, &[Severity::Critical]).crosses(Severity::High, None), "above");
        assert!(!moved(0, &[Severity::Medium]).crosses(Severity::High, None), "below");
        assert!(!moved(0, &[Severity::Info, Severity::Low, Severity::Medium]).crosses(Severity::High, Some(10)));
        assert!(moved(0, &[Severity::Low, Severity::High]).crosses(Severity::High, None), "any one at it");
        assert!(moved(0, &[Severity::Info]).crosses(Severity::Info, None));
        // Below minSeverity, the score still decides on its own.
        assert!(moved(-10, &[Severity::Medium]).crosses(Severity::High, Some(10)));
        assert!(!moved(-9, &[Severity::Medium]).crosses(Severity::High, Some(10)));
        // A severity no engine writes never crosses.
        let mut odd = moved(0, &[Severity::Critical]);
        odd.appeared[0].severity = "severe".into();
        assert!(!odd.crosses(Severity::Info, None));
    }

    const DELEGATE: &str = "5HhyYTJT5qsJYMb7ezorfxqYjLMPJR7HQVNF2ongzbnb";
    const ACCOUNT: &str = "UWRTpe8xvxCi2zMBRTvoN7EwJxfW8R37rmf66yzq9sD";

    fn xray(score: i64, signals: Value) -> Vec<u8> {
        let versions = json!({ "signals": "1.3.0", "xray": "1.0.0" });
        let level = if score > 50 { "low" } else { "critical" };
        serde_json::to_vec(
            &json!({ "score": { "value": score, "riskLevel": level }, "signals": signals, "engineVersions": versions }),
        )
        .unwrap()
    }

    fn signal(id: &str, kind: &str, balance: &str, delegate: &str) -> Value {
        json!({ "id": id, "kind": kind, "severity": "high", "title": format!("{kind} {id}"),
                "facts": { "balance": balance, "delegate": delegate, "tokenAccount": ACCOUNT, "unlimited": true } })
    }

    fn previous(payload: &[u8]) -> Previous<'_> {
        Previous { analysis_id: "an_prev", completed_at: "2026-11-24T10:00:00.000Z", payload }
    }

    #[test]
    fn appeared_disappeared_and_changed_signals_with_the_score_movement() {
        let before = xray(
            60,
            json!([
                signal("sig_1", "open_token_delegation", "5", DELEGATE),
                signal("sig_2", "memo_spam", "0", ACCOUNT)
            ]),
        );
        let after = xray(
            24,
            json!([
                signal("sig_1", "wallet_assigned", "0", DELEGATE),
                signal("sig_2", "open_token_delegation", "9", DELEGATE)
            ]),
        );
        let changes = changes(previous(&before), &after).unwrap().unwrap();
        assert_eq!(
            changes.score,
            ScoreMove {
                previous: 60,
                current: 24,
                delta: -36,
                previous_risk_level: "low".into(),
                current_risk_level: "critical".into()
            }
        );
        assert_eq!(
            changes.appeared.iter().map(|s| (s.signal_id.as_str(), s.kind.as_str())).collect::<Vec<_>>(),
            [("sig_1", "wallet_assigned")]
        );
        assert_eq!(
            changes.disappeared.iter().map(|s| (s.signal_id.as_str(), s.kind.as_str())).collect::<Vec<_>>(),
            [("sig_2", "memo_spam")]
        );
        assert_eq!(
            changes.changed,
            [SignalChange {
                signal_id: "sig_2".into(),
                previous_signal_id: "sig_1".into(),
                kind: "open_token_delegation".into(),
                facts: vec!["balance".into()],
            }]
        );
        assert_eq!(changes.previous_analysis_id, "an_prev");
    }

    #[test]
    fn another_account_is_another_signal_and_equal_payloads_change_nothing() {
        let before = xray(40, json!([signal("sig_1", "open_token_delegation", "5", DELEGATE)]));
        let other_delegate = xray(40, json!([signal("sig_1", "open_token_delegation", "5", ACCOUNT)]));
        let moved = changes(previous(&before), &other_delegate).unwrap().unwrap();
        assert_eq!((moved.appeared.len(), moved.disappeared.len(), moved.changed.len()), (1, 1, 0));
        let same = changes(previous(&before), &before).unwrap().unwrap();
        assert!(same.appeared.is_empty() && same.disappeared.is_empty() && same.changed.is_empty());
        assert_eq!(same.score.delta, 0);
        // Two signals of one identity pair in order; a third is new.
        let twice = xray(
            40,
            json!([
                signal("sig_1", "open_token_delegation", "5", DELEGATE),
                signal("sig_2", "open_token_delegation", "5", DELEGATE)
            ]),
        );
        let one_more = changes(previous(&before), &twice).unwrap().unwrap();
        assert_eq!(one_more.appeared.iter().map(|s| s.signal_id.as_str()).collect::<Vec<_>>(), ["sig_2"]);
    }

    #[test]
    fn other_engine_versions_are_not_compared_and_non_xrays_are_errors() {
        let before = xray(40, json!([]));
        let mut value: Value = serde_json::from_slice(&before).unwrap();
        value["engineVersions"]["signals"] = json!("2.0.0");
        let newer = serde_json::to_vec(&value).unwrap();
        assert_eq!(changes(previous(&before), &newer).unwrap(), None);
        assert!(changes(previous(b"{}"), &before).is_err());
        assert!(changes(previous(&before), b"not json").is_err());
    }
}
