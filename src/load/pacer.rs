//! When each open-loop request is due: an absolute schedule of intended send times, generated
//! lazily from a seeded random stream, so a run of any length needs no memory per request and
//! the same seed replays the same arrivals — or a trace's own times (`--fixed-schedule`), which
//! end with the trace.
//!
//! Send time `i` is the sum of the first `i` gaps (the first request is due at the phase start);
//! workers sleep until their request's absolute time, so sleeping late never shifts later
//! requests (no drift from relative sleeps).
//!
//! A shard of a plan run by N processes ([`Pacer::for_shard`]) walks the whole plan's schedule
//! (same seed, whole rate) and keeps every N-th request, starting at its index. The shards'
//! union is therefore the one schedule a single process would follow, for every distribution:
//! independent gamma streams of rate r/N would not add up to a gamma stream of rate r (their
//! superposition drifts towards Poisson), a thinned common stream does.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Exp, Gamma};
use serde::{Deserialize, Serialize};

use super::shard::Shard;

/// How gaps between requests are distributed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Arrival {
    /// Evenly spaced: every 1/rate seconds.
    Constant,
    /// Exponential gaps (a Poisson process).
    Poisson,
    /// Gamma-distributed gaps with this shape (`--burstiness`): below 1 burstier than Poisson,
    /// above 1 more regular; 1 is Poisson.
    Gamma {
        /// Shape parameter k; the mean gap stays 1/rate.
        shape: f64,
    },
}

impl Arrival {
    /// The name used on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
            Arrival::Gamma { .. } => "gamma",
        }
    }
}

enum Gaps {
    Constant(f64),
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
    /// A trace's own send times (ns after the start), already divided by the speed-up: the
    /// schedule ends with them.
    Fixed(Vec<u64>),
}

/// Yields `(sequence number, intended offset in ns)` pairs in order.
pub struct Pacer {
    gaps: Gaps,
    rng: StdRng,
    next_ns: f64,
    /// Requests of the whole schedule generated so far.
    whole_seq: u64,
    /// Requests of this shard's part yielded so far.
    seq: u64,
    shard: Shard,
}

impl std::fmt::Debug for Pacer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pacer")
            .field("seq", &self.seq)
            .field("next_ns", &self.next_ns)
            .finish()
    }
}

impl Pacer {
    /// A schedule of `rate` requests per second (must be positive and finite).
    pub fn new(rate: f64, arrival: Arrival, seed: u64) -> Pacer {
        let rate = if rate.is_finite() && rate > 0.0 {
            rate
        } else {
            1.0
        };
        let mean_ns = 1e9 / rate;
        let gaps = match arrival {
            Arrival::Constant => Gaps::Constant(mean_ns),
            Arrival::Poisson => Gaps::Exp(
                Exp::new(1.0 / mean_ns)
                    .unwrap_or_else(|_| Exp::new(1.0).expect("1 is a valid rate")),
            ),
            Arrival::Gamma { shape } => {
                let shape = if shape.is_finite() && shape > 0.0 {
                    shape
                } else {
                    1.0
                };
                Gaps::Gamma(
                    Gamma::new(shape, mean_ns / shape)
                        .unwrap_or_else(|_| Gamma::new(1.0, mean_ns).expect("valid gamma")),
                )
            }
        };
        Pacer {
            gaps,
            rng: StdRng::seed_from_u64(seed),
            next_ns: 0.0,
            whole_seq: 0,
            seq: 0,
            shard: Shard::WHOLE,
        }
    }

    /// A trace's schedule (`--fixed-schedule`): request `i` is due `at_ns[i] / speedup` ns after
    /// the start, and there are no more after the last. A shard passes its own part of the
    /// trace's times (not [`Pacer::for_shard`]).
    pub fn fixed(at_ns: &[u64], speedup: f64) -> Pacer {
        let speedup = if speedup.is_finite() && speedup > 0.0 {
            speedup
        } else {
            1.0
        };
        let at = at_ns
            .iter()
            .map(|&t| (t as f64 / speedup).round() as u64)
            .collect();
        Pacer {
            gaps: Gaps::Fixed(at),
            rng: StdRng::seed_from_u64(0),
            next_ns: 0.0,
            whole_seq: 0,
            seq: 0,
            shard: Shard::WHOLE,
        }
    }

    /// This shard's part of the schedule `self` (built with the whole plan's rate and seed):
    /// requests `index`, `index + count`, `index + 2·count`, ... of it, numbered 0, 1, 2, ...
    pub fn for_shard(mut self, shard: Shard) -> Pacer {
        self.shard = Shard {
            index: shard.index,
            count: shard.count.max(1),
        };
        self
    }

    /// The next request: its sequence number (within this shard's part) and when it is due (ns
    /// after the phase start); `None` once a fixed schedule is exhausted (random schedules never
    /// end).
    pub fn next_send(&mut self) -> Option<(u64, u64)> {
        if let Gaps::Fixed(at) = &self.gaps {
            let next = at.get(self.seq as usize).map(|&t| (self.seq, t));
            self.seq += u64::from(next.is_some());
            return next;
        }
        let count = u64::from(self.shard.count);
        loop {
            let whole = self.whole_seq;
            let at = self.next_ns.round() as u64;
            let gap = match &self.gaps {
                Gaps::Constant(g) => *g,
                Gaps::Exp(d) => d.sample(&mut self.rng),
                Gaps::Gamma(d) => d.sample(&mut self.rng),
                Gaps::Fixed(_) => return None,
            };
            self.next_ns += gap;
            self.whole_seq += 1;
            if whole % count == u64::from(self.shard.index) {
                self.seq += 1;
                return Some((self.seq - 1, at));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(p: &mut Pacer, n: usize) -> Vec<f64> {
        let times: Vec<u64> = (0..=n).map(|_| p.next_send().unwrap().1).collect();
        times.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
    }

    fn mean_cv(g: &[f64]) -> (f64, f64) {
        let n = g.len() as f64;
        let mean = g.iter().sum::<f64>() / n;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn constant_is_exact() {
        let mut p = Pacer::new(1000.0, Arrival::Constant, 7);
        let sends: Vec<(u64, u64)> = (0..5).map(|_| p.next_send().unwrap()).collect();
        assert_eq!(
            sends,
            [
                (0, 0),
                (1, 1_000_000),
                (2, 2_000_000),
                (3, 3_000_000),
                (4, 4_000_000)
            ]
        );
        // No drift over many requests: the 1 000 000th is due at exactly 1000 s.
        let mut p = Pacer::new(1000.0, Arrival::Constant, 7);
        let last = (0..=1_000_000)
            .map(|_| p.next_send().unwrap())
            .last()
            .unwrap();
        assert_eq!(last, (1_000_000, 1_000_000_000_000));
        // A rate that is not a whole number of ns per request still lands on schedule.
        let mut p = Pacer::new(3.0, Arrival::Constant, 0);
        let t: Vec<u64> = (0..4).map(|_| p.next_send().unwrap().1).collect();
        assert_eq!(t, [0, 333_333_333, 666_666_667, 1_000_000_000]);
    }

    #[test]
    fn poisson_mean_and_dispersion() {
        let mut p = Pacer::new(200.0, Arrival::Poisson, 42);
        let (mean, cv) = mean_cv(&gaps(&mut p, 50_000));
        assert!((mean / 5e6 - 1.0).abs() < 0.02, "mean gap {mean}");
        assert!(
            (cv - 1.0).abs() < 0.03,
            "coefficient of variation {cv} (exponential: 1)"
        );
    }

    #[test]
    fn gamma_dispersion_follows_shape() {
        for (shape, want_cv) in [(0.25, 2.0), (4.0, 0.5)] {
            let mut p = Pacer::new(100.0, Arrival::Gamma { shape }, 9);
            let (mean, cv) = mean_cv(&gaps(&mut p, 50_000));
            assert!(
                (mean / 1e7 - 1.0).abs() < 0.03,
                "shape {shape}: mean gap {mean}"
            );
            assert!(
                (cv / want_cv - 1.0).abs() < 0.05,
                "shape {shape}: cv {cv}, want {want_cv}"
            );
        }
    }

    /// Shards thin one schedule: their union is the whole schedule, request for request, so a
    /// bursty gamma stream stays exactly as bursty when it is split.
    #[test]
    fn shards_union_is_the_whole_schedule() {
        for arrival in [
            Arrival::Constant,
            Arrival::Poisson,
            Arrival::Gamma { shape: 0.25 },
        ] {
            let whole: Vec<u64> = {
                let mut p = Pacer::new(40.0, arrival, 11);
                (0..3000).map(|_| p.next_send().unwrap().1).collect()
            };
            let mut union = Vec::new();
            for index in 0..3 {
                let shard = Shard { index, count: 3 };
                let mut p = Pacer::new(40.0, arrival, 11).for_shard(shard);
                for k in 0..1000u64 {
                    let (seq, at) = p.next_send().unwrap();
                    assert_eq!(seq, k, "a shard numbers its own requests");
                    union.push(at);
                }
            }
            union.sort_unstable();
            assert_eq!(union, whole, "{arrival:?}");
        }
        let mut p = Pacer::new(100.0, Arrival::Gamma { shape: 0.25 }, 9);
        let whole_cv = mean_cv(&gaps(&mut p, 39_999)).1;
        let mut all: Vec<u64> = (0..4)
            .flat_map(|index| {
                let mut s = Pacer::new(100.0, Arrival::Gamma { shape: 0.25 }, 9)
                    .for_shard(Shard { index, count: 4 });
                (0..10_000).map(move |_| s.next_send().unwrap().1)
            })
            .collect();
        all.sort_unstable();
        let union_gaps: Vec<f64> = all.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        // The union's first 40 000 sends are the whole schedule's: the same burstiness (CV 2).
        assert!((mean_cv(&union_gaps).1 - whole_cv).abs() < 1e-9);
    }

    #[test]
    fn fixed_schedule_follows_its_times_then_ends() {
        let mut p = Pacer::fixed(&[0, 1_000_000, 1_000_000, 7_000_001], 2.0);
        let got: Vec<(u64, u64)> = std::iter::from_fn(|| p.next_send()).collect();
        assert_eq!(
            got,
            [(0, 0), (1, 500_000), (2, 500_000), (3, 3_500_001)],
            "timestamps divided by the speed-up, ties kept"
        );
        assert_eq!(p.next_send(), None, "and it stays ended");
        assert_eq!(Pacer::fixed(&[5], f64::NAN).next_send(), Some((0, 5)));
    }

    #[test]
    fn same_seed_same_schedule() {
        let mut a = Pacer::new(50.0, Arrival::Poisson, 3);
        let mut b = Pacer::new(50.0, Arrival::Poisson, 3);
        let mut c = Pacer::new(50.0, Arrival::Poisson, 4);
        let ta: Vec<u64> = (0..100).map(|_| a.next_send().unwrap().1).collect();
        let tb: Vec<u64> = (0..100).map(|_| b.next_send().unwrap().1).collect();
        let tc: Vec<u64> = (0..100).map(|_| c.next_send().unwrap().1).collect();
        assert_eq!(ta, tb);
        assert_ne!(ta, tc);
    }
}
