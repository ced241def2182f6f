//! What a level did with the newer APIs' request parts: inputs answered (embeddings' texts,
//! rankings' passages), images sent, tools offered and called. Counts, so memory stays flat.

use serde::{Deserialize, Serialize};

use crate::record::RequestRecord;

/// Counts over a level's successful measured requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApiTally {
    /// Inputs answered (texts embedded, passages ranked).
    pub inputs: u64,
    /// Images sent.
    pub images: u64,
    /// Their encoded bytes.
    pub image_bytes: u64,
    /// Requests that offered tools.
    pub offered: u64,
    /// Of those, requests whose response called at least one.
    pub called: u64,
    /// Of those, requests whose every call's arguments parse as JSON.
    pub valid: u64,
}

impl ApiTally {
    /// Counts one successful request.
    pub fn record(&mut self, rec: &RequestRecord) {
        self.inputs += u64::from(rec.sent.inputs);
        self.images += u64::from(rec.sent.images);
        self.image_bytes += rec.sent.image_bytes;
        if rec.sent.tools {
            self.offered += 1;
        }
        if rec.tools.calls > 0 {
            self.called += 1;
            self.valid += u64::from(rec.tools.args_valid);
        }
    }

    /// Adds another level part's counts (shards).
    pub fn merge(&mut self, o: &ApiTally) {
        self.inputs += o.inputs;
        self.images += o.images;
        self.image_bytes += o.image_bytes;
        self.offered += o.offered;
        self.called += o.called;
        self.valid += o.valid;
    }

    /// The level's numbers over `secs` seconds, with `input_tokens` in total.
    pub fn summarize(&self, secs: f64, input_tokens: u64) -> ApiStats {
        let per_sec = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        let share = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
        let batch = self.inputs > 0;
        ApiStats {
            input_throughput: batch.then(|| per_sec(self.inputs)),
            input_token_throughput: batch.then(|| per_sec(input_tokens)),
            input_count: batch.then_some(self.inputs),
            image_count: (self.images > 0).then_some(self.images),
            image_bytes: (self.images > 0).then_some(self.image_bytes),
            tool_call_share: share(self.called, self.offered),
            tool_args_valid_share: share(self.valid, self.called),
        }
    }
}

/// A level's numbers for the newer APIs; each `None` when the level had none of its kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiStats {
    /// Inputs answered per second (embeddings, rankings).
    pub input_throughput: Option<f64>,
    /// Input tokens per second (embeddings, rankings).
    pub input_token_throughput: Option<f64>,
    /// Inputs answered.
    pub input_count: Option<u64>,
    /// Images sent with successful requests.
    pub image_count: Option<u64>,
    /// Their encoded bytes.
    pub image_bytes: Option<u64>,
    /// Share of successful requests offered tools that called one (0..1).
    pub tool_call_share: Option<f64>,
    /// Share of those calling a tool whose arguments all parse as JSON (0..1).
    pub tool_args_valid_share: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_rates() {
        let t = ApiTally {
            inputs: 80,
            images: 0,
            image_bytes: 0,
            offered: 10,
            called: 4,
            valid: 3,
        };
        let s = t.summarize(2.0, 1000);
        assert_eq!(s.input_throughput, Some(40.0));
        assert_eq!(s.input_token_throughput, Some(500.0));
        assert_eq!(s.tool_call_share, Some(0.4));
        assert_eq!(s.tool_args_valid_share, Some(0.75));
        assert_eq!(s.image_count, None);
        let none = ApiTally::default().summarize(2.0, 1000);
        assert_eq!(none, ApiStats::default());
    }
}
