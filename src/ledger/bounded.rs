//! Lists read from a ledger source, bounded at parse: a list longer than the runtime allows
//! is refused while it is read, before it is held or joined against another.
//!
//! Owns: `vec_max` and `opt_vec_max`, the `deserialize_with` functions the wire types put on
//! their lists, with the bound as a const parameter (the limits are `config::TX_*`). Pure; any
//! thread.
//!
//! Invariant: no list read through these holds more than its bound: the element past it fails
//! the document (`Malformed`), so a node that sends 300,000 token balances in one transaction
//! costs the bytes read (bounded per answer and per job) and one refusal, never a quadratic
//! join. Preallocation follows the elements read, never a length the document claims.
//! Deliberately absent: truncating silently (a transaction cut short would be analyzed wrong).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, Error, SeqAccess, Visitor};
use serde::Deserialize;

/// Reads a list of at most `N` items.
pub fn vec_max<'de, D, T, const N: usize>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_seq(BoundedVisitor::<T, N>(PhantomData))
}

/// Reads an optional (or `null`) list of at most `N` items.
pub fn opt_vec_max<'de, D, T, const N: usize>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_option(OptionVisitor::<T, N>(PhantomData))
}

struct BoundedVisitor<T, const N: usize>(PhantomData<T>);

impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for BoundedVisitor<T, N> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of at most {N} items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        // Grows with what is read: a claimed length (size hint) is not trusted past 64.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(N).min(64));
        while let Some(item) = seq.next_element()? {
            if out.len() == N {
                return Err(A::Error::custom(format!(
                    "a list of more than {N} items, more than a transaction can hold"
                )));
            }
            out.push(item);
        }
        Ok(out)
    }
}

struct OptionVisitor<T, const N: usize>(PhantomData<T>);

impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for OptionVisitor<T, N> {
    type Value = Option<Vec<T>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "null or a list of at most {N} items")
    }

    fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        vec_max::<D, T, N>(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Lists {
        #[serde(deserialize_with = "vec_max::<_, _, 3>")]
        required: Vec<u8>,
        #[serde(default, deserialize_with = "opt_vec_max::<_, _, 2>")]
        optional: Option<Vec<String>>,
    }

    fn parse(text: &str) -> Result<Lists, String> {
        let mut bytes = text.as_bytes().to_vec();
        simd_json::serde::from_slice::<Lists>(&mut bytes).map_err(|e| e.to_string())
    }

    #[test]
    fn lists_within_their_bound_are_read() {
        let lists = parse(r#"{"required":[1,2,3],"optional":["a","b"]}"#).unwrap();
        assert_eq!((lists.required, lists.optional), (vec![1, 2, 3], Some(vec!["a".into(), "b".into()])));
        assert_eq!(parse(r#"{"required":[],"optional":null}"#).unwrap().optional, None);
        assert_eq!(parse(r#"{"required":[]}"#).unwrap().optional, None);
    }

    #[test]
    fn a_list_past_its_bound_fails_the_document() {
        let error = parse(r#"{"required":[1,2,3,4]}"#).unwrap_err();
        assert!(error.contains("more than 3 items"), "{error}");
        let error = parse(r#"{"required":[],"optional":["a","b","c"]}"#).unwrap_err();
        assert!(error.contains("more than 2 items"), "{error}");
    }
}
