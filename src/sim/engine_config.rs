//! What the simulated engine is: its batch slots, queue bound, step timings and KV cache
//! ([`EngineConfig`]), the configuration the engine ([`super::engine`]) runs and its counters
//! ([`super::counters`]) report.

use serde::{Deserialize, Serialize};

/// Timing and capacity of the simulated engine. All times in microseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineConfig {
    /// Number of sequences decoded together (batch slots).
    pub max_batch: usize,
    /// Maximum number of requests waiting for a slot (tensor models: for an execution);
    /// 0 = unbounded. Overflow is refused with HTTP 503 / gRPC `RESOURCE_EXHAUSTED` "queue full".
    pub max_queue: usize,
    /// Fixed prefill cost per newly admitted request.
    pub prefill_base_us: u64,
    /// Prefill cost per input token.
    pub prefill_us_per_token: u64,
    /// Fixed cost of one decode step.
    pub decode_base_us: u64,
    /// Extra cost of a decode step per running sequence.
    pub decode_us_per_seq: u64,
    /// Tokens per KV-cache block (vLLM's default, 16).
    pub kv_block_size: u32,
    /// KV-cache blocks. 0 = unlimited: admission and timing are those of an engine without a
    /// KV cache, and usage is reported against a nominal pool of `max_batch ×`
    /// [`NOMINAL_TOKENS_PER_SLOT`] tokens.
    pub kv_blocks: u32,
    /// Prefix caching: full prompt blocks already in the KV cache are not prefilled again.
    pub prefix_caching: bool,
}

/// Tokens per batch slot of the nominal pool an unlimited KV cache reports usage against.
pub const NOMINAL_TOKENS_PER_SLOT: u64 = 4096;

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_batch: 8,
            max_queue: 0,
            prefill_base_us: 2000,
            prefill_us_per_token: 100,
            decode_base_us: 4000,
            decode_us_per_seq: 250,
            kv_block_size: 16,
            kv_blocks: 0,
            prefix_caching: false,
        }
    }
}

impl EngineConfig {
    /// Zero latency everywhere: the engine is bypassed and tokens flow as fast as the transport
    /// takes them.
    pub fn instant() -> Self {
        EngineConfig {
            prefill_base_us: 0,
            prefill_us_per_token: 0,
            decode_base_us: 0,
            decode_us_per_seq: 0,
            ..EngineConfig::default()
        }
    }

    /// True when every timing is zero (instant mode: no engine loop, no queue).
    pub fn is_instant(&self) -> bool {
        self.prefill_base_us == 0
            && self.prefill_us_per_token == 0
            && self.decode_base_us == 0
            && self.decode_us_per_seq == 0
    }

    /// Duration of one step with `running` sequences (including the newly admitted ones) whose
    /// newly admitted members have `admitted_input_tokens` input tokens each.
    pub fn step_us(&self, running: usize, admitted_input_tokens: &[u32]) -> u64 {
        let prefill: u64 = admitted_input_tokens
            .iter()
            .map(|&t| self.prefill_base_us + self.prefill_us_per_token * u64::from(t))
            .sum();
        self.decode_base_us + self.decode_us_per_seq * running as u64 + prefill
    }

    /// Checks that the configuration can run.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.max_batch == 0 {
            anyhow::bail!("engine max_batch must be at least 1");
        }
        if self.kv_block_size == 0 {
            anyhow::bail!("engine kv_block_size must be at least 1 token");
        }
        Ok(())
    }

    /// Blocks of the KV pool: `kv_blocks`, or the nominal size of an unlimited pool.
    pub fn kv_capacity(&self) -> u32 {
        if self.kv_blocks > 0 {
            return self.kv_blocks;
        }
        let tokens = self.max_batch as u64 * NOMINAL_TOKENS_PER_SLOT;
        u32::try_from(tokens.div_ceil(u64::from(self.kv_block_size.max(1)))).unwrap_or(u32::MAX)
    }
}
