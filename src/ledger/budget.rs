//! A job's budget of ledger bytes: how much a source may read for one job, in all its calls.
//!
//! Owns: `ByteBudget`, `within` (runs a future with a budget in scope) and `charge` (what a
//! source calls for every chunk it reads). The budget travels with the job's task as a tokio
//! task-local, so the sources charge it without a parameter on every method of
//! `LedgerSource`; `within` is called by the compute pool around one job, on its compute
//! thread.
//!
//! Invariant: inside `within`, the bytes a source reads for the job (RPC answer bodies, retries
//! included; snapshot files) never pass the budget by more than one chunk: the charge that
//! would cross it fails with `LedgerError::OverBudget`, which is final (never retried), and the
//! read stops there. Outside `within` (the CLI, tools) nothing is charged.
//! Deliberately absent: the demo ledger's reads (generated in memory, bounded by its own
//! construction) and the job's time budget (a deadline around the whole job, in the pool).

use std::cell::Cell;
use std::future::Future;

use super::LedgerError;

/// Bytes one job may still read.
#[derive(Debug)]
pub struct ByteBudget {
    bytes_max: u64,
    bytes_used: Cell<u64>,
}

impl ByteBudget {
    pub fn new(bytes_max: u64) -> ByteBudget {
        ByteBudget { bytes_max, bytes_used: Cell::new(0) }
    }

    fn charge(&self, bytes: u64) -> Result<(), LedgerError> {
        let used = self.bytes_used.get().saturating_add(bytes);
        if used > self.bytes_max {
            return Err(LedgerError::OverBudget(format!(
                "the job read more than its budget of {} MiB of ledger data",
                self.bytes_max / (1024 * 1024)
            )));
        }
        self.bytes_used.set(used);
        Ok(())
    }
}

tokio::task_local! {
    static BUDGET: ByteBudget;
}

/// Runs `future` with `budget` charged by every source read inside it.
pub async fn within<F: Future>(budget: ByteBudget, future: F) -> F::Output {
    BUDGET.scope(budget, future).await
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
}
