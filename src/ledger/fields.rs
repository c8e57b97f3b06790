//! Typed reads out of the untyped `parsed` objects of jsonParsed responses.
//!
//! Owns: `Fields`, a borrowed view of a JSON object with accessors that return `None` instead
//! of failing, and `KnownKeys`, the addresses a transaction already decoded. Called wherever
//! `wire::Value` is decoded (instructions, account data).
//! Invariant: never panics and never allocates except for returned strings; a missing or
//! mistyped field is `None`, and the caller decides whether that makes the whole item raw.
//! Invariant: an address found among the known keys is the one `Pubkey::parse` would give
//! (they are its results, by their exact text); anything else is parsed.

use simd_json::prelude::*;

use crate::ledger::wire::Value;
use crate::pubkey::Pubkey;

/// Addresses already decoded, by their base58 text: a transaction names the same few keys
/// again and again (instructions, their `info`, token balances), and comparing a text with a
/// handful of others is several times cheaper than decoding base58 again (a long division).
/// Kept in the order given, texts that are not addresses included (as `None`), so that a
/// transaction's account keys keep their indices.
#[derive(Debug, Default)]
pub struct KnownKeys<'a>(Vec<(&'a str, Option<Pubkey>)>);

/// None known: every address is parsed.
static NO_KEYS: KnownKeys<'static> = KnownKeys(Vec::new());

impl<'a> KnownKeys<'a> {
    /// Parses each text once.
    pub fn parse_all(texts: impl IntoIterator<Item = &'a str>) -> KnownKeys<'a> {
        KnownKeys(texts.into_iter().map(|t| (t, Pubkey::parse(t).ok())).collect())
    }

    /// The address `text` names, or `None` when it is not one.
    pub fn parse(&self, text: &str) -> Option<Pubkey> {
        match self.0.iter().find(|(known, _)| *known == text) {
            Some(&(_, key)) => key,
            None => Pubkey::parse(text).ok(),
        }
    }

    /// Every text's address in the order given; `None` when any text is not an address (a
    /// transaction naming one is malformed and skipped, never read with a stand-in key).
    pub fn all_keys(&self) -> Option<Vec<Pubkey>> {
        self.0.iter().map(|(_, key)| *key).collect()
    }
}

#[derive(Clone, Copy)]
pub struct Fields<'a> {
    value: &'a Value,
    known: &'a KnownKeys<'a>,
}

impl<'a> Fields<'a> {
    /// A view of `value` whose addresses are all parsed.
    pub fn new(value: &'a Value) -> Fields<'a> {
        Fields { value, known: &NO_KEYS }
    }

    /// A view of `value` whose addresses are looked up in `known` first.
    pub fn with_known(value: &'a Value, known: &'a KnownKeys<'a>) -> Fields<'a> {
        Fields { value, known }
    }

    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.value.get(key)
    }

    pub fn obj(&self, key: &str) -> Option<Fields<'a>> {
        self.get(key).filter(|v| v.is_object()).map(|value| Fields { value, known: self.known })
    }

    pub fn str(&self, key: &str) -> Option<&'a str> {
        self.get(key)?.as_str()
    }

    pub fn pubkey(&self, key: &str) -> Option<Pubkey> {
        self.known.parse(self.str(key)?)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_keys_answer_as_parsing_does_and_keep_indices() {
        let a = "11111111111111111111111111111111";
        let b = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
        let other = "Stake11111111111111111111111111111111111111";
        let known = KnownKeys::parse_all([a, "not base58 0OIl", b]);
        for text in [a, b, other, "not base58 0OIl", "", "1"] {
            assert_eq!(known.parse(text), Pubkey::parse(text).ok(), "{text}");
        }
        assert_eq!(known.all_keys(), None, "one text is not an address");
        let good = KnownKeys::parse_all([a, b]);
        assert_eq!(good.all_keys(), Some(vec![Pubkey::parse(a).unwrap(), Pubkey::parse(b).unwrap()]));
        assert_eq!(Fields::new(&Value::from("x")).pubkey("k"), None);
    }
}
