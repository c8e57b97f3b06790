//! The public API over real loopback HTTP: the contract as an integrator uses it, scopes,
//! limits, jobs, the OpenAPI documents (the public API's and the admin API's), and the real
//! binary (first key, SIGTERM, kill -9).

mod admin_openapi;
mod batch;
pub mod feedback;
mod guards;
pub mod contract;
mod hostile;
mod idempotency;
mod jobs;
mod ledger_cache;
pub mod monitor_events;
mod monitors;
mod limits;
mod openapi;
mod policy;
mod programs;
mod scan;
mod sequences;
pub mod readme;
mod scopes;
mod signing;
pub mod serve_binary;
pub mod support;
pub mod webhooks;
