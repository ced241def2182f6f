//! Where one request stands inside the simulated server: the states a batcher job and an
//! engine sequence move through, stored in a [`Phase`] shared by the scheduler and the
//! transport that waits on it.

use std::sync::atomic::{AtomicU8, Ordering};

/// Waiting in the queue (0: where a [`Phase`] starts).
pub(crate) const QUEUED: u8 = 0;
/// Part of an execution (the batcher) or holding a slot and getting a token per step (the
/// engine).
pub(crate) const RUNNING: u8 = 1;
/// Done: the execution ended or every token was produced; the times are final.
pub(crate) const DONE: u8 = 2;
/// The requester left (client disconnected) before it was done; it is dropped.
pub(crate) const CANCELLED: u8 = 3;
/// The server shut down first.
pub(crate) const ABORTED: u8 = 4;

/// One request's state (one of the constants above); it starts [`QUEUED`] (0).
#[derive(Debug, Default)]
pub(crate) struct Phase(AtomicU8);

impl Phase {
    /// The state now.
    pub(crate) fn get(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }

    /// Moves from `from` to `to`; false, and nothing changes, when the state is not `from`.
    pub(crate) fn transition(&self, from: u8, to: u8) -> bool {
        self.0
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}
