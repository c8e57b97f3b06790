//! Group work of one scheduler tick on a listener thread (group commit): the requests that are
//! ready together each hand in an item, and one call does the work of all of them — one
//! Ed25519 signature over a Merkle root instead of one per scan (`signing::batch`), one
//! RocksDB write of their quota units instead of one per scan (`Store::charge_now_each`).
//!
//! Owns: `join`, the future a task awaits with its item, and the per-thread open group a
//! use site keeps in its own `thread_local!` (`Open<I, O>`).
//!
//! How a tick is found: the first task to join an open group leads it. It gives the tick away
//! once: it spawns a one-line task that wakes it, and returns `Pending`. monoio's run queue is
//! first in, first out for spawned and woken tasks, so every task already ready on this thread
//! runs before that waker task, and the leader runs after it; those that join meanwhile follow.
//! (A task that wakes itself does not do: monoio runs a task woken during its own poll again at
//! once, at the front of the queue; and a leader polled again before its waker task ran —
//! hyper wakes its own connection task while it reads a body — keeps waiting for it: measured,
//! either mistake made every group one scan.) The leader then
//! closes the group, does the work for every item in one call and wakes the followers with
//! their outputs. Under light load a group holds one item and costs two extra polls; at
//! saturation it holds the requests that were ready together.
//!
//! Invariant: every joined item gets its output exactly once, whoever is dropped: a leader
//! dropped before its flush (a client that hung up) flushes in its `Drop`, so followers are
//! never stranded; a dropped follower's output is computed and dropped. Should the flush panic
//! (a bug), the group is poisoned and every follower fails as its leader did (a panic the
//! connection answers 500), never waits.
//! Invariant: a group holds at most the `items_max` its use site names; the task that finds
//! it full leads a new one. Groups never cross threads (`Rc`, not `Send`) or owners: a use
//! site names its owner (e.g. the signer's address) and a group of another owner is not joined.
//! Invariant: called on a monoio runtime's thread (a listener's: `monoio::spawn`).
//! Deliberately absent: timers (a group never waits for more work than is already ready, so
//! it adds no latency beyond two polls) and cross-thread batching.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::thread::LocalKey;

/// The group a thread has open for a use site: `thread_local!(static OPEN: Open<I, O> = …)`.
pub type Open<I, O> = RefCell<Option<Rc<RefCell<Group<I, O>>>>>;

/// One tick's items, and their outputs once flushed.
pub struct Group<I, O> {
    owner: usize,
    items: Vec<I>,
    outputs: Vec<Option<O>>,
    wakers: Vec<Option<Waker>>,
    /// Set by the leader's waker task: the tasks ready when the leader gave the tick away ran.
    ticked: bool,
    /// The waker of the leader's latest poll (the waker task wakes this one).
    leader: Option<Waker>,
    flushed: bool,
    /// The flush panicked: no output will come (each follower fails as its leader did).
    poisoned: bool,
}

impl<I, O> Group<I, O> {
    /// An empty group of `owner`'s (its vectors grow with the items that join: a lone
    /// request's group allocates for one, not for `items_max`).
    fn new(owner: usize) -> Group<I, O> {
        Group {
            owner,
            items: Vec::new(),
            outputs: Vec::new(),
            wakers: Vec::new(),
            ticked: false,
            leader: None,
            flushed: false,
            poisoned: false,
        }
    }
}

enum Role<F> {
    /// Leads the group: `flush` does its work; `yielded` once it gave the tick away.
    Leader {
        flush: Option<F>,
        yielded: bool,
    },
    Follower,
}

/// The future of one joined item (`join`).
pub struct Joined<I: 'static, O: 'static, F: FnOnce(Vec<I>) -> Vec<O>> {
    open: &'static LocalKey<Open<I, O>>,
    group: Rc<RefCell<Group<I, O>>>,
    index: usize,
    role: Role<F>,
}

/// Joins `item` to the group open on this thread for `owner` (at most `items_max` items), or
/// opens one and leads it: resolves to this item's output of `flush`, which the leader calls
/// once with every item of the group, in the order joined, and which must return one output
/// per item in that order (asserted).
pub fn join<I: 'static, O: 'static, F: FnOnce(Vec<I>) -> Vec<O>>(
    open: &'static LocalKey<Open<I, O>>,
    owner: usize,
    items_max: usize,
    item: I,
    flush: F,
) -> Joined<I, O, F> {
    assert!(items_max > 0, "a group holds at least one item");
    open.with(|slot| {
        let mut slot = slot.borrow_mut();
        if let Some(group) = slot.as_ref() {
            let mut g = group.borrow_mut();
            if g.owner == owner && !g.flushed && g.items.len() < items_max {
                g.items.push(item);
                g.wakers.push(None);
                let index = g.items.len() - 1;
                drop(g);
                return Joined { open, group: group.clone(), index, role: Role::Follower };
            }
        }
        let group = Rc::new(RefCell::new(Group::new(owner)));
        {
            let mut g = group.borrow_mut();
            g.items.push(item);
            g.wakers.push(None);
        }
        *slot = Some(group.clone());
        Joined { open, group, index: 0, role: Role::Leader { flush: Some(flush), yielded: false } }
    })
}

impl<I, O, F: FnOnce(Vec<I>) -> Vec<O>> Joined<I, O, F> {
    /// Closes the group (no one joins it after this), does its work and wakes its followers.
    fn flush_now(&mut self) {
        let Role::Leader { flush, .. } = &mut self.role else { return };
        let Some(flush) = flush.take() else { return };
        self.open.with(|slot| {
            let mut slot = slot.borrow_mut();
            if slot.as_ref().is_some_and(|open| Rc::ptr_eq(open, &self.group)) {
                *slot = None;
            }
        });
        let items = {
            let mut g = self.group.borrow_mut();
            g.flushed = true;
            std::mem::take(&mut g.items)
        };
        let count = items.len();
        // Should `flush` panic (a bug: the leader's request answers 500), its followers are
        // woken to fail too rather than wait for outputs that will never come.
        let mut poison = Poison { group: &self.group, armed: true };
        let outputs = flush(items);
        assert_eq!(outputs.len(), count, "a group's flush answers every item");
        let wakers = {
            let mut g = self.group.borrow_mut();
            g.outputs = outputs.into_iter().map(Some).collect();
            std::mem::take(&mut g.wakers)
        };
        poison.armed = false;
        wakers.into_iter().flatten().for_each(Waker::wake);
    }
}

/// Marks a group poisoned and wakes its followers when dropped still armed (its flush panicked).
struct Poison<'g, I, O> {
    group: &'g RefCell<Group<I, O>>,
    armed: bool,
}

impl<I, O> Drop for Poison<'_, I, O> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let wakers = match self.group.try_borrow_mut() {
            Ok(mut g) => {
                g.poisoned = true;
                std::mem::take(&mut g.wakers)
            }
            Err(_) => Vec::new(),
        };
        wakers.into_iter().flatten().for_each(Waker::wake);
    }
}

impl<I, O, F: FnOnce(Vec<I>) -> Vec<O> + Unpin> Future for Joined<I, O, F> {
    type Output = O;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<O> {
        let this = self.get_mut();
        if let Role::Leader { yielded, .. } = &mut this.role {
            if !this.group.borrow().ticked {
                // The waker task wakes the waker of the latest poll.
                this.group.borrow_mut().leader = Some(cx.waker().clone());
                if !*yielded {
                    *yielded = true;
                    let group = this.group.clone();
                    // Detached: it runs after the tasks ready now (see the module's header).
                    drop(monoio::spawn(async move {
                        let leader = {
                            let mut g = group.borrow_mut();
                            g.ticked = true;
                            g.leader.take()
                        };
                        leader.into_iter().for_each(Waker::wake);
                    }));
                }
                // Also when polled again before the tick passed (something else in its task
                // woke it: hyper does, reading a body): the flush waits for the waker task.
                return Poll::Pending;
            }
            this.flush_now();
        }
        let mut g = this.group.borrow_mut();
        match g.outputs.get_mut(this.index).and_then(Option::take) {
            Some(output) => Poll::Ready(output),
            // Its leader's flush panicked (answered 500): this request fails the same way.
            None if g.poisoned => panic!("the work of this request's group failed"),
            None => {
                // A follower before the flush (the leader's output is always there after it).
                if let Some(waker) = g.wakers.get_mut(this.index) {
                    *waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl<I, O, F: FnOnce(Vec<I>) -> Vec<O>> Drop for Joined<I, O, F> {
    fn drop(&mut self) {
        // A leader dropped before its flush still does its followers' work.
        self.flush_now();
    }
}

/// A test's future run to its end on a monoio runtime of its own (`join` spawns on it).
#[cfg(test)]
pub fn block_on_local<T>(future: impl Future<Output = T>) -> T {
    let mut runtime = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new().build().expect("runtime");
    runtime.block_on(future)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static OPEN: Open<u32, u32> = const { RefCell::new(None) };
    }

    thread_local! {
        static FLUSHES: Cell<usize> = const { Cell::new(0) };
    }

    fn doubled(items: Vec<u32>) -> Vec<u32> {
        FLUSHES.with(|f| f.set(f.get() + 1));
        items.into_iter().map(|i| i * 2).collect()
    }

    fn run_local<T>(future: impl Future<Output = T>) -> T {
        block_on_local(future)
    }

    /// Items 0..5 joined by tasks spawned together (item `i` for owner `owner_of(i)`, groups of
    /// at most `items_max`): each task's output, in spawn order.
    fn spawned_together(owner_of: fn(u32) -> usize, items_max: usize) -> Vec<u32> {
        run_local(async move {
            let handles: Vec<_> = (0..5u32)
                .map(|i| monoio::spawn(async move { join(&OPEN, owner_of(i), items_max, i, doubled).await }))
                .collect();
            let mut outputs = Vec::new();
            for handle in handles {
                outputs.push(handle.await);
            }
            outputs
        })
    }

    #[test]
    fn tasks_ready_together_share_one_flush_and_each_gets_its_own_output() {
        FLUSHES.with(|f| f.set(0));
        assert_eq!(spawned_together(|_| 1, 64), vec![0, 2, 4, 6, 8]);
        assert_eq!(FLUSHES.with(Cell::get), 1);
    }

    #[test]
    fn a_full_group_starts_another_and_owners_do_not_mix() {
        FLUSHES.with(|f| f.set(0));
        assert_eq!(spawned_together(|i| if i == 4 { 2 } else { 1 }, 2), vec![0, 2, 4, 6, 8]);
        // {0, 1}, {2, 3} of owner 1 (two items at most), {4} of owner 2.
        assert_eq!(FLUSHES.with(Cell::get), 3);
    }

    #[test]
    fn a_leader_dropped_before_its_flush_still_answers_its_followers() {
        FLUSHES.with(|f| f.set(0));
        let output = run_local(async {
            // Each joins when made: the first leads, the second follows; the leader is dropped
            // (its client hung up) before it ever ran.
            let leader = join(&OPEN, 1, 64, 10, doubled);
            let follower = join(&OPEN, 1, 64, 20, doubled);
            drop(leader);
            follower.await
        });
        assert_eq!(output, 40);
        assert_eq!(FLUSHES.with(Cell::get), 1);
    }

    #[test]
    fn a_flush_that_panics_fails_its_followers_instead_of_stranding_them() {
        fn panics(_: Vec<u32>) -> Vec<u32> {
            panic!("a bug in the flush")
        }
        let leader = join(&OPEN, 9, 64, 1, panics);
        let mut follower = join(&OPEN, 9, 64, 2, panics);
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(leader)));
        assert!(dropped.is_err(), "the leader's flush panicked");
        let mut cx = Context::from_waker(Waker::noop());
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Pin::new(&mut follower).poll(&mut cx)));
        assert!(polled.is_err(), "the follower fails as its leader did, and does not wait");
    }

    #[test]
    fn alone_it_is_one_item_one_flush() {
        FLUSHES.with(|f| f.set(0));
        assert_eq!(run_local(join(&OPEN, 7, 64, 21, doubled)), 42);
        assert_eq!(FLUSHES.with(Cell::get), 1);
    }
}
