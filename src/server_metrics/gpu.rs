//! What the GPUs did: per-GPU samples read from Triton's GPU families or a DCGM exporter's
//! page, and their averages, maxima and energy over a level ([`GpuLevel`]).
//!
//! Triton (`docs/user_guide/metrics.md`, `src/metrics.cc`; label `gpu_uuid`):
//! `nv_gpu_utilization` (0–1), `nv_gpu_memory_total_bytes`, `nv_gpu_memory_used_bytes`,
//! `nv_gpu_power_usage` (W), `nv_gpu_power_limit` (W), `nv_energy_consumption` (J, counter).
//! DCGM exporter (`etc/default-counters.csv`; labels `gpu`, `UUID`, `modelName`, …):
//! `DCGM_FI_DEV_GPU_UTIL` (%), `DCGM_FI_DEV_FB_USED`, `DCGM_FI_DEV_FB_FREE` and
//! `DCGM_FI_DEV_FB_TOTAL` (MiB), `DCGM_FI_DEV_POWER_USAGE` (W),
//! `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (mJ, counter). Everything is converted to fractions,
//! bytes, watts and joules; GPUs are keyed by UUID (or index when a page has no UUID).

use std::collections::HashMap;

use serde::Serialize;

// What a level's GPUs did is measurement vocabulary (`metrics::gpu`): statistics and reports
// read it without the server view; this module fills it.
pub use crate::metrics::gpu::{EnergySource, GpuLevelView, GpuView, total_energy_j};

use super::level::GaugeAcc;
use super::prometheus::{Exposition, Sample};

/// One GPU at one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuSample {
    /// UUID (`GPU-…`), or the index when the page has none.
    pub uuid: String,
    /// Device name, when the page says it (DCGM's `modelName`).
    pub name: Option<String>,
    /// Utilization, 0–1.
    pub utilization: Option<f64>,
    /// Memory in use, bytes.
    pub memory_used_bytes: Option<f64>,
    /// Memory in total, bytes.
    pub memory_total_bytes: Option<f64>,
    /// Power draw, watts.
    pub power_w: Option<f64>,
    /// Cumulative energy, joules (since the server or the driver started).
    pub energy_j: Option<f64>,
}

const MIB: f64 = 1024.0 * 1024.0;

/// Every GPU the page reports, Triton's families and DCGM's alike, in page order.
pub fn read_gpus(page: &Exposition) -> Vec<GpuSample> {
    let mut gpus: Vec<GpuSample> = Vec::new();
    // (family, scale to our unit, setter)
    type Set = fn(&mut GpuSample, f64);
    let fields: [(&str, f64, Set); 11] = [
        ("nv_gpu_utilization", 1.0, |g, v| g.utilization = Some(v)),
        ("nv_gpu_memory_used_bytes", 1.0, |g, v| {
            g.memory_used_bytes = Some(v)
        }),
        ("nv_gpu_memory_total_bytes", 1.0, |g, v| {
            g.memory_total_bytes = Some(v)
        }),
        ("nv_gpu_power_usage", 1.0, |g, v| g.power_w = Some(v)),
        ("nv_energy_consumption", 1.0, |g, v| g.energy_j = Some(v)),
        ("DCGM_FI_DEV_GPU_UTIL", 0.01, |g, v| g.utilization = Some(v)),
        ("DCGM_FI_DEV_FB_USED", MIB, |g, v| {
            g.memory_used_bytes = Some(v)
        }),
        ("DCGM_FI_DEV_FB_TOTAL", MIB, |g, v| {
            g.memory_total_bytes = Some(v)
        }),
        ("DCGM_FI_DEV_POWER_USAGE", 1.0, |g, v| g.power_w = Some(v)),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 1e-3, |g, v| {
            g.energy_j = Some(v)
        }),
        // Free memory only fills in a total the page does not give (used + free); it comes
        // after FB_USED so that used is known.
        ("DCGM_FI_DEV_FB_FREE", MIB, |g, v| {
            g.memory_total_bytes = g.memory_total_bytes.or(g.memory_used_bytes.map(|u| u + v))
        }),
    ];
    for (family, scale, set) in fields {
        for s in page.series(family) {
            let Some(id) = gpu_id(s) else { continue };
            let i = gpus.iter().position(|g| g.uuid == id).unwrap_or_else(|| {
                gpus.push(GpuSample {
                    uuid: id.to_string(),
                    ..GpuSample::default()
                });
                gpus.len() - 1
            });
            let g = &mut gpus[i];
            if g.name.is_none() {
                g.name = s.label("modelName").map(str::to_string);
            }
            set(g, s.value * scale);
        }
    }
    gpus
}

fn gpu_id(s: &Sample) -> Option<&str> {
    s.label("gpu_uuid")
        .or_else(|| s.label("UUID"))
        .or_else(|| s.label("uuid"))
        .or_else(|| s.label("gpu"))
}

#[derive(Debug, Clone, Default)]
struct Acc {
    util: GaugeAcc,
    mem: GaugeAcc,
    power: GaugeAcc,
}

/// Accumulates one level's GPU samples, like [`super::level::EngineLevel`]: the start
/// sample's counters, then gauges of every sample taken during the level and at its end.
#[derive(Debug, Clone)]
pub struct GpuLevel {
    start: Vec<GpuSample>,
    acc: HashMap<String, Acc>,
}

impl GpuLevel {
    /// Starts a level at `start`.
    pub fn new(start: Vec<GpuSample>) -> Self {
        GpuLevel {
            start,
            acc: HashMap::new(),
        }
    }

    /// Samples taken while the level runs.
    pub fn observe(&mut self, gpus: &[GpuSample]) {
        for g in gpus {
            let a = self.acc.entry(g.uuid.clone()).or_default();
            a.util.push(g.utilization);
            a.mem.push(g.memory_used_bytes);
            a.power.push(g.power_w);
        }
    }

    /// Ends the level at `end`; one view per GPU present at the end.
    pub fn finish(mut self, end: &[GpuSample]) -> Vec<GpuLevelView> {
        self.observe(end);
        end.iter()
            .map(|g| {
                let acc = self.acc.remove(&g.uuid).unwrap_or_default();
                let before = self.start.iter().find(|s| s.uuid == g.uuid);
                let energy_j = before
                    .and_then(|b| b.energy_j)
                    .zip(g.energy_j)
                    .map(|(b, a)| (a - b).max(0.0));
                GpuLevelView {
                    uuid: g.uuid.clone(),
                    name: g.name.clone(),
                    utilization: acc.util.stats(),
                    memory_used_bytes: acc.mem.stats(),
                    memory_total_bytes: g.memory_total_bytes,
                    power_w: acc.power.stats(),
                    energy_j,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::GaugeStats;
    use crate::server_metrics::prometheus::parse;

    const TRITON: &str = "\
# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)
# TYPE nv_gpu_utilization gauge
nv_gpu_utilization{gpu_uuid=\"GPU-a\"} 0.42
nv_gpu_utilization{gpu_uuid=\"GPU-b\"} 0
nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-a\"} 85520809984
nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-a\"} 21474836480
nv_gpu_power_usage{gpu_uuid=\"GPU-a\"} 334.6
nv_energy_consumption{gpu_uuid=\"GPU-a\"} 1000.5
";

    const DCGM: &str = "\
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"h\"} 42
DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB HBM3\"} 61079
DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB HBM3\"} 20480
DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB HBM3\"} 334.600000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB HBM3\"} 1000500
";

    #[test]
    fn triton_and_dcgm_read_the_same() {
        let t = read_gpus(&parse(TRITON));
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].utilization, Some(0.0));
        let d = read_gpus(&parse(DCGM));
        assert_eq!(d.len(), 1);
        let (t, d) = (&t[0], &d[0]);
        assert_eq!((t.uuid.as_str(), d.uuid.as_str()), ("GPU-a", "GPU-a"));
        assert_eq!(d.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(t.utilization, d.utilization);
        assert_eq!(t.memory_used_bytes, d.memory_used_bytes);
        assert_eq!(
            t.memory_total_bytes, d.memory_total_bytes,
            "used + free MiB"
        );
        assert_eq!(t.power_w, d.power_w);
        assert_eq!(t.energy_j, d.energy_j, "mJ → J");
    }

    #[test]
    fn a_level_averages_gauges_and_subtracts_energy() {
        let at = |util: f64, power: f64, energy: f64| {
            let text = format!(
                "nv_gpu_utilization{{gpu_uuid=\"GPU-a\"}} {util}\nnv_gpu_power_usage{{gpu_uuid=\"GPU-a\"}} {power}\nnv_energy_consumption{{gpu_uuid=\"GPU-a\"}} {energy}\n"
            );
            read_gpus(&parse(&text))
        };
        let mut level = GpuLevel::new(at(0.0, 70.0, 100.0));
        level.observe(&at(0.5, 385.0, 300.0));
        let v = level.finish(&at(1.0, 700.0, 800.0));
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].utilization,
            Some(GaugeStats {
                avg: 0.75,
                max: 1.0,
                samples: 2
            })
        );
        assert_eq!(v[0].power_w.map(|p| p.avg), Some(542.5));
        assert_eq!(v[0].energy_j, Some(700.0));
        assert_eq!(total_energy_j(&v), Some(700.0));
        assert_eq!(v[0].memory_used_bytes, None);
        // 700 J over 2 s is 350 W: 1050 output tokens/s buy 3 tokens per joule.
        let view = GpuView::new(v.clone(), 2.0).with_output_rate(1050.0);
        assert_eq!(view.energy_source, Some(EnergySource::Counter));
        assert_eq!(view.output_tokens_per_joule, Some(3.0));
        assert_eq!(view.utilization_avg(), Some(0.75));
        assert_eq!(view.power_avg_w(), Some(542.5));
        // Without the counter, energy is average power × seconds.
        let mut no_counter = v;
        no_counter[0].energy_j = None;
        let view = GpuView::new(no_counter, 2.0);
        assert_eq!(
            (view.energy_j, view.energy_source),
            (Some(1085.0), Some(EnergySource::Power))
        );
    }
}
