//! The tests that measure this process's own peak resident memory (`VmHWM`): nothing else may run
//! beside them, so they have their own binary and take turns.

#[path = "../common/mod.rs"]
mod common;

/// One test at a time: another test's allocations would move the high-water mark.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

mod hostile_event;
mod merge_memory;
