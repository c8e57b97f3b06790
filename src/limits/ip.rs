//! The per-client-IP limiter for failed authentication (contract §3: "unauthenticated failures
//! are also limited per client IP").
//!
//! Owns: `IpFailureLimiter`, a fixed table of `IP_TABLE_SLOTS` GCRA cells (one `AtomicU64` each,
//! all with the same `RateLimit`), indexed by the client address hashed with a per-process random
//! key. Called from every listener thread: `is_blocked` before authentication (a blocked
//! client's key is only looked up: one that works still passes, since the limit is on failed
//! authentications, never on keys), `check_failure` after each failure.
//!
//! Invariant: memory is fixed at creation (`IP_TABLE_SLOTS` × 8 bytes) whatever the number of
//! clients; nothing is ever inserted or evicted.
//! Invariant: IPv6 clients are keyed by their /64 prefix (one subscriber usually holds a whole
//! /64, so rotating the low bits does not buy fresh cells); IPv4-mapped IPv6 addresses are keyed
//! as the IPv4 address.
//! Trade-off (deliberate): two addresses whose hashes fall in one slot share a cell, so a client
//! can be blocked by a noisy neighbour's failures. The hash key is random per process, so an
//! attacker cannot aim at a victim's slot, and with 4096 slots an innocent client shares its slot
//! with a given attacker with probability 1/4096. One who holds many prefixes (an IPv6 /48 is
//! 65,536 /64s) can fill every slot, and so block everyone's failures — but never a valid key,
//! which the API lets through whatever its slot says.
//! Deliberately absent: locks, allocation after creation, clock reads.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use super::rate::{self, RateLimit};
use crate::config::{IP_FAILURES_PER_S_DEFAULT, IP_FAILURE_BURST_DEFAULT, IP_TABLE_SLOTS};

const _: () = assert!(IP_TABLE_SLOTS.is_power_of_two());

/// Fixed-size table of failure buckets, shared by all listener threads.
#[derive(Debug)]
pub struct IpFailureLimiter {
    limit: RateLimit,
    hash_key: RandomState,
    slots: Box<[AtomicU64]>,
}

impl IpFailureLimiter {
    pub fn new(limit: RateLimit) -> Self {
        let slots = (0..IP_TABLE_SLOTS).map(|_| AtomicU64::new(0)).collect();
        Self { limit, hash_key: RandomState::new(), slots }
    }

    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Records one failed authentication; `true` while the client is within its limit, `false`
    /// once this failure is past it (answer 429 `RATE_LIMITED` instead of 401).
    pub fn check_failure(&self, ip: IpAddr, now_ns: u64) -> bool {
        rate::admit(self.limit, self.slot(ip), now_ns).allowed
    }

    /// `true` when the client has no failure left: answer 429 before looking at its key.
    pub fn is_blocked(&self, ip: IpAddr, now_ns: u64) -> bool {
        self.blocked_retry_after_s(ip, now_ns).is_some()
    }

    /// When blocked, the whole seconds until the client may fail again (at least 1), for
    /// `Retry-After` and `details.retryAfterSeconds`.
    pub fn blocked_retry_after_s(&self, ip: IpAddr, now_ns: u64) -> Option<u32> {
        let tat_ns = self.slot(ip).load(Ordering::Relaxed);
        if rate::state_at(self.limit, tat_ns, now_ns).remaining_tokens > 0 {
            return None;
        }
        Some(rate::retry_after_s(self.limit, tat_ns, now_ns))
    }

    fn slot(&self, ip: IpAddr) -> &AtomicU64 {
        let index = (self.hash_key.hash_one(client_key(ip)) as usize) & (IP_TABLE_SLOTS - 1);
        &self.slots[index]
    }
}

/// The contract's default: 20 failures per second, 20 at once.
pub const IP_FAILURE_LIMIT_DEFAULT: RateLimit =
    match RateLimit::new(IP_FAILURES_PER_S_DEFAULT, IP_FAILURE_BURST_DEFAULT) {
        Ok(limit) => limit,
        Err(_) => panic!("IP failure limiter defaults out of range"), // evaluated at compile time
    };

impl Default for IpFailureLimiter {
    fn default() -> Self {
        Self::new(IP_FAILURE_LIMIT_DEFAULT)
    }
}

/// The identity of a client for limiting: the IPv4 address, or the /64 of an IPv6 address.
fn client_key(ip: IpAddr) -> u128 {
    match ip.to_canonical() {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => (u128::from(v6) >> 64) | (1 << 64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const MS: u64 = 1_000_000;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("test address")
    }

    #[test]
    fn defaults_are_valid() {
        let limiter = IpFailureLimiter::default();
        assert_eq!(limiter.limit().rate_per_second(), IP_FAILURES_PER_S_DEFAULT);
        assert_eq!(limiter.limit().burst(), IP_FAILURE_BURST_DEFAULT);
    }

    #[test]
    fn twenty_failures_then_blocked_then_recovers() {
        let limiter = IpFailureLimiter::default();
        let client = ip("203.0.113.7");
        for n in 0..IP_FAILURE_BURST_DEFAULT {
            assert!(!limiter.is_blocked(client, 0), "blocked before failure {n}");
            assert!(limiter.check_failure(client, 0), "failure {n} refused");
        }
        assert!(limiter.is_blocked(client, 0));
        assert_eq!(limiter.blocked_retry_after_s(client, 0), Some(1));
        assert!(!limiter.check_failure(client, 0));
        // One interval (50 ms) later one more failure is tolerated.
        assert!(!limiter.is_blocked(client, 50 * MS));
        assert_eq!(limiter.blocked_retry_after_s(client, 50 * MS), None);
    }

    #[test]
    fn clients_are_independent() {
        let limiter = IpFailureLimiter::new(RateLimit::new(1, 1).expect("valid"));
        let noisy = ip("198.51.100.1");
        assert!(limiter.check_failure(noisy, 0));
        assert!(limiter.is_blocked(noisy, 0));
        // Find a client in another slot (the hash key is random per process).
        let other = (2..=255u8)
            .map(|last| IpAddr::V4(Ipv4Addr::new(198, 51, 100, last)))
            .find(|&c| !std::ptr::eq(limiter.slot(c), limiter.slot(noisy)))
            .expect("254 addresses cannot all share one of 4096 slots");
        assert!(!limiter.is_blocked(other, 0));
    }

    #[test]
    fn client_keys() {
        let cases = [
            ("192.0.2.1", "::ffff:192.0.2.1", true),
            ("2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true),
            ("2001:db8:1:2::1", "2001:db8:1:3::1", false),
            ("0.0.0.1", "::1", false),
            ("192.0.2.1", "192.0.2.2", false),
        ];
        for (a, b, same) in cases {
            assert_eq!(client_key(ip(a)) == client_key(ip(b)), same, "{a} vs {b}");
        }
        assert_ne!(client_key(IpAddr::V6(Ipv6Addr::UNSPECIFIED)), client_key(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
    }

    #[test]
    fn memory_is_fixed() {
        let limiter = IpFailureLimiter::default();
        for last in 0..=255u8 {
            for third in 0..=255u8 {
                limiter.check_failure(IpAddr::V4(Ipv4Addr::new(10, 0, third, last)), 0);
            }
        }
        assert_eq!(limiter.slots.len(), IP_TABLE_SLOTS);
    }
}
