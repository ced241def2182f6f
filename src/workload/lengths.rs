//! Lengths drawn from a normal distribution, rounded, at least 1: prompt and output lengths,
//! turns per session, image sides. Every sampler of the workload draws through it, so it sits
//! below them.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

/// Samples lengths in tokens from a normal distribution, rounded, at least 1 (GenAI-Perf's
/// `--output-tokens-mean/-stddev` and `--synthetic-input-tokens-mean/-stddev`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthSampler {
    mean: u32,
    stddev: u32,
}

impl LengthSampler {
    /// A sampler for normal(`mean`, `stddev`); `stddev == 0` always gives `max(mean, 1)`.
    pub fn new(mean: u32, stddev: u32) -> LengthSampler {
        LengthSampler { mean, stddev }
    }

    /// One length: normal(mean, stddev), rounded half away from zero, clamped to
    /// `1..=u32::MAX`. With `stddev == 0` no randomness is drawn.
    pub fn sample(&self, rng: &mut impl rand::Rng) -> u32 {
        if self.stddev == 0 {
            return self.mean.max(1);
        }
        match Normal::new(f64::from(self.mean), f64::from(self.stddev)) {
            // `as` saturates (and maps NaN to 0), so the clamp below is the only bound needed.
            Ok(normal) => (normal.sample(rng).round() as u32).max(1),
            // Unreachable for finite non-negative parameters, which u32s always are.
            Err(_) => self.mean.max(1),
        }
    }

    /// The first `n` lengths of the sequence for `seed`: the same on every run and platform
    /// (`StdRng` from rand 0.10; see [`super::prompts::synthetic`] for the one floating-point
    /// caveat).
    pub fn seeded(&self, seed: u64, n: usize) -> Vec<u32> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n).map(|_| self.sample(&mut rng)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_sampler_is_normal_rounded_and_positive() {
        let s = LengthSampler::new(100, 20);
        let v = s.seeded(5, 20_000);
        assert!(v.iter().all(|&n| n >= 1));
        let mean = v.iter().map(|&n| f64::from(n)).sum::<f64>() / v.len() as f64;
        let var = v
            .iter()
            .map(|&n| (f64::from(n) - mean).powi(2))
            .sum::<f64>()
            / v.len() as f64;
        assert!((mean - 100.0).abs() < 1.0, "mean {mean}");
        assert!((var.sqrt() - 20.0).abs() < 1.0, "stddev {}", var.sqrt());
        assert_eq!(s.seeded(5, 10), s.seeded(5, 10));
        assert_eq!(LengthSampler::new(7, 0).seeded(1, 3), vec![7, 7, 7]);
        assert_eq!(LengthSampler::new(0, 0).seeded(1, 2), vec![1, 1]);
        let wide = LengthSampler::new(1, 50).seeded(2, 1000);
        assert!(wide.iter().all(|&n| n >= 1));
    }
}
