//! Why a tokenizer could not be found or loaded, and why a `tokenizer.json` is not one the fast
//! engine reproduces exactly.

use std::path::PathBuf;

/// A tokenizer that cannot be used: the message names the file or every place looked in, and
/// what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// `--tokenizer` named neither a file, a directory holding `tokenizer.json`, nor a model in
    /// the local Hugging Face cache.
    #[error("{}", not_found_message(.spec, .tried))]
    NotFound {
        /// What was given.
        spec: String,
        /// Every path looked at, in order.
        tried: Vec<PathBuf>,
    },
    /// The cache holds the model, but only in a form other than `tokenizer.json`.
    #[error(
        "{} has no tokenizer.json (it holds {}); only Hugging Face fast tokenizers (tokenizer.json) can be loaded: convert it with transformers (AutoTokenizer.from_pretrained(...).save_pretrained(DIR)) and give --tokenizer DIR",
        .dir.display(), .found.join(", ")
    )]
    NoTokenizerJson {
        /// The snapshot or directory.
        dir: PathBuf,
        /// Tokenizer files it does hold (`tokenizer.model`, `vocab.json`, ...).
        found: Vec<String>,
    },
    /// The file exists but the `tokenizers` library cannot load it.
    #[error(
        "cannot load tokenizer {}: expected a Hugging Face tokenizer.json file: {source}",
        .path.display()
    )]
    Load {
        /// The file.
        path: PathBuf,
        /// What the library said.
        #[source]
        source: tokenizers::Error,
    },
    /// A `tokenizer.json` that is not valid JSON of the expected shape.
    #[error("invalid tokenizer.json: {0}")]
    Json(#[from] serde_json::Error),
    /// The vocabulary lacks one of the 256 byte symbols a byte-level BPE needs.
    #[error("vocabulary lacks the byte symbol {0:?}")]
    MissingByteSymbol(String),
    /// A merge written as one string is not `"a b"`.
    #[error("merge {0:?} is not two tokens separated by one space")]
    BadMerge(String),
    /// A merge names a token (or produces one) that is not in the vocabulary.
    #[error("merge token {0:?} is not in the vocabulary")]
    UnknownMergeToken(String),
    /// An added token uses options the fast engine does not reproduce.
    #[error("added token {0:?} uses lstrip/rstrip/single_word or is empty")]
    UnsupportedAddedToken(String),
}

fn not_found_message(spec: &str, tried: &[PathBuf]) -> String {
    let list: String = tried
        .iter()
        .map(|p| format!("\n  {}", p.display()))
        .collect();
    format!(
        "'{spec}' is not a tokenizer.json file, a directory holding one, or a model in the local Hugging Face cache (nothing is downloaded). Looked at:{list}\n  Give the path of a tokenizer.json (or of the directory holding it), or put the model's tokenizer in the cache first (e.g. `huggingface-cli download ORG/NAME tokenizer.json`; HF_HOME / HF_HUB_CACHE choose the cache)."
    )
}

/// Why a `tokenizer.json` is left to the Hugging Face pipeline rather than the fast engine: not
/// an error, a reason (logged at debug level).
#[derive(Debug, thiserror::Error)]
pub enum NotFast {
    /// A normalizer changes the text before splitting.
    #[error("it has a normalizer")]
    Normalizer,
    /// Pre-tokenizer other than GPT-2's.
    #[error("its pre-tokenizer is not GPT-2's ByteLevel (regex, no prefix space)")]
    PreTokenizer,
    /// Model other than BPE.
    #[error("its model is not BPE")]
    NotBpe,
    /// BPE options the fast engine does not reproduce.
    #[error("its BPE model uses dropout, subword affixes or ignore_merges")]
    BpeOptions,
    /// Special tokens are encoded as plain text.
    #[error("it encodes special tokens as text")]
    EncodesSpecialTokens,
    /// The vocabulary or merges cannot be turned into the fast engine's tables.
    #[error("{0}")]
    Model(#[from] TokenizerError),
}
