//! Whether an answer is right: the graders of a scored workload, pure functions of the response
//! text and the row's expected answer.
//!
//! * `multiple_choice` — the chosen letter: the last `answer is (X)` / `answer: X`, else a letter
//!   the answer starts with (`B`, `B.`, `(B)`), else (flagged `unparsed`) the last letter of the
//!   choices' range standing alone. Compared with the expected choice's letter.
//! * `exact_match` — the answer's first non-empty line, trimmed, equal to the expected text
//!   (a choice's letter, a number as the dataset writes it, or the text), case-sensitive. The
//!   first line rather than the whole answer, so no stop sequence is needed.
//! * `numeric` — the number after the last `####`, else after the last `answer is`, else the last
//!   number in the answer; commas, `$` and a trailing `.` dropped; equal to the expected number
//!   numerically (`24` and `24.0` match). `unparsed` when there is no number at all.
//!
//! Letters, markers and numbers are ASCII; other text passes through untouched.

use super::Expected;

/// How responses are graded (its names declared once, in the order help texts list them).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
    clap::ValueEnum,
)]
#[strum(serialize_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Grader {
    /// The letter of the chosen option.
    #[value(help = "The letter of the chosen option (`answer is (B)`, `B.`, a lone `B`)")]
    MultipleChoice,
    /// The first line of the answer, equal to the expected text.
    #[value(help = "The answer's first line equals the expected text")]
    ExactMatch,
    /// The final number of the answer, equal to the expected number.
    #[value(help = "The answer's final number equals the expected number")]
    Numeric,
}

/// One graded response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grade {
    /// The answer is the expected one.
    pub correct: bool,
    /// No answer in the expected form was found (a fallback was used, or none matched).
    pub unparsed: bool,
}

crate::names::serde_by_name!(Grader);

impl Grader {
    /// Its name on the command line and in files.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Whether this grader can grade answers expected as `e` (multiple choice needs choices,
    /// numeric a number).
    pub fn accepts(self, e: &Expected) -> bool {
        match self {
            Grader::MultipleChoice => matches!(e, Expected::Choice { .. }),
            Grader::Numeric => match e {
                Expected::Number(_) => true,
                Expected::Text(t) => parse_number(t).is_some(),
                Expected::Choice { .. } => false,
            },
            Grader::ExactMatch => true,
        }
    }

    /// Grades `answer` (the response's text, reasoning left out) against `expected`.
    pub fn grade(self, answer: &str, expected: &Expected) -> Grade {
        match self {
            Grader::MultipleChoice => {
                let Expected::Choice { index, of } = *expected else {
                    return Grade::UNPARSED;
                };
                chosen_letter(answer, of).map_or(Grade::UNPARSED, |(i, unparsed)| Grade {
                    correct: i == index,
                    unparsed,
                })
            }
            Grader::ExactMatch => {
                let line = answer
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("");
                Grade {
                    correct: line == expected.text().trim(),
                    unparsed: line.is_empty(),
                }
            }
            Grader::Numeric => {
                let want = match expected {
                    Expected::Number(n) | Expected::Text(n) => parse_number(n),
                    Expected::Choice { .. } => None,
                };
                match (final_number(answer), want) {
                    (Some(got), Some(want)) => Grade {
                        correct: same_number(got, want),
                        unparsed: false,
                    },
                    _ => Grade::UNPARSED,
                }
            }
        }
    }
}

impl Grade {
    /// Wrong, and no answer found.
    pub const UNPARSED: Grade = Grade {
        correct: false,
        unparsed: true,
    };
}

/// The letter of choice `index` (`A` for 0).
pub fn letter(index: u8) -> char {
    char::from(b'A' + index.min(25))
}

/// The choice (0-based) an answer picks among `of` lettered options, and whether it was found
/// only by the fallback (a letter standing alone somewhere).
pub fn chosen_letter(answer: &str, of: u8) -> Option<(u8, bool)> {
    let in_range = |b: u8| b.is_ascii_uppercase() && b - b'A' < of;
    let bytes = answer.as_bytes();
    // 1. "answer is (X)", "answer: X", "Answer: (X)" — the last one said.
    let lower = answer.to_ascii_lowercase();
    let mut found = None;
    for (at, _) in lower.match_indices("answer") {
        let mut i = at + "answer".len();
        let rest = &lower[i..];
        if rest.starts_with(" is") {
            i += 3;
        } else if rest.starts_with(':') {
            i += 1;
        } else {
            continue;
        }
        while i < bytes.len() && matches!(bytes[i], b' ' | b'(' | b'*' | b'\t') {
            i += 1;
        }
        if i < bytes.len() && in_range(bytes[i]) && ends_word(bytes, i + 1) {
            found = Some(bytes[i] - b'A');
        }
    }
    if let Some(i) = found {
        return Some((i, false));
    }
    // 2. The answer starts with the letter: "B", "B.", "(B)", " **B**".
    let start = bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'(' | b'*' | b'['));
    if let Some(i) = start
        && in_range(bytes[i])
        && ends_word(bytes, i + 1)
    {
        return Some((bytes[i] - b'A', false));
    }
    // 3. The last letter of the range standing alone.
    (0..bytes.len())
        .rev()
        .find(|&i| {
            in_range(bytes[i]) && ends_word(bytes, i + 1) && (i == 0 || !word_byte(bytes[i - 1]))
        })
        .map(|i| (bytes[i] - b'A', true))
}

/// Whether the byte at `i` (if any) ends a word: the end, or not a letter or digit.
fn ends_word(bytes: &[u8], i: usize) -> bool {
    bytes.get(i).is_none_or(|&b| !word_byte(b))
}

fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The final number of an answer (see the module's notes), as written.
pub fn final_number(answer: &str) -> Option<f64> {
    if let Some(at) = answer.rfind("####")
        && let Some(n) = numbers(&answer[at + 4..]).next()
    {
        return Some(n);
    }
    let lower = answer.to_ascii_lowercase();
    if let Some(at) = lower.rfind("answer is")
        && let Some(n) = numbers(&answer[at + "answer is".len()..]).next()
    {
        return Some(n);
    }
    numbers(answer).last()
}

/// A number as a dataset writes one (`1,234`, `-3.5`, `$12`), or `None`.
pub fn parse_number(text: &str) -> Option<f64> {
    let t = text.trim().trim_start_matches('$').trim_end_matches('.');
    let mut all = numbers(t);
    let n = all.next()?;
    // The whole text is the number: nothing else but the separators numbers() skips.
    let digits_only = t
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b',' | b'.' | b'-' | b'+'));
    (digits_only && all.next().is_none()).then_some(n)
}

/// The numbers in `text`, in order: an optional `-`, digits with optional thousands commas, an
/// optional decimal part.
fn numbers(text: &str) -> impl Iterator<Item = f64> + '_ {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            if !b[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let negative = i > 0 && b[i - 1] == b'-';
            let mut s = String::new();
            while i < b.len() {
                let c = b[i];
                let comma = c == b',' && b.get(i + 1).is_some_and(u8::is_ascii_digit);
                let point =
                    c == b'.' && !s.contains('.') && b.get(i + 1).is_some_and(u8::is_ascii_digit);
                if c.is_ascii_digit() || point {
                    s.push(char::from(c));
                } else if !comma {
                    break;
                }
                i += 1;
            }
            if let Ok(v) = s.parse::<f64>() {
                return Some(if negative { -v } else { v });
            }
        }
        None
    })
}

/// Equal as numbers, to a millionth of their size.
fn same_number(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(index: u8) -> Expected {
        Expected::Choice { index, of: 4 }
    }

    #[test]
    fn multiple_choice_reads_the_letter() {
        let g = Grader::MultipleChoice;
        let right = Grade {
            correct: true,
            unparsed: false,
        };
        for answer in [
            "B",
            " B",
            "B.",
            "(B) because",
            "**B**",
            "The answer is (B).",
            "I think A at first. Answer: B",
            "answer is B",
        ] {
            assert_eq!(g.grade(answer, &choice(1)), right, "{answer:?}");
        }
        // The last explicit statement wins over an earlier one and over the first letter.
        assert_eq!(g.grade("A? The answer is (C)", &choice(2)), right);
        // A letter out of range, or inside a word, is not a choice.
        assert_eq!(chosen_letter("E", 4), None);
        assert_eq!(chosen_letter("Because", 4), None);
        // The fallback: a lone letter somewhere, flagged.
        assert_eq!(chosen_letter("so it must be D here", 4), Some((3, true)));
        assert_eq!(g.grade("no idea", &choice(0)), Grade::UNPARSED);
        assert_eq!(g.grade("A", &Expected::Number("3".into())), Grade::UNPARSED);
        assert_eq!(letter(3), 'D');
    }

    #[test]
    fn exact_match_compares_the_first_line() {
        let g = Grader::ExactMatch;
        let want = Expected::Text("Paris".into());
        assert!(g.grade("\n  Paris  \nmore text", &want).correct);
        assert!(!g.grade("paris", &want).correct, "case-sensitive");
        assert!(!g.grade("Paris, France", &want).correct);
        assert_eq!(g.grade("   \n", &want), Grade::UNPARSED);
        assert!(g.grade("C", &choice(2)).correct, "a choice's letter");
        assert!(g.grade("42", &Expected::Number("42".into())).correct);
    }

    #[test]
    fn numeric_takes_the_final_number() {
        let g = Grader::Numeric;
        let want = Expected::Number("1234".into());
        for answer in [
            "She has 1,234 apples.",
            "3 + 4 = 7 ... #### 1234",
            "The answer is $1,234.00.",
            "1234.0",
            "First 12, then 1234",
        ] {
            assert!(g.grade(answer, &want).correct, "{answer:?}");
        }
        assert!(!g.grade("#### 1233", &want).correct);
        // `####` wins over a later number; "answer is" over an earlier one.
        assert!(g.grade("#### 1234 (checked 3 times)", &want).correct);
        assert!(g.grade("answer is 1234, not 5", &want).correct);
        assert_eq!(g.grade("none", &want), Grade::UNPARSED);
        assert!(g.grade("-5", &Expected::Number("-5".into())).correct);
        assert_eq!(parse_number(" 1,000 "), Some(1000.0));
        assert_eq!(parse_number("$3.50."), Some(3.5));
        assert_eq!(parse_number("3 apples"), None);
        assert!(Grader::Numeric.accepts(&Expected::Text("12".into())));
        assert!(!Grader::Numeric.accepts(&Expected::Text("twelve".into())));
        assert!(!Grader::MultipleChoice.accepts(&Expected::Number("1".into())));
    }

    #[test]
    fn names_round_trip() {
        crate::names::assert_serde_round_trip::<Grader>();
        crate::names::assert_serde_round_trip::<super::super::Benchmark>();
        let names = [Grader::MultipleChoice, Grader::ExactMatch].map(Grader::name);
        assert_eq!(names, ["multiple_choice", "exact_match"]);
        assert_eq!(super::super::Benchmark::Gsm8k.name(), "gsm8k");
        assert!("math".parse::<Grader>().is_err());
    }
}
