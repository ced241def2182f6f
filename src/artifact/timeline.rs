//! Timeline CSV: one row per fixed interval of a run, so drift over hours shows (soak tests).
//! Rows are written as each interval closes; memory holds only the open interval.
//!
//! Columns: `start_unix_ms,end_unix_ms,requests,errors,requests_per_sec,latency_avg_ms,`
//! `latency_p50_ms,latency_p99_ms,ttft_p50_ms,ttft_p99_ms,output_tokens_per_sec`; a run whose
//! responses do not stream has no time to first token apart from its latency, and its file no
//! `ttft_p50_ms,ttft_p99_ms` ([`HEADER_WHOLE`]). A request belongs to the interval its exchange
//! ended in; empty cells mean no sample.
//!
//! The rows of a level's measurement are also kept as a bounded series
//! ([`crate::stats::trend::DriftSeries`]: TTFT p99, latency p99 and output tokens per second per
//! interval), from which the level's drift is judged when it ends.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::lines::{LineFile, LinesError};
use crate::record::{Clock, RequestRecord};
use crate::stats::Dist;
use crate::stats::trend::{Drift, DriftSeries};

/// Header line of a streamed run's timeline.
pub const HEADER: &str = "start_unix_ms,end_unix_ms,requests,errors,requests_per_sec,latency_avg_ms,latency_p50_ms,latency_p99_ms,ttft_p50_ms,ttft_p99_ms,output_tokens_per_sec";

/// Header line of a timeline of whole (not streamed) responses: no TTFT columns.
pub const HEADER_WHOLE: &str = "start_unix_ms,end_unix_ms,requests,errors,requests_per_sec,latency_avg_ms,latency_p50_ms,latency_p99_ms,output_tokens_per_sec";

/// One interval's accumulators.
#[derive(Debug, Default)]
struct Bucket {
    ok: u64,
    errors: u64,
    tokens: u64,
    latency: Dist,
    ttft: Dist,
}

/// A timeline being written.
#[derive(Debug)]
pub struct Timeline {
    out: LineFile,
    clock: Clock,
    every_ns: u64,
    start_ns: u64,
    cur: Bucket,
    /// The measurement's rows as a series, from when it started (ns on `clock`).
    series: DriftSeries,
    series_from: Option<u64>,
    /// Whether responses stream: only then is time to first token its own column.
    ttft: bool,
}

impl Timeline {
    /// Creates the file and writes the header; intervals start now. `streaming`: whether the
    /// responses stream (the TTFT columns are written only then).
    pub fn create(
        path: &Path,
        every: Duration,
        clock: Clock,
        streaming: bool,
    ) -> std::io::Result<Timeline> {
        Timeline::create_at(path, every, (clock, clock.now_ns()), streaming)
    }

    /// Creates the file and writes the header; intervals start at `start_ns` on `clock` (a
    /// merge rebuilds a timeline from records on the Unix clock, [`Clock::unix`]).
    pub fn create_at(
        path: &Path,
        every: Duration,
        (clock, start_ns): (Clock, u64),
        streaming: bool,
    ) -> std::io::Result<Timeline> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut out = LineFile::create(path)?;
        let header = if streaming { HEADER } else { HEADER_WHOLE };
        out.line(|b| b.write_all(header.as_bytes()));
        Ok(Timeline {
            out,
            clock,
            every_ns: every.as_nanos().max(1) as u64,
            start_ns,
            cur: Bucket::default(),
            series: DriftSeries::default(),
            series_from: None,
            ttft: streaming,
        })
    }

    /// The level's measurement started at `ns`: its drift series starts over with the intervals
    /// that begin from then on.
    pub fn measure_from(&mut self, ns: u64) {
        self.series = DriftSeries::default();
        self.series_from = Some(ns);
    }

    /// The drift over the measurement's closed intervals, once there are enough of them.
    pub fn drift(&self) -> Option<Drift> {
        self.series.drift()
    }

    /// Accounts a finished request (writing the intervals that ended before it).
    pub fn record(&mut self, rec: &RequestRecord) {
        self.advance(rec.end_ns);
        // Requests cancelled on purpose or abandoned by a second Ctrl-C are in no column:
        // neither served nor failed.
        if rec.cancelled_on_purpose() || rec.abandoned() {
            return;
        }
        match &rec.error {
            Some(_) => self.cur.errors += 1,
            None => {
                self.cur.ok += 1;
                self.cur.tokens += u64::from(rec.osl);
                if let Some(l) = rec.latency_ns() {
                    self.cur.latency.record(l);
                }
                if let Some(t) = rec.ttft_ns().filter(|_| self.ttft) {
                    self.cur.ttft.record(t);
                }
            }
        }
    }

    /// Starts the open interval at `now_ns` if nothing was recorded in it: a level that waited
    /// for its planned start (`--start-at`) leaves no empty rows for the wait.
    pub fn restart_if_idle(&mut self, now_ns: u64) {
        if self.cur.ok + self.cur.errors == 0 && now_ns > self.start_ns {
            self.start_ns = now_ns;
        }
    }

    /// Writes every interval that ended before `now_ns`.
    pub fn advance(&mut self, now_ns: u64) {
        while now_ns >= self.start_ns + self.every_ns {
            let end = self.start_ns + self.every_ns;
            let bucket = std::mem::take(&mut self.cur);
            self.write_row(self.start_ns, end, &bucket);
            self.start_ns = end;
        }
    }

    fn write_row(&mut self, start: u64, end: u64, b: &Bucket) {
        let secs = (end - start) as f64 / 1e9;
        // A summary reads ten quantiles off the histogram: one per distribution, not one per cell.
        let summarize = |d: &Dist| (d.count() > 0).then(|| d.stats(1e-6));
        let (latency, ttft) = (summarize(&b.latency), summarize(&b.ttft));
        if let Some(from) = self.series_from.filter(|&f| start >= f) {
            let mid_s = (start + end) as f64 / 2e9 - from as f64 / 1e9;
            let tokens = (b.ok > 0).then(|| b.tokens as f64 / secs);
            self.series.push(
                mid_s,
                [
                    ttft.as_ref().map(|s| s.p99),
                    latency.as_ref().map(|s| s.p99),
                    tokens,
                ],
            );
        }
        let ms = |s: Option<&crate::metrics::Stats>, f: fn(&crate::metrics::Stats) -> f64| {
            s.map_or_else(String::new, |s| format!("{:.3}", f(s)))
        };
        let ttft_cells = if self.ttft {
            format!(
                "{},{},",
                ms(ttft.as_ref(), |s| s.p50),
                ms(ttft.as_ref(), |s| s.p99)
            )
        } else {
            String::new()
        };
        let clock = self.clock;
        self.out.line(|out| {
            write!(
                out,
                "{},{},{},{},{:.3},{},{},{},{ttft_cells}{:.1}",
                clock.unix_ns(start) / 1_000_000,
                clock.unix_ns(end) / 1_000_000,
                b.ok,
                b.errors,
                b.ok as f64 / secs,
                ms(latency.as_ref(), |s| s.avg),
                ms(latency.as_ref(), |s| s.p50),
                ms(latency.as_ref(), |s| s.p99),
                b.tokens as f64 / secs
            )
        });
    }

    /// Writes the last, partial interval (ending now, its rates over its own span, so the
    /// rows' request counts add up to the run's) if any request ended in it, and flushes.
    /// A failed write is an I/O error whose message names the file and the rows it saved.
    pub fn finish(self) -> Result<(), LinesError> {
        let now = self.clock.now_ns();
        self.finish_at(now)
    }

    /// [`Timeline::finish`] with the run ending at `now` (ns on the timeline's clock).
    pub fn finish_at(mut self, now: u64) -> Result<(), LinesError> {
        self.advance(now);
        if now > self.start_ns && (self.cur.ok + self.cur.errors) > 0 {
            let bucket = std::mem::take(&mut self.cur);
            self.write_row(self.start_ns, now, &bucket);
        }
        self.out.finish().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request ending `end_ms` after `base_ns`.
    fn rec(base_ns: u64, end_ms: u64, latency_ms: u64, error: bool) -> RequestRecord {
        let ms = 1_000_000;
        let end = base_ns + end_ms * ms;
        RequestRecord {
            sent: Default::default(),
            tools: Default::default(),
            intended_ns: end - latency_ms * ms,
            sent_ns: end - latency_ms * ms,
            first_byte_ns: None,
            first_token_ns: Some(end - latency_ms * ms + ms),
            second_token_ns: None,
            last_token_ns: Some(end),
            end_ns: end,
            isl: 1,
            error: error
                .then(|| crate::record::RequestError::new(crate::record::ErrorKind::Timeout, "t")),
            ..crate::stats::test_record(0, 0, 10)
        }
    }

    /// A timeline of streamed responses by `interval` writing `t.csv` in a fresh directory (the
    /// guard keeps it).
    fn timeline(interval: Duration) -> (tempfile::TempDir, std::path::PathBuf, Timeline) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let t = Timeline::create(&path, interval, Clock::start(), true).unwrap();
        (dir, path, t)
    }

    /// A timeline file's data rows, split into fields.
    fn rows(text: &str) -> Vec<Vec<&str>> {
        text.lines()
            .skip(1)
            .map(|l| l.split(',').collect())
            .collect()
    }

    #[test]
    fn rows_per_interval() {
        let (_dir, path, mut t) = timeline(Duration::from_millis(100));
        let base = t.start_ns;
        t.record(&rec(base, 10, 5, false));
        t.record(&rec(base, 20, 7, false));
        t.record(&rec(base, 150, 9, true));
        t.record(&rec(base, 350, 11, false));
        t.advance(base + 400 * 1_000_000);
        drop(t);
        let text = std::fs::read_to_string(&path).unwrap();
        let rows = rows(&text);
        assert_eq!(text.lines().next().unwrap(), HEADER);
        assert_eq!(rows.len(), 4, "{text}");
        assert_eq!((rows[0][2], rows[0][3], rows[0][4]), ("2", "0", "20.000"));
        assert_eq!(rows[0][5], "6.000");
        assert_eq!((rows[1][2], rows[1][3], rows[1][5]), ("0", "1", ""));
        assert_eq!(rows[2][2], "0");
        assert_eq!((rows[3][2], rows[3][10]), ("1", "100.0"));
    }

    /// Rows as written, on the Unix clock from a fixed start: a timeline of whole (not streamed)
    /// responses has no TTFT columns, and a request abandoned by a second Ctrl-C is in no cell.
    #[test]
    fn rows_exact_with_and_without_ttft() {
        let base = 1_767_225_600_000_000_000;
        for (streaming, header, row) in [
            (
                true,
                HEADER,
                "1767225600000,1767225600100,2,1,20.000,6.000,6.000,6.980,1.000,1.000,200.0",
            ),
            (
                false,
                HEADER_WHOLE,
                "1767225600000,1767225600100,2,1,20.000,6.000,6.000,6.980,200.0",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.csv");
            let every = Duration::from_millis(100);
            let mut t =
                Timeline::create_at(&path, every, (Clock::unix(), base), streaming).unwrap();
            t.record(&rec(base, 10, 5, false));
            t.record(&rec(base, 20, 7, false));
            t.record(&rec(base, 30, 9, true));
            let mut abandoned = rec(base, 40, 9, false);
            abandoned.error = Some(crate::record::RequestError::new(
                crate::record::ErrorKind::Abandoned,
                "abandoned",
            ));
            t.record(&abandoned);
            t.finish_at(base + 100_000_000).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text, format!("{header}\n{row}\n"), "streaming {streaming}");
        }
    }

    #[test]
    fn finish_writes_the_partial_tail() {
        // An interval far longer than the test: everything lands in the unfinished tail.
        let (_dir, path, mut t) = timeline(Duration::from_secs(3600));
        let base = t.start_ns;
        std::thread::sleep(Duration::from_millis(5));
        t.record(&rec(base, 1, 1, false));
        t.record(&rec(base, 2, 1, true));
        t.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let rows = rows(&text);
        assert_eq!(rows.len(), 1, "{text}");
        assert_eq!((rows[0][2], rows[0][3]), ("1", "1"));
        let span_ms: u64 = rows[0][1].parse::<u64>().unwrap() - rows[0][0].parse::<u64>().unwrap();
        assert!(
            span_ms < 3_600_000,
            "the tail ends when the run does: {text}"
        );
    }
}
