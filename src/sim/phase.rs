//! Where one request stands inside the simulated server: the states a batcher job and an
//! engine sequence move through, stored in an `AtomicU8` shared by the scheduler and the
//! transport that waits on it.

/// Waiting in the queue.
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
