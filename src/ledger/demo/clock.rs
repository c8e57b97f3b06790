//! The demo ledger's clock: the as-of slot, how slots map to block times and epochs, and
//! how "minutes ago" maps to slots.
//!
//! Owns: the time constants of the synthetic chain. Called from the demo ledger's thread;
//! constants and pure functions only.
//!
//! Invariant: every demo transaction lies at or before `AS_OF_SLOT` — except a timeline's
//! events, which lie after it (`timeline`: the timeline's start is the as-of instant) — and
//! block times grow with slots at 0.4 s per slot, through `AS_OF_BLOCK_TIME_S` at the as-of
//! slot. Deliberately absent: the wall clock (the demo is the same whenever it runs; only the
//! timeline reads it, to decide which of its events have happened).

/// The slot every response is read at (`context.slot`; on a timeline ledger, the slot of the
/// last event that has happened once there is one).
pub const AS_OF_SLOT: u64 = 300_000_000;
/// Block time of `AS_OF_SLOT`, in Unix seconds.
pub const AS_OF_BLOCK_TIME_S: i64 = 1_750_000_000;
/// 400 ms slots.
pub const SLOTS_PER_MINUTE: u64 = 150;
pub const MINUTES_PER_DAY: u64 = 1_440;
pub const SLOTS_PER_DAY: u64 = SLOTS_PER_MINUTE * MINUTES_PER_DAY;
pub const SLOTS_PER_EPOCH: u64 = 432_000;

/// Block time of a slot: 0.4 s per slot either side of `AS_OF_SLOT` (the slots after it are
/// a timeline's events).
pub fn block_time(slot: u64) -> i64 {
    if slot > AS_OF_SLOT {
        // At most u64::MAX * 2 / 5 seconds later: saturate rather than overflow.
        let after = u128::from(slot - AS_OF_SLOT) * 2 / 5;
        return AS_OF_BLOCK_TIME_S.saturating_add(i64::try_from(after).unwrap_or(i64::MAX));
    }
    let slots_before = AS_OF_SLOT - slot;
    // 0.4 s per slot; at most 3e8 slots, so the product fits easily.
    AS_OF_BLOCK_TIME_S - i64::try_from(slots_before * 2 / 5).unwrap_or(i64::MAX / 2)
}

/// The first slot whose block time is `seconds` after the as-of time's (2.5 slots a second,
/// rounded up), one past the as-of slot at the least.
pub fn slot_after(seconds: u64) -> u64 {
    AS_OF_SLOT.saturating_add(seconds.saturating_mul(5).div_ceil(2)).max(AS_OF_SLOT + 1)
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
        assert_eq!(block_time(AS_OF_SLOT + 10), AS_OF_BLOCK_TIME_S + 4);
        assert!(block_time(u64::MAX) > AS_OF_BLOCK_TIME_S, "no overflow");
    }

    #[test]
    fn slots_after_the_as_of_slot_keep_their_seconds() {
        for seconds in [0u64, 1, 2, 3, 60, 90, 86_400] {
            let slot = slot_after(seconds);
            assert!(slot > AS_OF_SLOT);
            assert_eq!(block_time(slot), AS_OF_BLOCK_TIME_S + seconds as i64, "{seconds}");
        }
        assert!(slot_after(u64::MAX) > AS_OF_SLOT, "no overflow");
    }
}
