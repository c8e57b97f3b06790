//! The stable smoke of the fuzz targets (issue #13), run by `make test` in CI: for each target
//! of `tests/fuzz/targets.rs`, every file of its corpus `tests/fuzz/corpus/<target>/` (seeds,
//! and the `regression-…` inputs of past finds, none skipped), then random mutations of those
//! files — bit flips, interesting bytes, JSON tokens inserted, ranges deleted or repeated,
//! splices of two entries — for `SMOKE_DURATION_PER_TARGET_MS`, from a fixed seed.
//!
//! It asserts only that no input panics: the targets assert their own invariants. An input that
//! panics is written to the temp directory and named in the failure, ready to be replayed.
//! Deliberately absent: coverage guidance. The campaigns that find what mutation alone cannot
//! are run with cargo-fuzz on nightly: `cargo +nightly fuzz run --fuzz-dir tests/fuzz <target>`.

#[path = "../fuzz/targets.rs"]
mod targets;

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Mutation time per target, after its corpus is replayed.
const SMOKE_DURATION_PER_TARGET_MS: u64 = 2_000;
/// Mutations stacked on one corpus entry, at most.
const MUTATIONS_PER_INPUT_MAX: u64 = 4;
/// Largest mutated input, as the largest seed the corpus allows.
const INPUT_BYTES_MAX: usize = 64 * 1024;
/// Longest range one mutation deletes or repeats.
const RANGE_BYTES_MAX: u64 = 64;
/// Seed of every target's mutation stream (each target mixes its name in).
const SMOKE_SEED: u64 = 0x5EED_F022_0013;
/// Bytes that tend to matter to the parsers: boundaries, JSON structure, digits, separators.
const INTERESTING_BYTES: [u8; 16] =
    [0x00, 0x01, 0x7F, 0x80, 0xFF, b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b'9', b'/'];
/// Tokens worth inserting whole: JSON values at the edges of their types.
const TOKENS: [&[u8]; 12] = [
    b"null",
    b"true",
    b"{}",
    b"[]",
    b"\"\"",
    b"-1",
    b"0.5",
    b"1e400",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"\"\\u0000\"",
    b"\"\\ud800\"",
];

type Target = fn(&[u8]);

#[test]
fn api_request() {
    smoke("api_request", targets::api_request);
}

#[test]
fn api_key() {
    smoke("api_key", targets::api_key);
}

#[test]
fn ledger_wire() {
    smoke("ledger_wire", targets::ledger_wire);
}

#[test]
fn snapshot() {
    smoke("snapshot", targets::snapshot);
}

#[test]
fn engine() {
    smoke("engine", targets::engine);
}

/// Replays the target's corpus, then mutates it until the time is up.
fn smoke(name: &str, target: Target) {
    let corpus = read_corpus(name);
    assert!(!corpus.is_empty(), "no corpus for {name}");
    for (path, input) in &corpus {
        run(name, target, input, &path.display().to_string());
    }
    let mut rng = SplitMix64(SMOKE_SEED ^ name.bytes().fold(0u64, |h, b| h.rotate_left(8) ^ u64::from(b)));
    let deadline = Instant::now() + Duration::from_millis(SMOKE_DURATION_PER_TARGET_MS);
    let mut runs = 0u64;
    while Instant::now() < deadline {
        let input = mutant(&corpus, &mut rng);
        run(name, target, &input, &format!("mutation {runs}"));
        runs += 1;
    }
    eprintln!("fuzz smoke {name}: {} corpus files, {runs} mutations", corpus.len());
}

/// Every file of `tests/fuzz/corpus/<name>/`, sorted by name (dot files are not inputs).
fn read_corpus(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/corpus").join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('.')))
        .collect();
    files.sort();
    files.into_iter().map(|path| (path.clone(), std::fs::read(&path).expect("a readable corpus file"))).collect()
}

/// Runs one input; a panic is reported with the input saved for replay, then re-raised.
fn run(name: &str, target: Target, input: &[u8], what: &str) {
    let Err(panic) = catch_unwind(AssertUnwindSafe(|| target(input))) else { return };
    let saved = std::env::temp_dir().join(format!("xray-fuzz-smoke-{name}-crash"));
    let note = match std::fs::write(&saved, input) {
        Ok(()) => format!("input saved to {}", saved.display()),
        Err(e) => format!("input not saved ({e}): {input:?}"),
    };
    eprintln!("fuzz smoke {name}: {what} panicked; {note}");
    eprintln!("replay: cargo +nightly fuzz run --fuzz-dir tests/fuzz {name} {}", saved.display());
    resume_unwind(panic);
}

/// A corpus entry with a few mutations stacked on it.
fn mutant(corpus: &[(PathBuf, Vec<u8>)], rng: &mut SplitMix64) -> Vec<u8> {
    let mut input = corpus[rng.below(corpus.len() as u64) as usize].1.clone();
    for _ in 0..=rng.below(MUTATIONS_PER_INPUT_MAX) {
        let other = &corpus[rng.below(corpus.len() as u64) as usize].1;
        mutate(&mut input, other, rng);
    }
    input.truncate(INPUT_BYTES_MAX);
    input
}

/// One mutation of `input`; `other` is the entry a splice takes its tail from.
fn mutate(input: &mut Vec<u8>, other: &[u8], rng: &mut SplitMix64) {
    let at = rng.below(input.len() as u64 + 1) as usize;
    match rng.below(7) {
        0 if at < input.len() => input[at] ^= 1 << rng.below(8),
        1 if at < input.len() => input[at] = INTERESTING_BYTES[rng.below(INTERESTING_BYTES.len() as u64) as usize],
        2 => {
            let token = TOKENS[rng.below(TOKENS.len() as u64) as usize];
            input.splice(at..at, token.iter().copied());
        }
        3 => {
            let end = (at + rng.below(RANGE_BYTES_MAX) as usize).min(input.len());
            input.drain(at..end);
        }
        4 => {
            let end = (at + rng.below(RANGE_BYTES_MAX) as usize).min(input.len());
            let repeated = input[at..end].to_vec();
            input.splice(at..at, repeated);
        }
        5 => {
            let from = rng.below(other.len() as u64 + 1) as usize;
            input.truncate(at);
            input.extend_from_slice(&other[from..]);
        }
        _ => input.insert(at, rng.below(256) as u8),
    }
}

/// A small fixed-seed generator (SplitMix64): the same sequence of mutations on every run and
/// machine (how far into it the time allows depends on the machine).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `0..n` (`0` when `n` is `0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}
