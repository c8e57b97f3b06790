//! Hostile answers of the local JSON-RPC server: what a broken or malicious node could send
//! instead of an honest answer, to test that a job ends FAILED within its budget and the
//! process stays up.
//!
//! Owns: `Hostile` (the `--hostile` flag's value) and the rewriting of an honest answer into
//! the hostile one. Called on the server's one thread, after the source answered.
//!
//! Invariant: every hostile answer is bounded by a named limit (`HOSTILE_*_MAX`), so the test
//! tool cannot be asked to build an unbounded answer. Deliberately absent: randomness — the
//! same request gets the same hostile answer.

use serde_json::Value;

/// Largest answer `PaddedTo` builds.
pub const HOSTILE_PADDED_BYTES_MAX: usize = 128 * 1024 * 1024;
/// Most token balances `TokenBalances` puts in one transaction.
pub const HOSTILE_TOKEN_BALANCES_MAX: usize = 1_000_000;
/// Deepest nesting `Nested` sends.
pub const HOSTILE_NESTING_MAX: usize = 10_000_000;

/// How every answer is made hostile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hostile {
    /// The honest answer followed by whitespace up to `bytes` (still valid JSON).
    PaddedTo { bytes: usize },
    /// The head of an answer, then a body that never ends.
    Endless,
    /// The first transaction in the answer carries `count` pre-token balances.
    TokenBalances { count: usize },
    /// Instead of the answer, arrays nested `depth` deep.
    Nested { depth: usize },
}

impl std::str::FromStr for Hostile {
    type Err = String;

    /// `padded:<bytes>`, `endless`, `token-balances:<count>` or `nested:<depth>`.
    fn from_str(text: &str) -> Result<Hostile, String> {
        let (kind, number) = text.split_once(':').unwrap_or((text, ""));
        let number = || number.parse::<usize>().map_err(|_| format!("{text:?}: expected {kind}:<number>"));
        let hostile = match kind {
            "padded" => Hostile::PaddedTo { bytes: number()? },
            "endless" => Hostile::Endless,
            "token-balances" => Hostile::TokenBalances { count: number()? },
            "nested" => Hostile::Nested { depth: number()? },
            _ => {
                return Err(format!("{text:?}: expected padded:<bytes>, endless, token-balances:<n> or nested:<depth>"))
            }
        };
        hostile.validate().map(|()| hostile)
    }
}

/// The flag's value with what it does, for `xray ledger serve`'s announcement.
impl std::fmt::Display for Hostile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Hostile::PaddedTo { bytes } => write!(f, "padded:{bytes} (each answer padded to {bytes} bytes)"),
            Hostile::Endless => f.write_str("endless (a body that never ends)"),
            Hostile::TokenBalances { count } => {
                write!(f, "token-balances:{count} ({count} token balances in a transaction)")
            }
            Hostile::Nested { depth } => write!(f, "nested:{depth} (arrays nested {depth} deep)"),
        }
    }
}

impl Hostile {
    pub fn validate(&self) -> Result<(), String> {
        let (value, max, name) = match *self {
            Hostile::PaddedTo { bytes } => (bytes, HOSTILE_PADDED_BYTES_MAX, "padded bytes"),
            Hostile::TokenBalances { count } => (count, HOSTILE_TOKEN_BALANCES_MAX, "token balances"),
            Hostile::Nested { depth } => (depth, HOSTILE_NESTING_MAX, "nesting depth"),
            Hostile::Endless => return Ok(()),
        };
        if value > max {
            return Err(format!("hostile {name} must be at most {max}, got {value}"));
        }
        Ok(())
    }

    /// The hostile body for an honest `answer` (`None` for `Endless`: the caller streams a
    /// body that never ends).
    pub fn rewrite(&self, answer: Vec<u8>) -> Option<Vec<u8>> {
        match *self {
            Hostile::PaddedTo { bytes } => {
                let mut padded = answer;
                let len = padded.len().max(bytes);
                padded.resize(len, b' ');
                Some(padded)
            }
            Hostile::Endless => None,
            Hostile::TokenBalances { count } => Some(with_token_balances(answer, count)),
            Hostile::Nested { depth } => {
                let mut nested = vec![b'['; depth];
                nested.resize(2 * depth, b']');
                Some(nested)
            }
        }
    }
}

/// The answer with `count` token balances in the meta of its first transaction result (one is
/// enough to test the reader; all fifty of a batch would make the tool build gigabytes).
fn with_token_balances(answer: Vec<u8>, count: usize) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<Value>(&answer) else { return answer };
    let balance = serde_json::json!({
        "accountIndex": 0,
        "mint": "So11111111111111111111111111111111111111112",
        "uiTokenAmount": {"amount": "1", "decimals": 0, "uiAmount": null, "uiAmountString": "1"}
    });
    let balances = Value::Array(vec![balance; count]);
    let responses: Vec<&mut Value> = match &mut value {
        Value::Array(items) => items.iter_mut().collect(),
        single => vec![single],
    };
    let first_meta = responses.into_iter().find_map(|r| r.pointer_mut("/result/meta").and_then(Value::as_object_mut));
    if let Some(meta) = first_meta {
        meta.insert("preTokenBalances".into(), balances);
    }
    serde_json::to_vec(&value).unwrap_or(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_bounds_its_flag() {
        assert_eq!("padded:10".parse(), Ok(Hostile::PaddedTo { bytes: 10 }));
        assert_eq!("endless".parse(), Ok(Hostile::Endless));
        assert_eq!("token-balances:3".parse(), Ok(Hostile::TokenBalances { count: 3 }));
        assert_eq!("nested:4".parse(), Ok(Hostile::Nested { depth: 4 }));
        assert!("nested:99999999999".parse::<Hostile>().is_err());
        assert!("loud".parse::<Hostile>().is_err());
    }

    #[test]
    fn rewrites_answers() {
        let padded = Hostile::PaddedTo { bytes: 20 }.rewrite(b"{}".to_vec()).unwrap();
        assert_eq!(padded.len(), 20);
        assert_eq!(Hostile::Nested { depth: 2 }.rewrite(Vec::new()).unwrap(), b"[[]]");
        let answer =
            br#"[{"id":1,"result":{"meta":{"fee":5}}},{"id":2,"result":null},{"id":3,"result":{"meta":{}}}]"#.to_vec();
        let bloated = Hostile::TokenBalances { count: 3 }.rewrite(answer).unwrap();
        let value: Value = serde_json::from_slice(&bloated).unwrap();
        assert_eq!(value[0]["result"]["meta"]["preTokenBalances"].as_array().map(Vec::len), Some(3));
        assert_eq!(value[0]["result"]["meta"]["fee"], 5);
        assert!(value[1]["result"].is_null());
        assert!(value[2]["result"]["meta"].get("preTokenBalances").is_none(), "the first transaction only");
    }
}
