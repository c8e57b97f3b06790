//! JCS (RFC 8785) straight from a `Serialize` value: the bytes `jcs::canonicalize` gives for
//! `serde_json::to_value(value)`, written in one pass without a `Value` tree in between, with
//! the places of the top-level members in them — so one serialization is both a scan's answer
//! (its members in the order the report declares them) and the message its signature covers
//! (issue #41 item 9: the scan serialized its report twice, once through a `Value`).
//!
//! Owns: `Canonical` (an object's JCS bytes, its members' names and ranges, whether every
//! number in it is exact as a double), `to_canonical` and the serializer behind it. Pure.
//!
//! Invariant: when `Canonical::exact` holds, `bytes` equals
//! `jcs::canonicalize(&serde_json::to_value(value))` (property-tested below on arbitrary
//! `Value`s and on scan reports). An integer beyond ±(2^53 − 1) is written exactly — the
//! answer keeps it — and clears `exact`: its JCS form is the double it rounds to, so a signer
//! signs such an object through the `Value` path (`ReportSigner::sign_canonical`).
//! Invariant: what this cannot write as `to_value` would — a map key that is no string or
//! integer, two members of one name (a `flatten` clash), serde_json's `RawValue` — is an
//! error, never other bytes (the scan's report types have none of these: its endpoint answers
//! such an error 500, uncharged, and the tests hold a full report to the `Value` path's bytes).
//! Invariant: one object's members are written in the order given, commas inline, and
//! re-laid in JCS order at the object's end only when that order did not already hold; the
//! member stack is shared by every nesting level (objects end before their parent's next
//! member starts), so an object costs no allocation of its own.
//! One file past 600 lines: a serde `Serializer` is one unit — every method the traits require,
//! most of them one line — and its tests are the property that it matches the `Value` path.
//! Deliberately absent: pretty printing, arbitrary-precision numbers, non-finite floats other
//! than as `null` (serde_json's own choice for them).

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::ops::Range;

use serde::ser::{self, Serialize};

use super::jcs::{utf16_cmp, write_double, write_string, write_string_contents};

/// The largest integer every double holds exactly (2^53 − 1): past it JCS writes the rounding.
const EXACT_INTEGER_MAX: u64 = (1 << 53) - 1;
/// The first allocation of the output: a scan's answer is ~3–6 KB.
const OUT_CAPACITY_BYTES: usize = 8192;
/// serde_json's name for a `RawValue` (written as raw text, which this does not canonicalize).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Why a value has no canonical form here (the caller takes the `Value` path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no canonical form: {0}")]
pub struct Error(String);

impl ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// An object's JCS bytes and where its members are in them.
#[derive(Debug, Clone)]
pub struct Canonical {
    bytes: Vec<u8>,
    /// The top-level members, in JCS order (as in `bytes`).
    members: Vec<Member>,
    exact: bool,
}

#[derive(Debug, Clone)]
struct Member {
    name: Cow<'static, str>,
    /// `"name":value` in `bytes`.
    range: Range<usize>,
    /// Its place in the order the value gave its members.
    declared: usize,
}

impl Canonical {
    /// The JCS bytes of the whole object.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether `bytes` are exactly JCS's (no integer beyond ±(2^53 − 1) in them).
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// The top-level members' names, in JCS order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|m| m.name.as_ref())
    }

    /// The JCS bytes of this object with one more member, `name` holding the string `value`,
    /// in the place JCS gives it. `None` when a member of that name is there already.
    pub fn with_string_member(&self, name: &str, value: &str) -> Option<Vec<u8>> {
        let at = self.members.partition_point(|m| utf16_cmp(&m.name, name).is_lt());
        if self.members.get(at).is_some_and(|m| m.name == name) {
            return None;
        }
        let mut added = Vec::with_capacity(name.len() + value.len() + 8);
        write_string(&mut added, name);
        added.push(b':');
        write_string(&mut added, value);
        let mut out = Vec::with_capacity(self.bytes.len() + added.len() + 1);
        out.push(b'{');
        let sorted = self.members.iter().map(|m| &self.bytes[m.range.clone()]);
        let all = sorted.clone().take(at).chain(std::iter::once(&added[..])).chain(sorted.skip(at));
        for (i, member) in all.enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(member);
        }
        out.push(b'}');
        Some(out)
    }

    /// `{"<outer>":{…}}`: this object's members in the order the value declared them, then
    /// `"<last>": payload` (verbatim JSON) — an answer's body around a signed document.
    pub fn wrapped(&self, outer: &str, last: &str, payload: &[u8]) -> Vec<u8> {
        let mut declared: Vec<&Member> = self.members.iter().collect();
        declared.sort_unstable_by_key(|m| m.declared);
        let mut out = Vec::with_capacity(self.bytes.len() + outer.len() + last.len() + payload.len() + 16);
        out.push(b'{');
        write_string(&mut out, outer);
        out.extend_from_slice(b":{");
        for member in declared {
            out.extend_from_slice(&self.bytes[member.range.clone()]);
            out.push(b',');
        }
        write_string(&mut out, last);
        out.push(b':');
        out.extend_from_slice(payload);
        out.extend_from_slice(b"}}");
        out
    }
}

/// The canonical form of `value`; its members are listed when it is an object.
pub fn to_canonical<T: Serialize + ?Sized>(value: &T) -> Result<Canonical, Error> {
    let mut writer = Writer {
        out: Vec::with_capacity(OUT_CAPACITY_BYTES),
        exact: true,
        order: Vec::new(),
        scratch: Vec::new(),
        stack: Vec::new(),
        top: Vec::new(),
    };
    value.serialize(&mut writer)?;
    Ok(Canonical { bytes: writer.out, members: writer.top, exact: writer.exact })
}

/// One member being laid out: its name and `"name":value` in `out`.
struct Entry {
    name: Cow<'static, str>,
    range: Range<usize>,
}

struct Writer {
    out: Vec<u8>,
    exact: bool,
    /// An object's members' indices in JCS order, and its bytes while re-laid (reused).
    order: Vec<usize>,
    scratch: Vec<u8>,
    /// The members of every object still open, innermost last.
    stack: Vec<Entry>,
    /// The outermost object's members, once it ended.
    top: Vec<Member>,
}

impl Writer {
    fn integer(&mut self, negative: bool, magnitude: u128) {
        if magnitude > u128::from(EXACT_INTEGER_MAX) {
            self.exact = false;
        }
        if negative {
            self.out.push(b'-');
        }
        let mut buffer = itoa::Buffer::new();
        self.out.extend_from_slice(buffer.format(magnitude).as_bytes());
    }

    fn open_object(&mut self) -> Object<'_> {
        self.out.push(b'{');
        let (start, base) = (self.out.len(), self.stack.len());
        Object { writer: self, start, base, key: None }
    }

    /// Ends the object whose members are `stack[base..]`, written from `start`: re-laid in
    /// JCS order when needed (through `scratch`, reused: objects end one at a time); the
    /// outermost one's members kept in `top`, with where they are and their declared places.
    fn close_object(&mut self, start: usize, base: usize) -> Result<(), Error> {
        // The outermost object is the only one whose members start at byte 1 (its `{` is the
        // first byte; any other object is inside a member or an array).
        let outermost = base == 0 && start == 1;
        let Writer { out, stack, order, scratch, top, .. } = self;
        let entries = &stack[base..];
        order.clear();
        order.extend(0..entries.len());
        let in_order = entries.windows(2).all(|w| utf16_cmp(&w[0].name, &w[1].name).is_lt());
        let mut laid: Vec<Range<usize>> = Vec::new();
        if !in_order {
            order.sort_by(|&a, &b| utf16_cmp(&entries[a].name, &entries[b].name));
            if let Some(twice) = order.windows(2).find(|w| entries[w[0]].name == entries[w[1]].name) {
                return Err(Error(format!("two members named {:?}", entries[twice[0]].name)));
            }
            scratch.clear();
            scratch.extend_from_slice(&out[start..]);
            out.truncate(start);
            for (i, &from) in order.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let written = &entries[from].range;
                let at = out.len();
                out.extend_from_slice(&scratch[written.start - start..written.end - start]);
                if outermost {
                    laid.push(at..out.len());
                }
            }
        }
        out.push(b'}');
        if outermost {
            let sorted = order.iter().map(|&from| (from, &entries[from]));
            *top = match in_order {
                true => sorted
                    .map(|(from, e)| Member { name: e.name.clone(), range: e.range.clone(), declared: from })
                    .collect(),
                false => sorted
                    .zip(laid)
                    .map(|((from, e), range)| Member { name: e.name.clone(), range, declared: from })
                    .collect(),
            };
        }
        stack.truncate(base);
        Ok(())
    }
}

/// An object being written (a struct, a map, a variant's fields).
struct Object<'w> {
    writer: &'w mut Writer,
    start: usize,
    base: usize,
    /// A map's key, between `serialize_key` and `serialize_value`: its name and where its
    /// member starts.
    key: Option<(Cow<'static, str>, usize)>,
}

impl<'w> Object<'w> {
    /// Writes `"name":` (after a comma unless first); returns where the member starts.
    fn begin(&mut self, name: &str) -> usize {
        if self.writer.stack.len() > self.base {
            self.writer.out.push(b',');
        }
        let at = self.writer.out.len();
        write_string(&mut self.writer.out, name);
        self.writer.out.push(b':');
        at
    }

    fn member<T: Serialize + ?Sized>(&mut self, name: Cow<'static, str>, value: &T) -> Result<(), Error> {
        let at = self.begin(&name);
        value.serialize(&mut *self.writer)?;
        let end = self.writer.out.len();
        self.writer.stack.push(Entry { name, range: at..end });
        Ok(())
    }

    fn end(self) -> Result<(), Error> {
        self.finish().map(|_| ())
    }

    fn finish(self) -> Result<&'w mut Writer, Error> {
        self.writer.close_object(self.start, self.base)?;
        Ok(self.writer)
    }
}

/// An array being written; `tail` closes what a variant opened around it.
struct Array<'w> {
    writer: &'w mut Writer,
    first: bool,
    tail: &'static [u8],
}

impl Array<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        if !self.first {
            self.writer.out.push(b',');
        }
        self.first = false;
        value.serialize(&mut *self.writer)
    }

    fn end(self) -> Result<(), Error> {
        self.writer.out.push(b']');
        self.writer.out.extend_from_slice(self.tail);
        Ok(())
    }
}

/// `collect_str`'s pieces, escaped as they come.
struct Escaped<'a>(&'a mut Vec<u8>);

impl fmt::Write for Escaped<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_string_contents(self.0, s);
        Ok(())
    }
}

impl<'w> ser::Serializer for &'w mut Writer {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Array<'w>;
    type SerializeTuple = Array<'w>;
    type SerializeTupleStruct = Array<'w>;
    type SerializeTupleVariant = Array<'w>;
    type SerializeMap = Object<'w>;
    type SerializeStruct = Object<'w>;
    type SerializeStructVariant = Variant<'w>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.integer(v < 0, u128::from(v.unsigned_abs()));
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.integer(v < 0, v.unsigned_abs());
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.integer(false, u128::from(v));
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.integer(false, v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        match v.is_finite() {
            true => write_double(&mut self.out, v),
            false => self.out.extend_from_slice(b"null"),
        }
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_string(&mut self.out, v);
        Ok(())
    }
    fn collect_str<T: fmt::Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        self.out.push(b'"');
        write!(Escaped(&mut self.out), "{value}").map_err(|_| Error("a Display impl failed".into()))?;
        self.out.push(b'"');
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        let mut array = self.serialize_seq(Some(v.len()))?;
        for byte in v {
            ser::SerializeSeq::serialize_element(&mut array, byte)?;
        }
        ser::SerializeSeq::end(array)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let mut object = self.open_object();
        object.member(Cow::Borrowed(variant), value)?;
        object.end()
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Array<'w>, Error> {
        self.out.push(b'[');
        Ok(Array { writer: self, first: true, tail: b"" })
    }
    fn serialize_tuple(self, len: usize) -> Result<Array<'w>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Array<'w>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Array<'w>, Error> {
        // `{"variant":[…]}`: one member, so already in JCS order.
        self.out.push(b'{');
        write_string(&mut self.out, variant);
        self.out.extend_from_slice(b":[");
        Ok(Array { writer: self, first: true, tail: b"}" })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Object<'w>, Error> {
        Ok(self.open_object())
    }
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Object<'w>, Error> {
        if name == RAW_VALUE_TOKEN {
            return Err(Error("a RawValue".into()));
        }
        Ok(self.open_object())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Variant<'w>, Error> {
        // `{"variant":{…}}`: the outer object has one member; the inner is laid out as any.
        self.out.push(b'{');
        write_string(&mut self.out, variant);
        self.out.push(b':');
        Ok(Variant(self.open_object()))
    }
}

/// The four array-shaped serde traits: each element after a comma, then `]` (and the tail).
macro_rules! array_traits {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Array<'_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.element(value)
            }
            fn end(self) -> Result<(), Error> {
                Array::end(self)
            }
        }
    )*};
}

array_traits!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) -> Result<(), Error> {
        self.member(Cow::Borrowed(name), value)
    }
    fn end(self) -> Result<(), Error> {
        Object::end(self)
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let name = key.serialize(KeyName)?;
        let at = self.begin(&name);
        self.key = Some((Cow::Owned(name), at));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let (name, at) = self.key.take().ok_or_else(|| Error("a map value without its key".into()))?;
        value.serialize(&mut *self.writer)?;
        let end = self.writer.out.len();
        self.writer.stack.push(Entry { name, range: at..end });
        Ok(())
    }
    fn end(self) -> Result<(), Error> {
        Object::end(self)
    }
}

/// A struct variant's fields, inside the one-member object that names the variant.
struct Variant<'w>(Object<'w>);

impl ser::SerializeStructVariant for Variant<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) -> Result<(), Error> {
        self.0.member(Cow::Borrowed(name), value)
    }
    fn end(self) -> Result<(), Error> {
        self.0.finish()?.out.push(b'}');
        Ok(())
    }
}

/// A map key as the name `serde_json` gives it: a string as is, an integer in decimal.
struct KeyName;

macro_rules! key_as_decimal {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Result<String, Error> {
            Ok(v.to_string())
        }
    )*};
}

macro_rules! key_refused {
    ($($method:ident($($arg:ty),*)),*) => {$(
        fn $method(self, $(_: $arg),*) -> Result<String, Error> {
            Err(Error("a map key that is no string".into()))
        }
    )*};
}

impl ser::Serializer for KeyName {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = ser::Impossible<String, Error>;
    type SerializeTuple = ser::Impossible<String, Error>;
    type SerializeTupleStruct = ser::Impossible<String, Error>;
    type SerializeTupleVariant = ser::Impossible<String, Error>;
    type SerializeMap = ser::Impossible<String, Error>;
    type SerializeStruct = ser::Impossible<String, Error>;
    type SerializeStructVariant = ser::Impossible<String, Error>;

    key_as_decimal!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64,
        serialize_u128: u128);
    key_refused!(
        serialize_bool(bool),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str)
    );

    fn serialize_char(self, v: char) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<String, Error> {
        Ok(v.to_owned())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<String, Error> {
        Err(Error("a map key that is no string".into()))
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<String, Error> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<String, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String, Error> {
        Err(Error("a map key that is no string".into()))
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(Error("a map key that is no string".into()))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(Error("a map key that is no string".into()))
    }
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeTupleStruct, Error> {
        Err(Error("a map key that is no string".into()))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(Error("a map key that is no string".into()))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(Error("a map key that is no string".into()))
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct, Error> {
        Err(Error("a map key that is no string".into()))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(Error("a map key that is no string".into()))
    }
    fn collect_str<T: fmt::Display + ?Sized>(self, value: &T) -> Result<String, Error> {
        Ok(value.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::jcs::canonicalize;
    use proptest::prelude::*;
    use serde::Serialize;
    use serde_json::{json, Value};

    fn same_as_value_path<T: Serialize>(value: &T) {
        let canonical = to_canonical(value).expect("canonical");
        let via_value = canonicalize(&serde_json::to_value(value).expect("value"));
        assert!(canonical.exact());
        assert_eq!(String::from_utf8_lossy(canonical.bytes()), String::from_utf8_lossy(&via_value));
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Report {
        verdict: &'static str,
        signer: String,
        facts: std::collections::BTreeMap<String, String>,
        nested: Vec<Inner>,
        kind: Kind,
        none: Option<u8>,
        zeta_last: i64,
        alpha: f64,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Inner {
        z: u8,
        a: (u8, &'static str),
        m: Kind,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Unit,
        New(u32),
        Tuple(u8, u8),
        Fields { zz: u8, aa: &'static str },
    }

    fn report() -> Report {
        Report {
            verdict: "malicious",
            signer: "Dpe\"Z\\h\u{1}\u{7f}é€😀".into(),
            facts: [("\u{20ac}", "1"), ("\r", "2"), ("\u{fb33}", "3"), ("\u{1f600}", "4"), ("b", "5")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            nested: vec![
                Inner { z: 1, a: (2, "x"), m: Kind::Unit },
                Inner { z: 3, a: (4, "y"), m: Kind::New(7) },
                Inner { z: 5, a: (6, "z"), m: Kind::Tuple(1, 2) },
                Inner { z: 7, a: (8, ""), m: Kind::Fields { zz: 1, aa: "q" } },
            ],
            kind: Kind::Fields { zz: 9, aa: "w" },
            none: None,
            zeta_last: -9_007_199_254_740_991,
            alpha: 333_333_333.333_333_3,
        }
    }

    #[test]
    fn structs_maps_variants_and_escapes_match_the_value_path() {
        same_as_value_path(&report());
        same_as_value_path(&json!({"a": [], "b": {}, "c": [{}], "d": -0.0, "e": 1e21, "f": 5e-324}));
    }

    #[test]
    fn top_level_members_keep_their_declared_order_for_the_body() {
        let canonical = to_canonical(&report()).expect("canonical");
        let names: Vec<&str> = canonical.names().collect();
        assert_eq!(names, ["alpha", "facts", "kind", "nested", "none", "signer", "verdict", "zetaLast"]);
        let body = canonical.wrapped("data", "signature", br#"{"v":1}"#);
        let text = String::from_utf8(body).expect("utf-8");
        assert!(text.starts_with(r#"{"data":{"verdict":"malicious","signer":"#), "{text}");
        assert!(text.ends_with(r#""alpha":333333333.3333333,"signature":{"v":1}}}"#), "{text}");
        let parsed: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(parsed["data"]["nested"][3]["m"]["fields"]["aa"], "q");
    }

    #[test]
    fn a_string_member_goes_where_jcs_puts_it() {
        let canonical = to_canonical(&json!({"a": 1, "verdict": "x", "transaction": {}})).expect("canonical");
        let with = canonical.with_string_member("type", "xray.scan.v2").expect("added");
        let expected = canonicalize(&json!({"a": 1, "verdict": "x", "transaction": {}, "type": "xray.scan.v2"}));
        assert_eq!(with, expected);
        assert!(canonical.with_string_member("a", "again").is_none());
        let last = to_canonical(&json!({"a": 1})).expect("canonical").with_string_member("z", "1").expect("added");
        assert_eq!(last, br#"{"a":1,"z":"1"}"#);
        let only = to_canonical(&json!({})).expect("canonical").with_string_member("z", "1").expect("added");
        assert_eq!(only, br#"{"z":"1"}"#);
    }

    #[test]
    fn integers_past_2_53_are_written_exactly_and_flagged() {
        let canonical = to_canonical(&json!({"big": u64::MAX, "small": 9_007_199_254_740_991_u64})).expect("c");
        assert!(!canonical.exact());
        assert_eq!(canonical.bytes(), br#"{"big":18446744073709551615,"small":9007199254740991}"#);
        assert!(to_canonical(&json!({"n": -9_007_199_254_740_991_i64})).expect("c").exact());
        assert!(!to_canonical(&json!({"n": -9_007_199_254_740_992_i64})).expect("c").exact());
    }

    #[test]
    fn what_has_no_canonical_form_is_an_error() {
        let raw = serde_json::value::RawValue::from_string("{\"b\":1, \"a\":2}".into()).expect("raw");
        assert!(to_canonical(&raw).is_err());
        let keyed: std::collections::BTreeMap<bool, u8> = [(true, 1)].into_iter().collect();
        assert!(to_canonical(&keyed).is_err());
        #[derive(Serialize)]
        struct Clash {
            a: u8,
            #[serde(flatten)]
            more: std::collections::BTreeMap<String, u8>,
        }
        let clash = Clash { a: 1, more: [("a".to_owned(), 2)].into_iter().collect() };
        assert!(to_canonical(&clash).is_err());
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(|n| json!(n)),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
            "\\PC{0,12}".prop_map(Value::String),
            "[\\x00-\\x7f]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,6}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_canonicalizes_as_the_value_path_does(value in any_value()) {
            let canonical = to_canonical(&value).expect("canonical");
            prop_assert!(canonical.exact());
            prop_assert_eq!(canonical.bytes(), &canonicalize(&value)[..]);
        }
    }
}
