//! The standard `process_*` series (the names Prometheus client libraries use), read from
//! `/proc/self` at scrape time with the `procfs` crate.
//!
//! Owns: `write_process`. Runs on the admin listener thread, once per scrape.
//! Invariant: a value `/proc` does not give (another OS, a hardened `/proc`) leaves its series
//! out rather than reporting zero.
//! Deliberately absent: per-thread figures and anything sampled between scrapes.

use std::fmt::{self, Write};

use procfs::process::{LimitValue, Process};

use super::family;

/// Appends the process series to `out`.
pub(super) fn write_process(out: &mut String) -> fmt::Result {
    let Ok(me) = Process::myself() else { return Ok(()) };
    if let Ok(stat) = me.stat() {
        let ticks_per_s = procfs::ticks_per_second().max(1);
        let cpu_ticks = stat.utime.saturating_add(stat.stime);
        let cpu = Seconds { whole: cpu_ticks / ticks_per_s, part: cpu_ticks % ticks_per_s, per: ticks_per_s };
        gauge(out, "process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.", cpu)?;
        let rss_bytes = stat.rss.saturating_mul(procfs::page_size());
        gauge(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", rss_bytes)?;
        gauge(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", stat.vsize)?;
        gauge(out, "process_threads", "gauge", "Threads of the process.", stat.num_threads)?;
        if let Ok(boot_s) = procfs::boot_time_secs() {
            let start_s = boot_s.saturating_add(stat.starttime / ticks_per_s);
            gauge(out, "process_start_time_seconds", "gauge", "Start time since the Unix epoch, in seconds.", start_s)?;
        }
    }
    if let Ok(fds) = me.fd_count() {
        gauge(out, "process_open_fds", "gauge", "Open file descriptors.", fds)?;
    }
    if let Ok(LimitValue::Value(max)) = me.limits().map(|l| l.max_open_files.soft_limit) {
        gauge(out, "process_max_fds", "gauge", "Limit of open file descriptors (soft).", max)?;
    }
    Ok(())
}

fn gauge(out: &mut String, name: &str, kind: &str, help: &str, value: impl fmt::Display) -> fmt::Result {
    family(out, name, kind, help)?;
    writeln!(out, "{name} {value}")
}

/// `whole + part / per` seconds, written exactly to the millisecond.
struct Seconds {
    whole: u64,
    part: u64,
    per: u64,
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.part.saturating_mul(1_000) / self.per;
        write!(f, "{}.{ms:03}", self.whole)
    }
}
