//! Interim: the metrics API the app records into, replaced by the metrics helper's module.
//! Owns nothing yet; every call is a no-op until the Prometheus registry lands.

use crate::api::error::ErrorCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteLabel {
    Wallet,
    Analysis,
    Compare,
    Comparison,
    Status,
    Usage,
    Healthz,
    Unmatched,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    RateLimitedIp,
    Other,
}
impl RejectReason {
    pub fn from_code(_: ErrorCode) -> Option<Self> {
        Some(RejectReason::Other)
    }
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobLabel {
    Analysis,
    Comparison,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOutcomeLabel {
    Ready,
    Failed,
}
#[derive(Debug, Default)]
pub struct Metrics;
impl Metrics {
    pub fn observe_request(&self, _: RouteLabel, _: u16, _: u64) {}
    pub fn reject(&self, _: RejectReason) {}
    pub fn deduplicated(&self, _: JobLabel) {}
    pub fn observe_job(&self, _: JobLabel, _: JobOutcomeLabel, _: u64) {}
}
