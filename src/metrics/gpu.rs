//! What a level's GPUs did (utilization, memory, power, energy, and the output tokens a joule
//! bought): one [`GpuLevelView`] per GPU and their sum ([`GpuView`]). The server view
//! (`server_metrics::gpu`) fills it from Triton's or a DCGM exporter's pages; statistics,
//! files and reports read it.

use serde::{Deserialize, Serialize};

use super::GaugeStats;

/// One GPU over a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuLevelView {
    /// UUID (or index).
    pub uuid: String,
    /// Device name, when known.
    pub name: Option<String>,
    /// Utilization, 0–1.
    pub utilization: Option<GaugeStats>,
    /// Memory in use, bytes.
    pub memory_used_bytes: Option<GaugeStats>,
    /// Memory in total, bytes.
    pub memory_total_bytes: Option<f64>,
    /// Power draw, watts.
    pub power_w: Option<GaugeStats>,
    /// Energy used during the level, joules (from the energy counter; `None` without one).
    pub energy_j: Option<f64>,
}

/// Energy of every GPU over the level, joules; `None` unless every GPU has an energy counter
/// (tokens per joule needs all of it).
pub fn total_energy_j(gpus: &[GpuLevelView]) -> Option<f64> {
    if gpus.is_empty() {
        return None;
    }
    gpus.iter().map(|g| g.energy_j).sum()
}

/// Where a level's GPU energy comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnergySource {
    /// Every GPU's energy counter, subtracted.
    Counter,
    /// Every GPU's average power times the level's seconds (no energy counter).
    Power,
}

/// Every GPU over a level, with the energy they used and the output tokens it bought.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuView {
    /// One view per GPU.
    pub gpus: Vec<GpuLevelView>,
    /// Seconds between the level's first and last sample.
    pub window_s: f64,
    /// Energy of all GPUs over the window, joules; `None` unless every GPU reports energy or
    /// power.
    pub energy_j: Option<f64>,
    /// Where [`GpuView::energy_j`] comes from.
    pub energy_source: Option<EnergySource>,
    /// Output tokens per joule: the level's output-token rate over the GPUs' average power.
    pub output_tokens_per_joule: Option<f64>,
}

impl GpuView {
    /// The view of `gpus` over `window_s` seconds: energy from the counters, else from power.
    pub fn new(gpus: Vec<GpuLevelView>, window_s: f64) -> GpuView {
        let from_power = || -> Option<f64> {
            if gpus.is_empty() || window_s <= 0.0 {
                return None;
            }
            gpus.iter()
                .map(|g| g.power_w.map(|p| p.avg * window_s))
                .sum()
        };
        let (energy_j, energy_source) = total_energy_j(&gpus)
            .map(|e| (e, EnergySource::Counter))
            .or_else(|| from_power().map(|e| (e, EnergySource::Power)))
            .unzip();
        GpuView {
            gpus,
            window_s,
            energy_j,
            energy_source,
            output_tokens_per_joule: None,
        }
    }

    /// Adds tokens per joule for a level that produced `tokens_per_s` output tokens a second.
    pub fn with_output_rate(mut self, tokens_per_s: f64) -> GpuView {
        self.output_tokens_per_joule = self
            .energy_j
            .filter(|&e| e > 0.0 && self.window_s > 0.0 && tokens_per_s.is_finite())
            .map(|e| tokens_per_s / (e / self.window_s));
        self
    }

    /// Mean over GPUs of each one's average utilization, 0–1.
    pub fn utilization_avg(&self) -> Option<f64> {
        mean(
            self.gpus
                .iter()
                .filter_map(|g| g.utilization.map(|u| u.avg)),
        )
    }

    /// Highest utilization any GPU reached, 0–1.
    pub fn utilization_max(&self) -> Option<f64> {
        self.gpus
            .iter()
            .filter_map(|g| g.utilization.map(|u| u.max))
            .reduce(f64::max)
    }

    /// Average power of all GPUs together, watts.
    pub fn power_avg_w(&self) -> Option<f64> {
        self.gpus
            .iter()
            .filter_map(|g| g.power_w.map(|p| p.avg))
            .reduce(|a, b| a + b)
    }

    /// Memory in use at its highest, summed over GPUs, bytes.
    pub fn memory_used_max_bytes(&self) -> Option<f64> {
        self.gpus
            .iter()
            .filter_map(|g| g.memory_used_bytes.map(|m| m.max))
            .reduce(|a, b| a + b)
    }
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = v.fold((0u32, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| sum / f64::from(n))
}
