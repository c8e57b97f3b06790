//! The demo ledger's clock: the as-of slot, how slots map to block times and epochs, and
//! how "minutes ago" maps to slots.
//!
//! Owns: the time constants of the synthetic chain. Called from the demo ledger's thread;
//! constants and pure functions only.
//!
//! Invariant: every demo transaction lies at or before `AS_OF_SLOT`, and block times grow
//! with slots at 0.4 s per slot, ending at `AS_OF_BLOCK_TIME_S`. Deliberately absent: the
//! wall clock (the demo is the same whenever it runs).

/// The slot every response is read at (`context.slot`).
pub const AS_OF_SLOT: u64 = 300_000_000;
/// Block time of `AS_OF_SLOT`, in Unix seconds.
pub const AS_OF_BLOCK_TIME_S: i64 = 1_750_000_000;
/// 400 ms slots.
pub const SLOTS_PER_MINUTE: u64 = 150;
pub const MINUTES_PER_DAY: u64 = 1_440;
pub const SLOTS_PER_DAY: u64 = SLOTS_PER_MINUTE * MINUTES_PER_DAY;
pub const SLOTS_PER_EPOCH: u64 = 432_000;

/// Block time of a slot (slots after `AS_OF_SLOT` are clamped to it).
pub fn block_time(slot: u64) -> i64 {
    let slots_before = AS_OF_SLOT.saturating_sub(slot);
    // 0.4 s per slot; at most 3e8 slots, so the product fits easily.
    AS_OF_BLOCK_TIME_S - i64::try_from(slots_before * 2 / 5).unwrap_or(i64::MAX / 2)
}

/// The slot `minutes` before the as-of slot.
pub fn minutes_ago(minutes: u64) -> u64 {
    AS_OF_SLOT.saturating_sub(minutes.saturating_mul(SLOTS_PER_MINUTE))
}

pub fn days_ago(days: u64) -> u64 {
    minutes_ago(days.saturating_mul(MINUTES_PER_DAY))
}

pub fn epoch(slot: u64) -> u64 {
    slot / SLOTS_PER_EPOCH
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_follow_slots() {
        assert_eq!(block_time(AS_OF_SLOT), AS_OF_BLOCK_TIME_S);
        assert_eq!(block_time(AS_OF_SLOT - 10), AS_OF_BLOCK_TIME_S - 4);
        assert_eq!(block_time(days_ago(1)), AS_OF_BLOCK_TIME_S - 86_400);
        assert_eq!(epoch(AS_OF_SLOT), 694);
    }
}
