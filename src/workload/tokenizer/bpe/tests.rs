//! The fast engine against Hugging Face's pipeline and the regex engine it uses: character
//! classes for every code point, pre-token boundaries, ids over the shared corpora, both merge
//! strategies, and the word cache's bound.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::cache::{CACHE_GENERATION, MergeWork, THREAD_STATE, cache_for};
use super::pretokenize::{Class, Pieces, class_of};
use crate::workload::tokenizer::tests::{corpus, hf_ids, hf_reference};
use crate::workload::tokenizer::{Backend, Tokenizer};

/// GPT-2's split regex exactly as HF's ByteLevel pre-tokenizer compiles it.
const GPT2_SPLIT: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

fn regex_pieces(re: &tokenizers::utils::SysRegex, text: &str) -> Vec<(usize, usize)> {
    re.find_iter(text).collect()
}

fn our_pieces(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    for p in Pieces::new(text) {
        out.push((pos, pos + p.len()));
        pos += p.len();
    }
    out
}

#[test]
fn unicode_tables_match_regex_engine() {
    let all: String = (0..=0x10FFFFu32).filter_map(char::from_u32).collect();
    for (pattern, class, name) in [
        (r"\p{L}+", Class::Letter, "LETTER"),
        (r"\p{N}+", Class::Number, "NUMBER"),
        (r"\s+", Class::Space, "SPACE"),
    ] {
        let re = tokenizers::utils::SysRegex::new(pattern).unwrap();
        let expected: Vec<(u32, u32)> = re
            .find_iter(&all)
            .map(|(a, b)| {
                let first = all[a..].chars().next().unwrap() as u32;
                let last = all[..b].chars().next_back().unwrap() as u32;
                (first, last)
            })
            .collect();
        let mut ours: Vec<(u32, u32)> = Vec::new();
        let mut prev_in = false;
        for c in all.chars() {
            let is = class_of(c) == class;
            match (is, prev_in) {
                (true, true) => ours.last_mut().unwrap().1 = c as u32,
                (true, false) => ours.push((c as u32, c as u32)),
                _ => {}
            }
            prev_in = is;
        }
        if std::env::var_os("TTFTBENCH_PRINT_UNICODE_TABLES").is_some() {
            let flat: Vec<String> = expected
                .iter()
                .filter(|r| r.1 >= 128)
                .map(|&(a, b)| format!("{:#x}, {b:#x},", a.max(128)))
                .collect();
            println!("const {name}: &[u32] = &[\n    {}\n];", flat.join(" "));
        }
        assert_eq!(
            ours, expected,
            "class {name} differs from the regex engine's {pattern}"
        );
    }
}

/// Every code point, between letters, digits, symbols, spaces and apostrophes: our scanner
/// splits exactly where GPT-2's regex does.
#[test]
fn pre_tokenizer_matches_regex_for_every_code_point() {
    let re = tokenizers::utils::SysRegex::new(GPT2_SPLIT).unwrap();
    let chars: Vec<char> = (0..=0x10FFFFu32).filter_map(char::from_u32).collect();
    // Release builds check every code point; unoptimized test builds every 7th (plus all of
    // ASCII and Latin-1), which still visits every Unicode block.
    let step = if cfg!(debug_assertions) { 7 } else { 1 };
    let picked: Vec<char> = chars
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < 256 || i % step == 0)
        .map(|(_, c)| *c)
        .collect();
    for chunk in picked.chunks(4096) {
        let mut s = String::new();
        for &c in chunk {
            for ctx in ["a", "1", "!", " ", "'"] {
                s.push_str(ctx);
                s.push(c);
                s.push_str(ctx);
            }
            s.push(c);
            s.push(' ');
        }
        let expected = regex_pieces(&re, &s);
        let ours = our_pieces(&s);
        if expected != ours {
            let i = expected
                .iter()
                .zip(&ours)
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "split differs at piece {i}: regex {:?} vs ours {:?}",
                expected.get(i).map(|&(a, b)| &s[a..b]),
                ours.get(i).map(|&(a, b)| &s[a..b])
            );
        }
    }
}

#[test]
fn fast_path_matches_hf_on_corpus() {
    let tk = Tokenizer::builtin_gpt2();
    let hf = hf_reference();
    let re = tokenizers::utils::SysRegex::new(GPT2_SPLIT).unwrap();
    let corpus = corpus();
    assert!(corpus.len() >= 4000);
    for text in &corpus {
        if !text.contains("<|endoftext|>") {
            assert_eq!(
                our_pieces(text),
                regex_pieces(&re, text),
                "pre-tokens of {text:?}"
            );
        }
        let expected = hf_ids(text);
        let ids = tk.encode(text);
        assert_eq!(ids, expected, "ids of {text:?}");
        assert_eq!(tk.count(text), expected.len(), "count of {text:?}");
        // Twice: the second pass is served from the word cache.
        assert_eq!(tk.encode(text), expected, "cached ids of {text:?}");
        assert_eq!(tk.decode(&ids), *text, "round trip of {text:?}");
        assert_eq!(
            tk.decode(&ids),
            hf.decode(&ids, false).unwrap(),
            "decode of {text:?}"
        );
    }
}

#[test]
fn scan_and_heap_merges_agree() {
    let tk = Tokenizer::builtin_gpt2();
    let Backend::Fast(bpe) = &tk.backend else {
        panic!("built-in is fast")
    };
    let mut rng = StdRng::seed_from_u64(7);
    let mut work = MergeWork::default();
    for _ in 0..2000 {
        let len = rng.random_range(2..200);
        let alphabet: &[u8] = if rng.random_bool(0.5) {
            b"etaoinshr"
        } else {
            b"abcdefghijklmnopqrstuvwxyz"
        };
        let mut piece: Vec<u8> = (0..len)
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect();
        if rng.random_bool(0.3) {
            piece.insert(0, b' ');
        }
        let init: Vec<u32> = piece.iter().map(|&b| bpe.byte_ids[b as usize]).collect();
        let mut a = init.clone();
        bpe.merge_scan(&mut a, &mut work.ranks);
        let mut b = init;
        bpe.merge_heap(&mut b, &mut work);
        assert_eq!(a, b, "{:?}", String::from_utf8_lossy(&piece));
    }
}

/// The word cache never holds more than two generations, however many distinct words pass.
#[test]
fn word_cache_is_bounded() {
    let tk = Tokenizer::builtin_gpt2();
    let Backend::Fast(bpe) = &tk.backend else {
        panic!("built-in is fast")
    };
    let mut text = String::new();
    for i in 0..(CACHE_GENERATION * 5) {
        text.push_str(&format!(" w{i:x}q"));
    }
    let expected = hf_ids(&text);
    assert_eq!(tk.count(&text), expected.len());
    // Again, from the caches: 20 480 distinct short words share the front's 1 024 slots, so
    // most lookups meet a slot holding another word and must not take its ids.
    assert_eq!(tk.encode(&text), expected);
    let size = THREAD_STATE.with(|s| {
        let mut s = s.borrow_mut();
        cache_for(&mut s.caches, bpe).len()
    });
    assert!(size <= 2 * CACHE_GENERATION, "cache holds {size} entries");
    assert!(size >= CACHE_GENERATION, "cache holds only {size} entries");
}
