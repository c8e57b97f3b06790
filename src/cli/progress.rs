//! Progress of a one-shot `xray analyze` / `xray compare` over `rpc:`, on stderr: what the
//! ledger has answered so far (calls, transactions read, retries, backoffs being waited out),
//! so a slow or faulty node is seen working rather than silent.
//!
//! Owns: `Reporter` (a thread of its own that redraws one status line while the job runs and
//! erases it when the job ends), `Throttle` (at most one update per `UPDATE_INTERVAL_MS`) and
//! `line` (the words). The job runs on the main thread; the reporter only reads
//! `metrics::LEDGER`, whose process-wide sums are this command's own in a one-shot process.
//!
//! Invariant: nothing is written unless stderr is a terminal (a file, a pipe or a journal
//! gets no control characters and no extra lines), and at most `UPDATES_PER_S_MAX` lines a
//! second. The line is drawn from column 0 and the cursor sent back there, so a log line
//! printed meanwhile overwrites it instead of being glued to its end.
//! Deliberately absent: a percentage (how many transactions there are is unknown until the
//! signatures are read) and progress for the demo and snapshot ledgers, which answer at once.

use std::io::{IsTerminal, Write};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::metrics::{LedgerTotals, LEDGER};

/// Most status-line updates a second: enough to look alive, few enough to cost nothing.
pub const UPDATES_PER_S_MAX: u64 = 4;
/// The least time between two updates.
pub const UPDATE_INTERVAL_MS: u64 = 1_000 / UPDATES_PER_S_MAX;
/// Erase from the cursor to the end of the line (ANSI EL).
const ERASE_TO_END: &str = "\x1b[K";

/// Lets an update through at most once per `interval`; the first one only after `interval`
/// too, so a run that ends at once draws nothing.
#[derive(Debug)]
pub struct Throttle {
    interval: Duration,
    last: Instant,
}

impl Throttle {
    pub fn new(interval: Duration, start: Instant) -> Throttle {
        Throttle { interval, last: start }
    }

    /// Whether an update may be drawn at `now`; if so, the next waits a whole interval.
    pub fn ready(&mut self, now: Instant) -> bool {
        if now.duration_since(self.last) < self.interval {
            return false;
        }
        self.last = now;
        true
    }
}

/// The status line: elapsed time and the ledger's totals so far, in words.
pub fn line(elapsed: Duration, totals: &LedgerTotals) -> String {
    let mut text = format!(
        "xray: {} s: {} ledger calls answered, {} transactions read",
        elapsed.as_secs(),
        totals.calls,
        totals.transactions
    );
    if totals.retries > 0 {
        text.push_str(&format!(", {} retries", totals.retries));
    }
    if totals.waiting > 0 {
        text.push_str(&format!(" ({} waiting out a backoff)", totals.waiting));
    }
    text
}

/// The reporter thread of one job. Dropping it (or `finish`) stops the thread and erases the
/// line, before the command prints its result.
pub struct Reporter {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Reporter {
    /// Starts reporting when `wanted` (the ledger is `rpc:`) and stderr is a terminal;
    /// otherwise a reporter that does nothing.
    pub fn start(wanted: bool) -> Reporter {
        if !wanted || !std::io::stderr().is_terminal() {
            return Reporter { stop: None, thread: None };
        }
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new().name("xray-progress".into()).spawn(move || report(&stopped)).ok();
        Reporter { stop: Some(stop), thread }
    }

    /// Stops the thread and waits for it to erase its line.
    pub fn finish(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// The thread's loop: wake every interval until the sender goes, draw when the throttle lets
/// it and the totals moved, erase the line at the end if one was drawn.
fn report(stopped: &mpsc::Receiver<()>) {
    let start = Instant::now();
    let interval = Duration::from_millis(UPDATE_INTERVAL_MS);
    let mut throttle = Throttle::new(interval, start);
    let mut drawn: Option<(u64, LedgerTotals)> = None;
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
        let now = Instant::now();
        let (totals, elapsed) = (LEDGER.totals(), now.duration_since(start));
        if drawn == Some((elapsed.as_secs(), totals)) || !throttle.ready(now) {
            continue;
        }
        draw(&format!("\r{}{ERASE_TO_END}\r", line(elapsed, &totals)));
        drawn = Some((elapsed.as_secs(), totals));
    }
    if drawn.is_some() {
        draw(&format!("\r{ERASE_TO_END}"));
    }
}

/// Writes to stderr; a progress line that cannot be written is not worth an error.
fn draw(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_lets_through_at_most_one_update_per_interval() {
        let start = Instant::now();
        let interval = Duration::from_millis(UPDATE_INTERVAL_MS);
        let mut throttle = Throttle::new(interval, start);
        assert!(!throttle.ready(start), "nothing at once: a quick run draws no line");
        assert!(!throttle.ready(start + interval / 2));
        assert!(throttle.ready(start + interval));
        assert!(!throttle.ready(start + interval + interval / 2));
        assert!(throttle.ready(start + interval * 2));
        // Checked every millisecond for ten seconds: at most UPDATES_PER_S_MAX a second.
        let mut throttle = Throttle::new(interval, start);
        let drawn = (0..10_000).filter(|ms| throttle.ready(start + Duration::from_millis(*ms))).count() as u64;
        assert_eq!(drawn, 10 * UPDATES_PER_S_MAX - 1, "every 250 ms from 250 ms on, up to 9.999 s");
    }

    #[test]
    fn the_line_says_calls_transactions_and_retries_in_words() {
        let quiet = LedgerTotals { calls: 12, transactions: 450, ..LedgerTotals::default() };
        assert_eq!(
            line(Duration::from_millis(3_400), &quiet),
            "xray: 3 s: 12 ledger calls answered, 450 transactions read"
        );
        let faulty = LedgerTotals { calls: 80, retries: 31, transactions: 2_950, waiting: 2 };
        assert_eq!(
            line(Duration::from_secs(167), &faulty),
            "xray: 167 s: 80 ledger calls answered, 2950 transactions read, 31 retries (2 waiting out a backoff)"
        );
    }
}
