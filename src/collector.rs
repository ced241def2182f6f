//! Where records go while a level runs: one collector thread per level receives every finished
//! request, streams it to `requests.jsonl` (and, when asked, to GenAI-Perf's raw
//! `profile_export.json`), folds it into the level's [`Aggregate`], and gives the request's gap
//! buffer and response capture back to their pools. Workers never wait on it: the channel is unbounded
//! and lock-free, and file I/O stays off the async runtime.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::thread::JoinHandle;

use indicatif::ProgressBar;

use crate::artifact::raw_export::RawExportWriter;
use crate::artifact::records::write_row;
use crate::artifact::timeline::Timeline;
use crate::load::{Completed, GapPool, RecordSink, record_queue};
use crate::metrics::Objective;
use crate::record::{Clock, Phase};
use crate::stats::Aggregate;

/// Optional per-level files fed one record at a time.
#[derive(Default)]
pub struct FileSinks {
    /// `timeline.csv`.
    pub timeline: Option<Timeline>,
    /// `profile_export.json` (GenAI-Perf's raw export); takes each record's response capture.
    pub raw_export: Option<RawExportWriter>,
}

/// A running collector.
pub struct Collector {
    tx: RecordSink,
    handle: JoinHandle<std::io::Result<Aggregate>>,
}

impl Collector {
    /// Starts a collector for one level. `records` is the `requests.jsonl` path, when records
    /// are written; `progress` advances with each measured request.
    pub fn spawn(
        level: String,
        records: Option<&Path>,
        clock: Clock,
        objectives: Vec<Objective>,
        pool: GapPool,
        progress: Option<ProgressBar>,
        sinks: FileSinks,
    ) -> std::io::Result<Collector> {
        let FileSinks {
            mut timeline,
            mut raw_export,
        } = sinks;
        let mut out = match records {
            Some(p) => Some(BufWriter::with_capacity(1 << 16, File::create(p)?)),
            None => None,
        };
        let (tx, rx) = record_queue();
        let handle = std::thread::Builder::new()
            .name(format!("collect-{level}"))
            .spawn(move || {
                let mut agg = Aggregate::new();
                let mut io_error: Option<std::io::Error> = None;
                while let Some(Completed {
                    record,
                    mut gaps,
                    capture,
                }) = rx.recv()
                {
                    if let Some(w) = out.as_mut()
                        && io_error.is_none()
                        && let Err(e) = write_row(w, &level, &clock, &record)
                    {
                        io_error = Some(e);
                    }
                    agg.record(&record, &gaps, &objectives);
                    if let Some(raw) = raw_export.as_mut()
                        && let Err(e) = raw.record(&record, capture)
                        && io_error.is_none()
                    {
                        io_error = Some(e);
                    }
                    // Warm-up traffic is on the timeline too: it is what the server saw.
                    if let Some(t) = timeline.as_mut() {
                        t.record(&record);
                    }
                    if record.phase == Phase::Measure
                        && let Some(p) = &progress
                    {
                        p.inc(1);
                    }
                    gaps.clear();
                    let _ = pool.push(gaps);
                }
                if let Some(w) = out.as_mut()
                    && io_error.is_none()
                    && let Err(e) = w.flush()
                {
                    io_error = Some(e);
                }
                if let Some(mut raw) = raw_export
                    && let Err(e) = raw.end_level().and_then(|()| raw.finish())
                    && io_error.is_none()
                {
                    io_error = Some(e);
                }
                // The last interval is still open: close it at the level's end.
                if let Some(t) = timeline
                    && let Err(e) = t.finish()
                    && io_error.is_none()
                {
                    io_error = Some(e);
                }
                match io_error {
                    Some(e) => Err(e),
                    None => Ok(agg),
                }
            })?;
        Ok(Collector { tx, handle })
    }

    /// A sender for workers.
    pub fn sender(&self) -> RecordSink {
        self.tx.clone()
    }

    /// Waits until every sender is gone and every record is written; returns the aggregate.
    pub fn finish(self) -> std::io::Result<Aggregate> {
        drop(self.tx);
        self.handle
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the collector thread panicked")))
    }
}
