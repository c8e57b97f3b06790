//! Webhooks (issue #15): a finished job's document POSTed, signed, to the `callbackUrl` its
//! request named. Read this directory after `jobs/` (a job's completion puts its callback in the
//! store's outbox) and beside `api/` (which checks the URL when a request names it and shows
//! the delivery's state in polls).
//!
//! Owns: `target` (which URLs and addresses a webhook may reach: SSRF protection), `failure`
//! (the closed set of reasons a failed attempt shows),
//! `signature` (secrets, `Xray-Signature`), `delivery` (the `xray-webhooks` thread that drains
//! the outbox). The durable parts — each job's callback state, the outbox index, the accounts'
//! secrets — are the store's.
//!
//! Invariant: nothing here runs on a listener or compute thread, and a receiver that is slow,
//! down or hostile costs at most one bounded attempt at a time per delivery slot.
//! Deliberately absent: any knowledge of the API's wire format (the document is rendered by a
//! function the API hands to `Deliveries::start`).

pub mod delivery;
pub mod failure;
pub mod signature;
pub mod target;

pub use delivery::{Deliveries, Render, WebhookSettings};
pub use target::{TargetPolicy, TargetRefusal};
