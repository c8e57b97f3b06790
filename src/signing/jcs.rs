//! RFC 8785, the JSON Canonicalization Scheme (JCS): the bytes a report's signature covers.
//!
//! Owns: `canonicalize` (and `canonicalize_members`, of an object's members), a
//! `serde_json::Value` written as JCS — object members sorted by their names' UTF-16 code
//! units, no whitespace, strings with the minimal escapes of ECMAScript's `JSON.stringify`, and
//! every number as the IEEE-754 double it denotes written as ECMAScript's
//! `Number.prototype.toString` does (`ryu-js`). Pure; called on compute threads (the sink), on
//! listener threads (scans) and by verifiers.
//!
//! Invariant: a verifier that parses the served JSON and canonicalizes it (Python's `rfc8785`,
//! JavaScript's `JSON.stringify` over sorted members, this function) gets these exact bytes —
//! the crate parses floats exactly (`serde_json`'s `float_roundtrip`), so a parse of the
//! served text gives the same double here as there.
//! Deliberately absent: integers outside ±(2^53 − 1) kept exact. JCS defines numbers as
//! doubles, so such an integer (a balance above about 9 million SOL in lamports) is written as
//! the double it rounds to, as a JavaScript verifier sees it; Python's `rfc8785` refuses such
//! integers, so the Python verifiers turn them into floats first (JCS's own rule) and agree.
//! Serde's `Value` has no NaN or infinity.
//! (`serde_jcs` was looked at: it canonicalizes through a serializer of its own, with a larger
//! surface to trust than this page; the RFC's own examples are the tests below.)

use serde_json::{Map, Value};

/// The JCS bytes of `value`.
pub fn canonicalize(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_value(&mut out, value);
    out
}

/// The JCS bytes of the object made of `members`.
pub fn canonicalize_members(members: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_object(&mut out, members);
    out
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => write_object(out, members),
    }
}

/// An object, its members sorted by their names' UTF-16 code units (a `Map` iterates in
/// UTF-8 byte order, which is that order for every name without a supplementary-plane
/// character beside a U+E000–U+FFFF one: the sort is skipped when the order already holds).
fn write_object(out: &mut Vec<u8>, members: &Map<String, Value>) {
    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
    if !sorted.is_sorted_by(|(a, _), (b, _)| utf16_cmp(a, b).is_le()) {
        sorted.sort_by(|(a, _), (b, _)| utf16_cmp(a, b));
    }
    out.push(b'{');
    for (i, (name, member)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(out, name);
        out.push(b':');
        write_value(out, member);
    }
    out.push(b'}');
}

/// JCS's order of member names: by their UTF-16 code units (bytes, for ASCII names).
///
/// From the first byte where they differ, without scanning either whole (issue #41 item 9:
/// every member of every object of a scan's report is compared at least once). UTF-8's byte order is code point order;
/// UTF-16's differs only between a supplementary-plane character (UTF-8 lead byte F0–F4, a
/// surrogate pair D800–DBFF… in UTF-16) and one of U+E000–U+FFFF (lead EE or EF), which UTF-16
/// puts after it. The bytes before the first difference are equal, so both strings have a
/// character boundary there or neither has: either both differing bytes are lead bytes, or
/// both continue characters of the same lead byte (same length, same UTF-16 class).
pub(super) fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let Some(at) = a.iter().zip(b).position(|(x, y)| x != y) else {
        return a.len().cmp(&b.len());
    };
    let (x, y) = (a[at], b[at]);
    let supplementary = |lead: u8| lead >= 0xF0;
    let high_bmp = |lead: u8| lead == 0xEE || lead == 0xEF;
    match (x, y) {
        (x, y) if supplementary(x) && high_bmp(y) => Ordering::Less,
        (x, y) if high_bmp(x) && supplementary(y) => Ordering::Greater,
        (x, y) => x.cmp(&y),
    }
}

/// A number as ECMAScript writes the double it denotes (RFC 8785 §3.2.2.3).
fn write_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    let double = match (n.as_i64(), n.as_u64()) {
        // Exact below 2^53; above, the rounding JCS prescribes.
        (Some(i), _) => i as f64,
        (None, Some(u)) => u as f64,
        (None, None) => n.as_f64().unwrap_or(0.0),
    };
    write_double(out, double);
}

/// A double as ECMAScript's `Number.prototype.toString` writes it; -0 as `0`. (A `Value`
/// never holds NaN or infinity; the serializer writes those as `null`, as serde_json does.)
pub(super) fn write_double(out: &mut Vec<u8>, double: f64) {
    if double == 0.0 || !double.is_finite() {
        out.push(b'0');
        return;
    }
    let mut buffer = ryu_js::Buffer::new();
    out.extend_from_slice(buffer.format_finite(double).as_bytes());
}

/// A string with JSON.stringify's escapes: `"`, `\\`, and control characters (`\b \t \n \f \r`
/// or `\u00xx`, lowercase hex); everything else as its UTF-8 bytes, copied in runs.
pub(super) fn write_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    write_string_contents(out, s);
    out.push(b'"');
}

/// `write_string` without the quotes (a string written in pieces, as `collect_str` does).
pub(super) fn write_string_contents(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut run_start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        if !needs_escape(byte) {
            continue;
        }
        out.extend_from_slice(&bytes[run_start..i]);
        write_escape(out, byte);
        run_start = i + 1;
    }
    out.extend_from_slice(&bytes[run_start..]);
}

/// Whether JSON.stringify escapes this byte: a control character, `"` or `\\`.
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

fn write_escape(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match byte {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        0x08 => out.extend_from_slice(b"\\b"),
        b'\t' => out.extend_from_slice(b"\\t"),
        b'\n' => out.extend_from_slice(b"\\n"),
        0x0c => out.extend_from_slice(b"\\f"),
        b'\r' => out.extend_from_slice(b"\\r"),
        _ => {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0x0f)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jcs(text: &str) -> String {
        let value: Value = serde_json::from_str(text).expect("json");
        String::from_utf8(canonicalize(&value)).expect("utf-8")
    }

    #[test]
    fn rfc8785_section_3_2_2_example() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        let expected = r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#;
        assert_eq!(jcs(input), expected);
    }

    #[test]
    fn rfc8785_section_3_2_3_sorting_by_utf16_code_units() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        // (serde_json's own map sorts by UTF-8 bytes: the order is read off the text.)
        let text = jcs(input);
        let names = ["\\r", "1", "\u{80}", "\u{f6}", "\u{20ac}", "\u{1f600}", "\u{fb33}"];
        let positions: Vec<usize> =
            names.iter().map(|n| text.find(&format!("\"{n}\":")).expect("member present")).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    }

    #[test]
    fn rfc8785_appendix_b_numbers() {
        let cases: [(u64, &str); 24] = [
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, expected) in cases {
            let double = f64::from_bits(bits);
            let value = serde_json::Number::from_f64(double).map_or(Value::Null, Value::Number);
            assert_eq!(String::from_utf8(canonicalize(&value)).expect("utf-8"), expected, "{bits:#x}");
            // And through a parse of its own text, as a verifier reads it.
            assert_eq!(jcs(expected), expected, "{bits:#x} reparsed");
        }
    }

    #[test]
    fn integers_are_written_as_doubles() {
        assert_eq!(jcs("[1, -1, 1.0, 100, 1e2, 9007199254740993]"), "[1,-1,1,100,100,9007199254740992]");
    }

    #[test]
    fn nested_objects_are_sorted_and_whitespace_goes() {
        let text = jcs(r#"{ "b": {"z": 1, "a": [ {"y":2,"x":1} ]}, "a": "\u0000\u001f\u007f/" }"#);
        assert_eq!(text, "{\"a\":\"\\u0000\\u001f\u{7f}/\",\"b\":{\"a\":[{\"x\":1,\"y\":2}],\"z\":1}}");
    }

    /// Characters on each side of the boundaries where UTF-8's order and UTF-16's part (and of
    /// each UTF-8 length).
    const BOUNDARY_CHARS: [char; 16] = [
        'a',
        '\u{7f}',
        '\u{80}',
        'é',
        '\u{7ff}',
        '\u{800}',
        '€',
        '\u{d000}',
        '\u{d7ff}',
        '\u{e000}',
        '\u{e001}',
        '\u{ffff}',
        '\u{10000}',
        '\u{10001}',
        '😀',
        '\u{10ffff}',
    ];

    /// Up to four characters, each any or one of `BOUNDARY_CHARS`.
    fn boundary_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let one = prop_oneof![any::<char>(), proptest::sample::select(BOUNDARY_CHARS.to_vec())];
        proptest::collection::vec(one, 0..5).prop_map(|chars| chars.into_iter().collect())
    }

    proptest::proptest! {
        #[test]
        fn utf16_order_from_the_first_difference(a in boundary_text(), b in boundary_text()) {
            proptest::prop_assert_eq!(utf16_cmp(&a, &b), a.encode_utf16().cmp(b.encode_utf16()));
            let shared = format!("k{a}");
            proptest::prop_assert_eq!(utf16_cmp(&shared, &format!("k{b}")), a.encode_utf16().cmp(b.encode_utf16()));
        }

        #[test]
        fn escapes_as_serde_json_does(text in "[ -~\u{0}-\u{1f}\u{7f}\"\\\\é€😀]{0,24}") {
            let mut written = Vec::new();
            write_string_contents(&mut written, &text);
            let expected = serde_json::to_string(&text).expect("json");
            // serde_json escapes the same set; it writes U+007F raw too, and `\u00xx` in lowercase.
            proptest::prop_assert_eq!(format!("\"{}\"", String::from_utf8(written).expect("utf-8")), expected);
        }
    }

    #[test]
    fn every_pair_of_boundary_characters_is_ordered_as_utf16_orders_it() {
        for a in BOUNDARY_CHARS {
            for b in BOUNDARY_CHARS {
                for (x, y) in [(a.to_string(), b.to_string()), (format!("k{a}z"), format!("k{b}a"))] {
                    assert_eq!(utf16_cmp(&x, &y), x.encode_utf16().cmp(y.encode_utf16()), "{x:?} against {y:?}");
                }
            }
        }
        // Two characters of one lead byte that differ in a continuation byte.
        assert!(utf16_cmp("\u{d7fe}", "\u{d7ff}").is_lt());
        assert!(utf16_cmp("\u{d7ff}", "\u{10000}").is_lt());
    }

    #[test]
    fn a_supplementary_character_sorts_before_the_private_use_area() {
        // U+10000 is D800 DC00 in UTF-16, below U+E000; in UTF-8 (F0…) it is above (EE…).
        assert!(utf16_cmp("\u{10000}", "\u{e000}").is_lt());
        assert!(utf16_cmp("x\u{ffff}", "x\u{10ffff}").is_gt());
        assert!(utf16_cmp("ab", "abc").is_lt());
    }
}
