//! Who is calling: API keys, their scopes, their stored records and the in-memory key table
//! (contract §2, §3 steps 2–3, §7 `UNAUTHENTICATED` / `INSUFFICIENT_SCOPE`).
//!
//! Owns: `key` (format, generation, parsing, digest, ids), `scope` (the four scopes and the
//! endpoints they grant), `record` (what the store persists about a key), `table` (digest → key
//! entry, lock-free for readers; `authenticate`; revoke and rotate). Called from every listener
//! thread on the request path, and from the admin path.
//!
//! Invariant: a key's secret text is never stored, logged or printed by `Debug`; only its
//! SHA-256 digest is kept.
//! Invariant: the request path (`KeyTable::authenticate`) takes no lock and does no I/O.
//! Deliberately absent: HTTP (the edge reads the header and writes the 401/403) and storage (the
//! store persists `KeyRecord`s); metering is in `crate::limits`.

pub mod key;
pub mod record;
pub mod scope;
pub mod table;

pub use key::{AccountId, ApiKey, KeyDigest, KeyId, KeyRefusal};
pub use record::{KeyRecord, KeySpec, KeyState, KeyStatus, RecordError};
pub use scope::{Scope, ScopeError, Scopes};
pub use table::{AuthFailure, KeyEntry, KeyTable, Rotation, TableError};
