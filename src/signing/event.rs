//! A monitor's event as it is signed (issue #42 item 1): the members of the event document its
//! signature (`xray.monitor_event.v1`) covers, with their values as the events page and the
//! event's webhook write them.
//!
//! Owns: `EventMembers` (the covered members of one event, made from its re-analysis' job
//! record, the event record and the analysis' stored payload) and `MONITOR_EVENT_COVERS`.
//! Called by the job sink (compute threads) when it signs a new event, and by the API (store-work
//! threads) and the webhook renderer (`xray-webhooks`) when they write one — so what is signed
//! and what is served are made by one function.
//!
//! Invariant: the covered members bind whom the event is for (`account`), what it is about
//! (`monitorId`, `wallet`), what it says (`kind`, `changes` — the analysis ids and the score
//! before and after are in it) and which analysis holds the signed report (`analysisId`), with
//! its id and time. No covered member is named `type` (the event's own legacy `type` member is
//! served beside them, unsigned: `kind` is its signed twin).
//! Deliberately absent: the event's `delivery` (it changes over the event's life) and the
//! analysis' document (its own signed report: fetch `analysisId`).

use serde::Serialize;
use serde_json::Value;

use crate::clock::rfc3339_ms;
use crate::store::{EventRecord, JobKind, JobRecord};

/// What a monitor event's signature covers.
pub const MONITOR_EVENT_COVERS: [&str; 8] =
    ["id", "kind", "account", "monitorId", "wallet", "analysisId", "createdAt", "changes"];
/// The kind of every event today: a re-analysis whose `changes` crossed the monitor's thresholds.
pub const EVENT_KIND_RISK_CHANGED: &str = "risk_changed";

/// The covered members of one event, in the order the event document writes them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventMembers {
    pub id: String,
    pub kind: &'static str,
    /// The account the monitor (and so the event) belongs to.
    pub account: String,
    pub monitor_id: String,
    pub wallet: String,
    pub analysis_id: String,
    pub created_at: String,
    /// The re-analysis' `changes` (`null` only when its stored result can no longer be read).
    pub changes: Value,
}

impl EventMembers {
    /// The event `event` of the monitor's re-analysis `job`, whose stored X-Ray is `payload`.
    pub fn of(job: &JobRecord, event: &EventRecord, payload: Option<&[u8]>) -> Result<EventMembers, String> {
        let link = job.monitor.as_ref().ok_or("an event of a job that is no monitor's")?;
        let JobKind::Analysis { wallet } = &job.kind else { return Err("an event of a comparison".to_owned()) };
        Ok(EventMembers {
            id: event.id.clone(),
            kind: EVENT_KIND_RISK_CHANGED,
            account: job.account.clone(),
            monitor_id: link.monitor_id.clone(),
            wallet: wallet.clone(),
            analysis_id: job.id.clone(),
            created_at: rfc3339_ms(event.created_at_ms),
            changes: payload.and_then(changes_of).unwrap_or(Value::Null),
        })
    }

    /// The members by name, for `ReportSigner::sign` (exactly `MONITOR_EVENT_COVERS`).
    pub fn members(&self) -> Result<Vec<(String, Value)>, String> {
        match serde_json::to_value(self) {
            Ok(Value::Object(members)) => Ok(members.into_iter().collect()),
            Ok(_) => Err("the event's members are no object".to_owned()),
            Err(e) => Err(format!("the event's members do not serialize: {e}")),
        }
    }
}

/// The `changes` member of a stored X-Ray.
fn changes_of(payload: &[u8]) -> Option<Value> {
    let mut value: Value = serde_json::from_slice(payload).ok()?;
    value.get_mut("changes").map(Value::take)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MonitorLink;

    fn job() -> JobRecord {
        let mut job = JobRecord::queued(
            "an_7Yq".into(),
            JobKind::Analysis { wallet: "W1".into() },
            "acct_a".into(),
            "key_a".into(),
            1,
            true,
            true,
            0,
            "v".into(),
        );
        job.monitor = Some(MonitorLink {
            monitor_id: "mon_1".into(),
            callback_url: None,
            min_severity: "high".into(),
            score_drop: None,
            previous_analysis_id: Some("an_prev".into()),
            event: None,
        });
        job
    }

    #[test]
    fn the_members_are_exactly_the_covers_with_the_payloads_changes() {
        let event = EventRecord::of_job("an_7Yq", 1_700_000_000_123);
        let payload = br#"{"score":{"value":40},"changes":{"previousAnalysisId":"an_prev","score":{"delta":-30}}}"#;
        let members = EventMembers::of(&job(), &event, Some(payload)).expect("members");
        let named = members.members().expect("named");
        let mut names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        let mut covers = MONITOR_EVENT_COVERS.to_vec();
        covers.sort_unstable();
        assert_eq!(names, covers);
        assert_eq!(members.id, "evt_7Yq");
        assert_eq!(members.account, "acct_a");
        assert_eq!(members.created_at, "2023-11-14T22:13:20.123Z");
        assert_eq!(members.changes["score"]["delta"], -30);
        let unread = EventMembers::of(&job(), &event, None).expect("members");
        assert_eq!(unread.changes, Value::Null);
    }

    #[test]
    fn a_job_of_no_monitor_or_a_comparison_has_no_event_members() {
        let event = EventRecord::of_job("an_7Yq", 1);
        let mut plain = job();
        plain.monitor = None;
        assert!(EventMembers::of(&plain, &event, None).is_err());
        let mut comparison = job();
        comparison.kind = JobKind::Comparison { wallet_a: "A".into(), wallet_b: "B".into(), pair_id: "pair_1".into() };
        assert!(EventMembers::of(&comparison, &event, None).is_err());
    }
}
