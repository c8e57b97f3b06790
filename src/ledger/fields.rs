//! Typed reads out of the untyped `parsed` objects of jsonParsed responses.
//!
//! Owns: `Fields`, a borrowed view of a JSON object with accessors that return `None` instead
//! of failing. Called wherever `wire::Value` is decoded (instructions, account data).
//! Invariant: never panics and never allocates except for returned strings; a missing or
//! mistyped field is `None`, and the caller decides whether that makes the whole item raw.

use simd_json::prelude::*;

use crate::ledger::wire::Value;
use crate::pubkey::Pubkey;

#[derive(Clone, Copy)]
pub struct Fields<'a>(pub &'a Value);

impl<'a> Fields<'a> {
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key)
    }

    pub fn obj(&self, key: &str) -> Option<Fields<'a>> {
        self.get(key).filter(|v| v.is_object()).map(Fields)
    }

    pub fn str(&self, key: &str) -> Option<&'a str> {
        self.get(key)?.as_str()
    }

    pub fn pubkey(&self, key: &str) -> Option<Pubkey> {
        Pubkey::parse(self.str(key)?).ok()
    }

    /// The first of several keys that holds an address (e.g. `owner` or `multisigOwner`).
    pub fn pubkey_any(&self, keys: &[&str]) -> Option<Pubkey> {
        keys.iter().find_map(|k| self.pubkey(k))
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        self.get(key)?.as_bool()
    }

    /// An unsigned amount sent as a JSON number or as a decimal string (token amounts).
    pub fn u64(&self, key: &str) -> Option<u64> {
        value_u64(self.get(key)?)
    }

    /// A token amount object's base units (`{"amount": "…", "decimals": 6, …}`).
    pub fn token_amount(&self, key: &str) -> Option<(u64, u8)> {
        let amount = self.obj(key)?;
        Some((amount.u64("amount")?, amount.u64("decimals").and_then(|d| u8::try_from(d).ok())?))
    }
}

pub fn value_u64(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}
