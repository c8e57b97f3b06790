//! A job's budget of ledger bytes: how much a source may read for one job, in all its calls.
//!
//! Owns: `ByteBudget`, `SharedBytes` (one limit several budgets draw on together: the scan
//! lane's answers in flight), `within` (runs a future with a budget in scope), `within_part`
//! (a smaller limit for part of the work, charged to the budget in scope too) and `charge`
//! (what a source calls for every chunk it reads). The budget travels with the job's task as a tokio
//! task-local, so the sources charge it without a parameter on every method of
//! `LedgerSource`; `within` is called by the compute pool around one job, on its compute
//! thread.
//!
//! Invariant: inside `within`, the bytes a source reads for the job (RPC answer bodies, retries
//! included; snapshot files) never pass the budget by more than one chunk: the charge that
//! would cross it fails with `LedgerError::OverBudget`, which is final (never retried), and the
//! read stops there. Outside `within` (the CLI, tools) nothing is charged.
//! Invariant: a part (`within_part`) never loosens the budget it runs in: each charge is
//! checked against the part's limit and then charged to the enclosing budget as usual.
//! Invariant: a budget drawing on a `SharedBytes` holds what it charged there until it is
//! dropped (its work ended), so the pool's `used` is the bytes its live budgets have read;
//! a charge that would take it past its limit fails like the budget's own and marks the
//! budget `refused_by_pool`.
//! Deliberately absent: the demo ledger's reads (generated in memory, bounded by its own
//! construction) and the job's time budget (a deadline around the whole job, in the pool).

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::LedgerError;

/// Bytes one job may still read.
#[derive(Debug)]
pub struct ByteBudget {
    bytes_max: u64,
    bytes_used: Cell<u64>,
    /// The pool it also draws on, and whether the pool refused one of its charges (shared
    /// with the caller, who reads it once the work ended).
    pool: Option<(Arc<SharedBytes>, Rc<Cell<bool>>)>,
    /// The budget in scope where this one was opened as a part (`within_part`): charged too.
    outer: Option<Rc<ByteBudget>>,
}

/// A limit on the bytes several budgets hold together (`ByteBudget::pooled`).
#[derive(Debug)]
pub struct SharedBytes {
    bytes_max: u64,
    used: AtomicU64,
}

impl SharedBytes {
    pub fn new(bytes_max: u64) -> SharedBytes {
        SharedBytes { bytes_max, used: AtomicU64::new(0) }
    }

    /// Bytes the live budgets drawing on it hold now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn take(&self, bytes: u64) -> bool {
        let before = self.used.fetch_add(bytes, Ordering::AcqRel);
        if before.saturating_add(bytes) > self.bytes_max {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
            return false;
        }
        true
    }
}

impl ByteBudget {
    pub fn new(bytes_max: u64) -> ByteBudget {
        ByteBudget { bytes_max, bytes_used: Cell::new(0), pool: None, outer: None }
    }

    /// A budget of `bytes_max` that also draws on `pool`; `refused` is set when the pool
    /// refuses one of its charges.
    pub fn pooled(bytes_max: u64, pool: Arc<SharedBytes>, refused: Rc<Cell<bool>>) -> ByteBudget {
        ByteBudget { bytes_max, bytes_used: Cell::new(0), pool: Some((pool, refused)), outer: None }
    }

    fn charge(&self, bytes: u64) -> Result<(), LedgerError> {
        let used = self.bytes_used.get().saturating_add(bytes);
        if used > self.bytes_max {
            return Err(LedgerError::OverBudget(format!(
                "the job read more than its budget of {} MiB of ledger data",
                self.bytes_max / (1024 * 1024)
            )));
        }
        if let Some(outer) = &self.outer {
            outer.charge(bytes)?;
        }
        if let Some((pool, refused)) = &self.pool {
            if !pool.take(bytes) {
                refused.set(true);
                return Err(LedgerError::OverBudget(format!(
                    "the reads in flight hold their limit of {} KiB of ledger answers",
                    pool.bytes_max / 1024
                )));
            }
        }
        self.bytes_used.set(used);
        Ok(())
    }
}

impl Drop for ByteBudget {
    fn drop(&mut self) {
        if let Some((pool, _)) = &self.pool {
            pool.used.fetch_sub(self.bytes_used.get(), Ordering::AcqRel);
        }
    }
}

tokio::task_local! {
    static BUDGET: Rc<ByteBudget>;
}

/// Runs `future` with `budget` charged by every source read inside it.
pub async fn within<F: Future>(budget: ByteBudget, future: F) -> F::Output {
    BUDGET.scope(Rc::new(budget), future).await
}

/// Runs `future` with at most `bytes_max` more read inside it, each byte also charged to the
/// budget in scope (if any): a bound on one part of a job's reads (the scan's history read)
/// that cannot lift the job's own.
pub async fn within_part<F: Future>(bytes_max: u64, future: F) -> F::Output {
    let outer = BUDGET.try_with(Rc::clone).ok();
    within(ByteBudget { bytes_max, bytes_used: Cell::new(0), pool: None, outer }, future).await
}

/// Charges `bytes` just read to the current job's budget; `Ok` when no budget is in scope.
pub fn charge(bytes: u64) -> Result<(), LedgerError> {
    BUDGET.try_with(|budget| budget.charge(bytes)).unwrap_or(Ok(()))
}

/// Bytes the current job has read so far (0 outside `within`).
#[cfg(test)]
fn used() -> u64 {
    BUDGET.try_with(|budget| budget.bytes_used.get()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_inside_the_scope_and_refuses_past_it() {
        let runtime = crate::ledger::runtime().unwrap();
        runtime.block_on(async {
            assert_eq!(charge(u64::MAX), Ok(()), "no budget in scope: nothing is charged");
            within(ByteBudget::new(3 * 1024 * 1024), async {
                charge(2 * 1024 * 1024).unwrap();
                // Joined futures are polled inside the scope too.
                let (a, b) = tokio::join!(async { charge(512 * 1024) }, async { used() });
                assert_eq!((a, b), (Ok(()), 2 * 1024 * 1024 + 512 * 1024));
                let over = charge(1024 * 1024).unwrap_err();
                assert!(matches!(&over, LedgerError::OverBudget(m) if m.contains("3 MiB")), "{over}");
                assert!(!over.is_retryable());
                assert_eq!(used(), 2 * 1024 * 1024 + 512 * 1024, "a refused charge is not counted");
            })
            .await;
            assert_eq!(used(), 0);
        });
    }

    #[test]
    fn a_part_has_its_own_limit_and_still_charges_the_budget_around_it() {
        let runtime = crate::ledger::runtime().unwrap();
        runtime.block_on(async {
            within(ByteBudget::new(3 * 1024 * 1024), async {
                within_part(1024 * 1024, async {
                    charge(1024 * 1024).unwrap();
                    assert!(matches!(charge(1), Err(LedgerError::OverBudget(_))), "the part's limit");
                })
                .await;
                assert_eq!(used(), 1024 * 1024, "the part's bytes are the job's");
                charge(2 * 1024 * 1024).unwrap();
                within_part(u64::MAX, async {
                    assert!(matches!(charge(1), Err(LedgerError::OverBudget(_))), "a part never lifts the job's limit");
                })
                .await;
            })
            .await;
            within_part(10, async { assert_eq!(charge(10), Ok(())) }).await;
        });
    }

    #[test]
    fn pooled_budgets_hold_their_bytes_together_until_dropped() {
        let runtime = crate::ledger::runtime().unwrap();
        let pool = Arc::new(SharedBytes::new(1_000));
        let (a_refused, b_refused) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
        let a = ByteBudget::pooled(u64::MAX, Arc::clone(&pool), Rc::clone(&a_refused));
        let b = ByteBudget::pooled(u64::MAX, Arc::clone(&pool), Rc::clone(&b_refused));
        runtime.block_on(async {
            within(a, async { charge(700).unwrap() }).await;
            assert_eq!(pool.used(), 0, "a's work ended: its bytes are given back");
            let a = ByteBudget::pooled(u64::MAX, Arc::clone(&pool), Rc::clone(&a_refused));
            a.charge(700).unwrap();
            within(b, async {
                charge(300).unwrap();
                let over = charge(1).unwrap_err();
                assert!(matches!(&over, LedgerError::OverBudget(m) if m.contains("limit of 0 KiB")), "{over}");
            })
            .await;
            assert!(b_refused.get() && !a_refused.get());
            assert_eq!(pool.used(), 700, "b's bytes given back, a's still held");
            drop(a);
            assert_eq!(pool.used(), 0);
        });
    }
}
