//! The simulated GPU and how it reports itself.
//!
//! One device, shared by every hosted model (as a Triton server usually shares its GPU): an
//! "NVIDIA H100 80GB HBM3" with a fixed UUID. Its **utilization** is the share of wall time the
//! engines were busy (Σ engine step time, tensor executions included, capped at 1), measured
//! over windows of at least [`UTIL_WINDOW`] between readings, as Triton and DCGM sample
//! utilization over an interval. **Memory used** is the weights plus the KV blocks running
//! sequences hold: the KV reservation (90 % of memory minus weights, vLLM's default
//! `gpu_memory_utilization`) is divided evenly over the blocks of every LLM engine's pool.
//! **Power** is linear in utilization between [`IDLE_W`] and [`MAX_W`]; **energy** integrates
//! that power from the busy time between readings (exact for a linear power model), since the
//! server started. A background task reads the GPU every [`UTIL_WINDOW`] ([`sample_every`]), so
//! utilization describes the last window whatever the scrape cadence, as Triton's DCGM thread
//! polls on its own interval.
//!
//! Two expositions: Triton's GPU families on `/metrics` (`nv_gpu_utilization` 0–1,
//! `nv_gpu_memory_total_bytes`, `nv_gpu_memory_used_bytes`, `nv_gpu_power_usage` W,
//! `nv_gpu_power_limit` W, `nv_energy_consumption` J, label `gpu_uuid`; names and help texts of
//! Triton's `src/metrics.cc`), and the DCGM exporter's fields (`DCGM_FI_DEV_GPU_UTIL` %,
//! `DCGM_FI_DEV_FB_USED`/`DCGM_FI_DEV_FB_FREE` MiB, `DCGM_FI_DEV_POWER_USAGE` W,
//! `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` mJ; labels `gpu`, `UUID`, `pci_bus_id`, `device`,
//! `modelName`, `Hostname`; help texts of dcgm-exporter's `default-counters.csv`).

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::metrics::ModelMetrics;

/// Device name (DCGM's `modelName`).
pub(crate) const GPU_NAME: &str = "NVIDIA H100 80GB HBM3";
/// Device UUID (Triton's `gpu_uuid`, DCGM's `UUID`).
pub(crate) const GPU_UUID: &str = "GPU-5e1f0c2a-7d3b-4c8e-9a61-2b4f8d0e3c17";
/// Framebuffer size: 81 559 MiB, what an H100 80GB reports.
pub(crate) const MEMORY_TOTAL: u64 = 81_559 * MIB;
/// Memory taken by the model weights and runtime.
const WEIGHTS: u64 = 16 * 1024 * MIB;
/// Share of memory the engines may use (weights + KV cache).
const MEMORY_UTILIZATION: f64 = 0.9;
/// Power draw at idle, in watts.
pub(crate) const IDLE_W: f64 = 70.0;
/// Power draw at full utilization (the board power limit), in watts.
pub(crate) const MAX_W: f64 = 700.0;
/// Shortest window utilization is measured over.
pub(crate) const UTIL_WINDOW: Duration = Duration::from_millis(250);

const MIB: u64 = 1024 * 1024;

/// What the GPU reports at one reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GpuReading {
    /// Utilization over the last window, 0–1.
    pub(crate) utilization: f64,
    /// Bytes in use.
    pub(crate) memory_used: u64,
    /// Power draw, watts.
    pub(crate) power_w: f64,
    /// Energy since the server started, joules.
    pub(crate) energy_j: f64,
}

#[derive(Debug)]
struct Meter {
    /// Last reading: time, busy time accounted, energy so far.
    last: Instant,
    last_busy: u64,
    energy_j: f64,
    /// Start of the current utilization window, and the busy time then.
    mark: Instant,
    mark_busy: u64,
    utilization: f64,
}

/// The simulated GPU.
#[derive(Debug)]
pub(crate) struct SimGpu {
    meter: Mutex<Meter>,
}

impl SimGpu {
    /// A GPU that has been idle since now.
    pub(crate) fn new() -> Self {
        SimGpu {
            meter: Mutex::new(Meter::idle_since(Instant::now())),
        }
    }

    /// Reads the GPU now, given every model's counters.
    pub(crate) fn read(&self, models: &[&ModelMetrics]) -> GpuReading {
        let busy: u64 = models
            .iter()
            .map(|m| m.engine.busy_ns.load(Ordering::Relaxed))
            .sum();
        let mut m = self.meter.lock().unwrap_or_else(|p| p.into_inner());
        let reading = m.advance(Instant::now(), busy);
        GpuReading {
            memory_used: memory_used(models),
            ..reading
        }
    }
}

impl Meter {
    /// A meter that has read an idle GPU at `now`.
    fn idle_since(now: Instant) -> Self {
        Meter {
            last: now,
            last_busy: 0,
            energy_j: 0.0,
            mark: now,
            mark_busy: 0,
            utilization: 0.0,
        }
    }

    /// Integrates energy up to `now` and, once the window is long enough, updates utilization.
    /// Busy time beyond wall time (parallel engines, a step counted when it starts) is capped.
    fn advance(&mut self, now: Instant, busy: u64) -> GpuReading {
        let dt = now.saturating_duration_since(self.last).as_nanos() as u64;
        let db = busy.saturating_sub(self.last_busy).min(dt);
        self.energy_j += (IDLE_W * dt as f64 + (MAX_W - IDLE_W) * db as f64) / 1e9;
        self.last = now;
        self.last_busy = busy;
        let window = now.saturating_duration_since(self.mark);
        if window >= UTIL_WINDOW {
            let wb = busy.saturating_sub(self.mark_busy) as f64;
            self.utilization = (wb / window.as_nanos() as f64).min(1.0);
            self.mark = now;
            self.mark_busy = busy;
        }
        GpuReading {
            utilization: self.utilization,
            memory_used: 0,
            power_w: IDLE_W + (MAX_W - IDLE_W) * self.utilization,
            energy_j: self.energy_j,
        }
    }
}

/// Reads the server's GPU (`read`: `SimState::gpu_reading`) every [`UTIL_WINDOW`] until
/// shutdown.
pub(crate) async fn sample_every(read: impl Fn(), mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(UTIL_WINDOW);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = super::engine::signalled(&mut shutdown) => return,
            _ = tick.tick() => read(),
        }
    }
}

/// Weights plus the KV blocks in use, each block worth an even share of the KV reservation.
fn memory_used(models: &[&ModelMetrics]) -> u64 {
    let load = |f: fn(&ModelMetrics) -> u64| models.iter().map(|m| f(m)).sum::<u64>();
    let blocks = load(|m| m.engine.kv_capacity.load(Ordering::Relaxed));
    let used = load(|m| m.engine.kv_used.load(Ordering::Relaxed));
    let reserve = (MEMORY_TOTAL as f64 * MEMORY_UTILIZATION) as u64 - WEIGHTS;
    if blocks == 0 {
        return WEIGHTS;
    }
    let kv = (used as f64 * reserve as f64 / blocks as f64) as u64;
    (WEIGHTS + kv).min(MEMORY_TOTAL)
}

/// Gauges and counters of one series each, all labelled `labels`: name, help, type, value.
fn families(out: &mut String, labels: &str, families: &[(&str, &str, &str, String)]) {
    for (name, help, kind, value) in families {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{labels} {value}"
        );
    }
}

/// Triton's GPU families for `r`.
pub(crate) fn render_triton(out: &mut String, r: &GpuReading) {
    // Triton reads DCGM's integer percent and scales it.
    let util = (r.utilization * 100.0).round() / 100.0;
    #[rustfmt::skip]
    let rows = [
        ("nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)", "gauge", util.to_string()),
        ("nv_gpu_memory_total_bytes", "GPU total memory, in bytes", "gauge", MEMORY_TOTAL.to_string()),
        ("nv_gpu_memory_used_bytes", "GPU used memory, in bytes", "gauge", r.memory_used.to_string()),
        ("nv_gpu_power_usage", "GPU power usage in watts", "gauge", format!("{:.3}", r.power_w)),
        ("nv_gpu_power_limit", "GPU power management limit in watts", "gauge", MAX_W.to_string()),
        ("nv_energy_consumption", "GPU energy consumption in joules since the Triton Server started", "counter", format!("{:.3}", r.energy_j)),
    ];
    families(out, &format!("{{gpu_uuid=\"{GPU_UUID}\"}}"), &rows);
}

/// The DCGM exporter's page for `r`.
pub(crate) fn render_dcgm(r: &GpuReading) -> String {
    let mut out = String::with_capacity(2048);
    let l = format!(
        "{{gpu=\"0\",UUID=\"{GPU_UUID}\",pci_bus_id=\"00000000:01:00.0\",device=\"nvidia0\",modelName=\"{GPU_NAME}\",Hostname=\"ttftbench-sim\"}}"
    );
    let used_mib = r.memory_used / MIB;
    let util = (r.utilization * 100.0).round() as u64;
    #[rustfmt::skip]
    let rows = [
        ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", util.to_string()),
        ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "gauge", (MEMORY_TOTAL / MIB - used_mib).to_string()),
        ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", used_mib.to_string()),
        ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", format!("{:.6}", r.power_w)),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "counter", ((r.energy_j * 1000.0) as u64).to_string()),
    ];
    families(&mut out, &l, &rows);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_power_and_energy_follow_busy_time() {
        let t0 = Instant::now();
        let mut m = Meter::idle_since(t0);
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Half busy for 1 s: 0.5 utilization, energy 70 × 1 + 630 × 0.5 = 385 J.
        let r = m.advance(at(1000), 500_000_000);
        assert!((r.utilization - 0.5).abs() < 1e-9);
        assert!((r.power_w - 385.0).abs() < 1e-9);
        assert!((r.energy_j - 385.0).abs() < 1e-6);
        // A reading 100 ms later keeps the window's utilization; energy still integrates.
        let r = m.advance(at(1100), 600_000_000);
        assert!((r.utilization - 0.5).abs() < 1e-9);
        assert!((r.energy_j - (385.0 + 7.0 + 63.0)).abs() < 1e-6);
        // Busy time beyond wall time is capped at full utilization.
        let r = m.advance(at(1400), 2_000_000_000);
        assert_eq!(r.utilization, 1.0);
    }

    #[test]
    fn dcgm_page_is_in_dcgm_units() {
        let r = GpuReading {
            utilization: 0.424,
            memory_used: 20 * 1024 * MIB,
            power_w: 337.12,
            energy_j: 1234.5678,
        };
        let page = render_dcgm(&r);
        assert!(page.contains("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-5e1f0c2a-7d3b-4c8e-9a61-2b4f8d0e3c17\",pci_bus_id=\"00000000:01:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"ttftbench-sim\"} 42\n"), "{page}");
        assert!(page.contains("} 20480\n"), "FB used in MiB: {page}");
        assert!(page.contains("} 61079\n"), "FB free in MiB: {page}");
        assert!(page.contains("} 337.120000\n"), "{page}");
        assert!(page.contains("} 1234567\n"), "energy in mJ: {page}");
        assert!(page.contains("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
        let mut t = String::new();
        render_triton(&mut t, &r);
        assert!(
            t.contains(
                "nv_gpu_utilization{gpu_uuid=\"GPU-5e1f0c2a-7d3b-4c8e-9a61-2b4f8d0e3c17\"} 0.42\n"
            ),
            "{t}"
        );
        assert!(t.contains("nv_energy_consumption{gpu_uuid=\"GPU-5e1f0c2a-7d3b-4c8e-9a61-2b4f8d0e3c17\"} 1234.568\n"), "{t}");
        assert!(t.contains("nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-5e1f0c2a-7d3b-4c8e-9a61-2b4f8d0e3c17\"} 85520809984\n"), "{t}");
    }
}
