//! Tests of the public tokenizer against Hugging Face's pipeline on the same embedded JSON, and
//! the corpora the engine's own tests share.

use std::sync::OnceLock;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::Tokenizer;
use super::builtin::{GPT2_TOKENIZER_JSON_GZ, gunzip};

/// The embedded JSON loaded through the `tokenizers` crate: the reference.
pub(super) fn hf_reference() -> &'static tokenizers::Tokenizer {
    static HF: OnceLock<tokenizers::Tokenizer> = OnceLock::new();
    HF.get_or_init(|| {
        let json = gunzip(GPT2_TOKENIZER_JSON_GZ).unwrap();
        tokenizers::Tokenizer::from_bytes(json).unwrap()
    })
}

/// HF's ids for `text`, without special tokens.
pub(super) fn hf_ids(text: &str) -> Vec<u32> {
    hf_reference()
        .encode_fast(text, false)
        .unwrap()
        .get_ids()
        .to_vec()
}

/// Fixed strings covering the regex's corner cases and the scripts named in the design.
const FIXED: &[&str] = &[
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll see they've said we'd go, isn't it? It's John's.",
    "'s 't 're 've 'm 'll 'd",
    "'S 'T 'RE 'VE 'M 'LL 'D",
    "''s '''t x's x''s '",
    "don't'll",
    " 's",
    "  's",
    "\t's",
    "'",
    "''",
    "'x",
    "'r",
    "'re",
    "'rex",
    "'l",
    "'lll",
    "a  b",
    "a   b",
    "a \tb",
    "a\t b",
    "a\n\nb",
    "a \n b",
    "a\r\nb",
    "a\r\n\r\nb",
    "line\r\n",
    " ",
    "  ",
    "\n",
    "\t",
    "\r\n",
    " a",
    "  a",
    "a ",
    "a  ",
    "\u{a0}a",
    " \u{a0}a",
    "a\u{a0}",
    "\u{3000}日本",
    "x\u{2028}y",
    "x\u{85}y",
    "x\u{200b}y",
    "\u{feff}BOM",
    "\u{b}\u{c}",
    "1234567890",
    "3.14159",
    "-42",
    "1,000,000",
    "12:30pm",
    "v1.2.3",
    "0x1F",
    "1e-9",
    "٠١٢٣٤٥٦٧٨٩",
    "۰۱۲۳",
    "०१२३४५६७८९",
    "１２３",
    "x²+y³",
    "½ ¾",
    "Ⅻ Ⅳ",
    "① ②",
    "Ⓐ Ⓑ",
    "mañana über café naïve Ångström straße œuvre",
    "e\u{301}",
    "a\u{300}\u{301}\u{302}",
    " \u{301}",
    "\u{301}a",
    "नमस्ते दुनिया",
    "क्षि",
    "مرحبا بالعالم",
    "שלום",
    "สวัสดี",
    "你好，世界！",
    "日本語のテキスト",
    "한국어 텍스트",
    "Привет, мир!",
    "Γειά σου",
    "😀😃😄",
    "👍🏽",
    "👨‍👩‍👧‍👦",
    "❤️",
    "🇺🇸🇯🇵",
    "a😀b",
    " 😀",
    "😀 😀",
    "fn main() {\n    println!(\"hi\");\n}\n",
    "if (a && b) { return x->y; }",
    "def f(x):\n\treturn x ** 2  # square\n",
    "<div class=\"a\">&amp;</div>",
    "SELECT * FROM t WHERE id = 1;",
    "$ cargo test --lib -- --nocapture",
    "a=>b!=c::d",
    "!!!???...",
    "....",
    "---",
    "***",
    "~~~~",
    "@user #tag",
    "http://example.com/a?b=c&d=e",
    "<|endoftext|>",
    "<|endoftext|>Hello",
    "Hi<|endoftext|>",
    "<|endoftext",
    "<|",
    "|>",
    "<|endoftext|><|endoftext|>",
    " <|endoftext|>",
    "<|endoftext|> ",
    "<<|endoftext|>>",
    "<|endoftext|>'s",
    "endoftext",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "\u{10ffff}\u{e000}\u{fffd}",
    "\u{0}\u{1}\u{7f}",
    "\u{ad}soft\u{ad}hyphen",
];

/// [`FIXED`] as owned strings.
pub(super) fn fixed_corpus() -> Vec<String> {
    FIXED.iter().map(|s| s.to_string()).collect()
}

const WORDS: &str = "the of and model server token latency The Triton GPU inference throughput request naïve résumé über 日本 東京";
const PUNCT: &[u8] = b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
const SPACES: &[&str] = &[
    " ", " ", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n", "\u{a0}", "\u{3000}",
    "\u{2028}", "\u{85}", "\u{200b}", "\u{feff}", "\u{b}",
];
const CONTRACTIONS: &[&str] = &[
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'", "''", "n't", "'r", "'l",
];
const SPECIAL: &[&str] = &["<|endoftext|>", "<|endoftext", "<|", "|>", "endoftext"];
const CLUSTERS: &str = "👍🏽 👨‍👩‍👧 ❤️ 🇺🇸 e\u{301} क्षि नमस्ते مرحبا Ⅻ ① Ⓐ ½ ²";
const RANGES: &[(u32, u32)] = &[
    (0x4E00, 0x9FFF),
    (0x3040, 0x30FF),
    (0xAC00, 0xD7A3),
    (0x1F300, 0x1FAFF),
    (0x0300, 0x036F),
    (0x0600, 0x06FF),
    (0x0900, 0x097F),
    (0x0660, 0x0669),
    (0x0966, 0x096F),
    (0xFF10, 0xFF5A),
    (0x00C0, 0x024F),
    (0x0370, 0x03FF),
    (0x0400, 0x04FF),
    (0x0E00, 0x0E7F),
    (0x2000, 0x206F),
    (0x0, 0x10FFFF),
];

/// One of the space-separated atoms of `list`, drawn.
fn one_of<'a>(list: &'a str, rng: &mut StdRng) -> &'a str {
    let atoms: Vec<&str> = list.split(' ').collect();
    atoms[rng.random_range(0..atoms.len())]
}

/// Random text from atoms of every kind above, seeded.
pub(super) fn random_string(rng: &mut StdRng) -> String {
    let atoms = rng.random_range(1..40);
    let mut s = String::new();
    for _ in 0..atoms {
        match rng.random_range(0..12) {
            0 | 1 => {
                let n = rng.random_range(1..10);
                for _ in 0..n {
                    let base = if rng.random_bool(0.1) { b'A' } else { b'a' };
                    s.push((base + rng.random_range(0..26u8)) as char);
                }
            }
            2 => s.push_str(one_of(WORDS, rng)),
            3 => {
                for _ in 0..rng.random_range(1..7) {
                    s.push((b'0' + rng.random_range(0..10u8)) as char);
                }
            }
            4 => {
                for _ in 0..rng.random_range(1..4) {
                    s.push(PUNCT[rng.random_range(0..PUNCT.len())] as char);
                }
            }
            5 | 6 => s.push_str(SPACES[rng.random_range(0..SPACES.len())]),
            7 => s.push_str(CONTRACTIONS[rng.random_range(0..CONTRACTIONS.len())]),
            8 => s.push_str(SPECIAL[rng.random_range(0..SPECIAL.len())]),
            9 => s.push_str(one_of(CLUSTERS, rng)),
            _ => {
                let (lo, hi) = RANGES[rng.random_range(0..RANGES.len())];
                for _ in 0..rng.random_range(1..5) {
                    if let Some(c) = char::from_u32(rng.random_range(lo..=hi)) {
                        s.push(c);
                    }
                }
            }
        }
    }
    s
}

/// Long pre-tokens exercise the heap merge (more than `MAX_SCAN_MERGE` bytes).
pub(super) fn long_strings(rng: &mut StdRng) -> Vec<String> {
    let mut v = Vec::new();
    for len in [129, 200, 500, 2000] {
        v.push("a".repeat(len));
        v.push(" ".repeat(len) + "x");
        v.push("7".repeat(len));
        v.push("!?".repeat(len / 2));
        let word: String = (0..len)
            .map(|_| (b'a' + rng.random_range(0..26u8)) as char)
            .collect();
        v.push(format!("The {word} and {}", word.to_uppercase()));
        let cjk: String = (0..len / 3)
            .filter_map(|_| char::from_u32(rng.random_range(0x4E00..0x9FFF)))
            .collect();
        v.push(cjk);
    }
    v
}

/// The fixed corpus, seeded random strings (`TTFTBENCH_EQUIV_STRINGS`, default 4000) and long ones.
pub(super) fn corpus() -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(0x7474_6674);
    let mut v = fixed_corpus();
    // `TTFTBENCH_EQUIV_STRINGS=N` runs a bigger random corpus (e.g. in release).
    let n = std::env::var("TTFTBENCH_EQUIV_STRINGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    v.extend((0..n).map(|_| random_string(&mut rng)));
    v.extend(long_strings(&mut rng));
    v
}

/// The fast path and HF agree on ids for every string of the corpus; counts match the ids,
#[test]
fn builtin_gpt2_matches_known_ids() {
    let tk = Tokenizer::builtin_gpt2();
    assert!(tk.is_fast());
    assert_eq!(tk.encode("Hello world"), vec![15496, 995]);
    assert_eq!(tk.count(" the quick brown fox"), 4);
    assert_eq!(tk.decode(&[15496, 995]), "Hello world");
    assert_eq!(tk.count(""), 0);
    assert_eq!(tk.encode(""), Vec::<u32>::new());
}

/// HF extracts `<|endoftext|>` wherever it occurs, even with `add_special_tokens=false`.
#[test]
fn endoftext_is_one_token_like_hf() {
    let tk = Tokenizer::builtin_gpt2();
    for text in [
        "<|endoftext|>",
        "a<|endoftext|>b",
        " <|endoftext|> ",
        "<|endoftext|><|endoftext|>x",
    ] {
        assert_eq!(tk.encode(text), hf_ids(text), "{text:?}");
    }
    assert_eq!(tk.encode("<|endoftext|>"), vec![50256]);
    assert_eq!(tk.count("x<|endoftext|>y"), 3);
    assert_eq!(tk.decode(&[50256]), "<|endoftext|>");
}

/// Decoding odd id sequences (split multi-byte characters, unknown ids) matches HF's decoder.
#[test]
fn decode_matches_hf_on_odd_ids() {
    let tk = Tokenizer::builtin_gpt2();
    let hf = hf_reference();
    let emoji = tk.encode("😀 日本");
    let cases: Vec<Vec<u32>> = vec![
        emoji[..1].to_vec(),
        emoji[1..].to_vec(),
        vec![50256, 50257, 99999, u32::MAX, 0],
        vec![],
        (0..300).collect(),
        (50000..50257).collect(),
    ];
    for ids in cases {
        assert_eq!(tk.decode(&ids), hf.decode(&ids, false).unwrap(), "{ids:?}");
    }
}

/// Counting from several threads at once gives the same answers (each thread its own cache).
#[test]
fn counts_agree_across_threads() {
    let tk = Tokenizer::builtin_gpt2();
    let corpus: Vec<String> = fixed_corpus();
    let expected: Vec<usize> = corpus.iter().map(|t| tk.count(t)).collect();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..3 {
                    let got: Vec<usize> = corpus.iter().map(|t| tk.count(t)).collect();
                    assert_eq!(got, expected);
                }
            });
        }
    });
}
