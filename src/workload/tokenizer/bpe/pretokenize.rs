//! GPT-2's split regex as a hand-written scanner: character classes (`\p{L}`, `\p{N}`, `\s`,
//! other) and the pre-tokens of a text.

use super::unicode::{LETTER, NUMBER};

/// The classes the split regex distinguishes: `\p{L}`, `\p{N}`, `\s`, and everything else.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Class {
    Letter,
    Number,
    Space,
    Other,
}

/// Classes of the ASCII characters, so the common case is one table load.
const ASCII_CLASS: [Class; 128] = {
    let mut t = [Class::Other; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = match b as u8 {
            b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
            b'0'..=b'9' => Class::Number,
            b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ' => Class::Space,
            _ => Class::Other,
        };
        b += 1;
    }
    t
};

/// Class of one character, as the regex crate (which HF's `fancy-regex` backend delegates
/// character classes to) defines `\p{L}`, `\p{N}` and `\s`.
///
/// `char::is_whitespace` is Unicode `White_Space`, exactly the regex crate's `\s`. There is no
/// `is_letter` in std, and `char::is_alphabetic` is the wider `Alphabetic` property (it includes
/// combining marks such as Devanagari vowel signs, which are `\p{M}`, and letter numbers such as
/// Roman numerals, which are `\p{N}`), while `char::is_numeric` follows std's newer Unicode version.
/// Hence the tables below, which the tests check against the regex engine for every code point.
#[inline]
pub(super) fn class_of(c: char) -> Class {
    let u = c as u32;
    if u < 128 {
        ASCII_CLASS[u as usize]
    } else if c.is_whitespace() {
        Class::Space
    } else if in_ranges(LETTER, u) {
        Class::Letter
    } else if in_ranges(NUMBER, u) {
        Class::Number
    } else {
        Class::Other
    }
}

/// Whether `u` lies in one of the inclusive ranges of `table` (flattened `start, end` pairs,
/// sorted, non-overlapping).
#[inline]
fn in_ranges(table: &[u32], u: u32) -> bool {
    let (pairs, _) = table.as_chunks::<2>();
    let i = pairs.partition_point(|p| p[1] < u);
    i < pairs.len() && pairs[i][0] <= u
}

// Pre-tokenizer: GPT-2's split regex as a hand-written scanner.

/// Decodes the character starting at byte `i` of valid UTF-8 `b`: (char, length in bytes).
#[inline]
fn char_at(b: &[u8], i: usize) -> (char, usize) {
    let x = b[i];
    if x < 0x80 {
        return (x as char, 1);
    }
    let (len, mut u) = if x < 0xE0 {
        (2, u32::from(x & 0x1F))
    } else if x < 0xF0 {
        (3, u32::from(x & 0x0F))
    } else {
        (4, u32::from(x & 0x07))
    };
    for &cont in &b[i + 1..i + len] {
        u = (u << 6) | u32::from(cont & 0x3F);
    }
    // Always valid: `b` comes from a `&str`.
    (
        char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER),
        len,
    )
}

/// End of the run of characters of class `class` starting at byte `j`.
#[inline]
fn run_end(b: &[u8], mut j: usize, class: Class) -> usize {
    while j < b.len() {
        let x = b[j];
        if x < 0x80 {
            if ASCII_CLASS[x as usize] != class {
                break;
            }
            j += 1;
        } else {
            let (c, len) = char_at(b, j);
            if class_of(c) != class {
                break;
            }
            j += len;
        }
    }
    j
}

/// End of the whitespace piece starting at `i`: `\s+(?!\S)|\s+`. A run that reaches the end of
/// the text is taken whole; a run followed by a non-space gives back its last character (which
/// then prefixes the next word if it is U+0020, or stands alone), unless it is one character long.
#[inline]
fn whitespace_end(b: &[u8], i: usize) -> usize {
    let mut j = i;
    let mut last = i;
    while j < b.len() {
        let (c, len) = char_at(b, j);
        if class_of(c) != Class::Space {
            break;
        }
        last = j;
        j += len;
    }
    if j == b.len() || last == i { j } else { last }
}

/// End of the pre-token starting at byte `i < b.len()`: the leftmost-first match of GPT-2's
/// regex, whose alternatives are tried in order: contractions, ` ?` + a run of one class, then
/// whitespace.
#[inline]
fn piece_end(b: &[u8], i: usize) -> usize {
    let x = b[i];
    if x == b'\'' {
        match (b.get(i + 1), b.get(i + 2)) {
            (Some(b's' | b't' | b'm' | b'd'), _) => return i + 2,
            (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => return i + 3,
            _ => {}
        }
    }
    // ` ?X+`: an optional U+0020 then a run of letters, numbers or other symbols.
    let start = if x == b' ' && i + 1 < b.len() {
        i + 1
    } else {
        i
    };
    let (c, _) = char_at(b, start);
    match class_of(c) {
        Class::Space => whitespace_end(b, i),
        class => run_end(b, start, class),
    }
}

/// The pre-tokens of a text, in order; together they cover the text exactly.
pub(super) struct Pieces<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Pieces<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Pieces { text, pos: 0 }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        if self.pos >= self.text.len() {
            return None;
        }
        let end = piece_end(self.text.as_bytes(), self.pos);
        // Piece ends are character boundaries by construction.
        let piece = &self.text[self.pos..end];
        self.pos = end;
        Some(piece)
    }
}
