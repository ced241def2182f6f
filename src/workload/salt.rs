//! The run's prompt salt, resolved from `--prompt-salt` (see [`PromptSalt`]).
//!
//! Where the salt sits: in the seed of every text stream — the words of synthetic prompts, the
//! prefix prompts, the trace blocks — and nowhere else. Input lengths, output lengths, which
//! prompt gets which prefix and which trace rows share which block come from `--random-seed`
//! alone, so a salted run has the same shape as an unsalted one and exact lengths need no
//! adjustment (no tokens are spent on a marker). The words differ from the first token on, so a
//! prefix cache (vLLM, SGLang, TensorRT-LLM: each keys a block by everything before it) holds
//! nothing of an earlier run's prompts; within the run, equal seeds still give equal text.
//! There is also no run-wide common prefix, which a token-granular cache would reuse on every
//! request.

use super::spec::PromptSalt;

/// A resolved salt: `None` leaves text seeds as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Salt(Option<u64>);

impl Salt {
    /// No salt.
    pub const NONE: Salt = Salt(None);

    /// The salt for `mode`. `Auto` takes `shared` when the run has one (every shard of a run
    /// started with `--start-at` derives the same value, so they salt alike), else fresh
    /// randomness.
    pub fn resolve(mode: &PromptSalt, shared: Option<u64>) -> Salt {
        match mode {
            PromptSalt::None => Salt(None),
            PromptSalt::Text(t) => Salt(Some(fnv1a(t.as_bytes()))),
            PromptSalt::Auto => Salt(Some(shared.unwrap_or_else(rand::random))),
        }
    }

    /// The seed of the run's text streams: `seed` itself without a salt.
    pub fn text_seed(&self, seed: u64) -> u64 {
        self.0.map_or(seed, |k| seed ^ mix(k))
    }
}

/// A value every shard of one run computes alike: from the plan's identity and its start time.
pub fn shared_value(plan_id: &str, start_at_unix_ns: u64) -> u64 {
    mix(fnv1a(plan_id.as_bytes()) ^ start_at_unix_ns)
}

/// FNV-1a, 64 bits: stable across processes, platforms and versions (unlike the standard
/// hasher), so a fixed salt text gives the same key everywhere.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// splitmix64's finalizer: spreads a key over all bits (`mix(0) != 0`).
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(Salt::resolve(&PromptSalt::None, Some(3)).text_seed(7), 7);
        let a = Salt::resolve(&PromptSalt::Text("exp-1".into()), None);
        assert_eq!(a, Salt::resolve(&PromptSalt::Text("exp-1".into()), None));
        assert_ne!(a, Salt::resolve(&PromptSalt::Text("exp-2".into()), None));
        assert_ne!(a.text_seed(7), 7);
        let auto = || Salt::resolve(&PromptSalt::Auto, None);
        assert_ne!(auto(), auto(), "fresh per run");
        assert_eq!(
            Salt::resolve(&PromptSalt::Auto, Some(shared_value("p", 1))),
            Salt::resolve(&PromptSalt::Auto, Some(shared_value("p", 1))),
        );
        assert_ne!(shared_value("p", 1), shared_value("p", 2));
        // The standard FNV-1a test vector.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
