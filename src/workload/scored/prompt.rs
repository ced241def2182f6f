//! What a question is sent as. Every question is a block ending in the answer cue:
//!
//! ```text
//! MMLU        {question}\nA. {choice}\nB. ...\nAnswer:
//! HellaSwag   {activity_label}: {ctx}\nA. {ending}\nB. ...\nAnswer:
//! GSM8K       Question: {question}\nAnswer:
//! ```
//!
//! A prompt is an optional system prompt, an optional header (MMLU: "The following are multiple
//! choice questions (with answers) about {subject}."), `k` worked examples (a block followed by
//! its solution: ` B`, or GSM8K's worked solution) and the question's block. The completions API
//! gets them as one text, parts separated by a blank line; the chat API as messages: the system
//! prompt, then each example as a user message (the header in front of the first) and the
//! assistant's solution, then the question as the last user message. Either way the question's
//! block ends the prompt after a blank line or as a message of its own, which is how the
//! simulator recognises it (`sim::answers`).

use super::{Benchmark, Item};
use crate::workload::conversation::history::{Message, Role};

/// A question with lettered options, and the answer cue.
pub fn choice_block(question: &str, options: &[String]) -> String {
    let letter = super::grade::letter;
    let lettered: String = options
        .iter()
        .enumerate()
        .map(|(i, o)| format!("\n{}. {}", letter(i as u8), o.trim()))
        .collect();
    format!("{}{lettered}\nAnswer:", question.trim_end())
}

/// A context to continue (HellaSwag), its possible endings lettered.
pub fn continuation_block(label: Option<&str>, ctx: &str, endings: &[String]) -> String {
    let lead = match label {
        Some(l) if !l.trim().is_empty() => format!("{}: {}", l.trim(), ctx.trim()),
        _ => ctx.trim().to_string(),
    };
    choice_block(&lead, endings)
}

/// A question answered in words and numbers (GSM8K).
pub fn question_block(question: &str) -> String {
    format!("Question: {}\nAnswer:", question.trim())
}

/// The line that introduces a benchmark's questions, if it has one.
pub fn header(b: Benchmark, subject: Option<&str>) -> Option<String> {
    match b {
        Benchmark::Mmlu => Some(match subject {
            Some(s) => format!(
                "The following are multiple choice questions (with answers) about {}.",
                s.replace('_', " ")
            ),
            None => "The following are multiple choice questions (with answers).".to_string(),
        }),
        Benchmark::Hellaswag => {
            Some("Choose the most plausible continuation of each context.".to_string())
        }
        Benchmark::Gsm8k => None,
    }
}

/// Up to `k` examples for a question of `subject`: those of the same subject first, in pool
/// order, then others.
pub fn shots_for<'a>(pool: &'a [Item], subject: Option<&str>, k: usize) -> Vec<&'a Item> {
    let same = |i: &Item| subject.is_some() && i.subject.as_deref() == subject;
    let mut out: Vec<&Item> = pool.iter().filter(|i| same(i)).take(k).collect();
    if out.len() < k {
        out.extend(pool.iter().filter(|i| !same(i)).take(k - out.len()));
    }
    out
}

/// What goes around a question.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// `--accuracy-system-prompt`.
    pub system: Option<&'a str>,
    /// The benchmark's header line.
    pub header: Option<&'a str>,
    /// The worked examples.
    pub shots: &'a [&'a Item],
}

/// The prompt as one text (completions).
pub fn text(f: &Frame, item: &Item) -> String {
    let mut parts: Vec<String> = Vec::with_capacity(f.shots.len() + 3);
    parts.extend(f.system.map(String::from));
    parts.extend(f.header.map(String::from));
    parts.extend(f.shots.iter().map(|s| format!("{}{}", s.block, s.solution)));
    parts.push(item.block.clone());
    parts.join("\n\n")
}

/// The prompt as chat messages.
pub fn messages(f: &Frame, item: &Item) -> Vec<Message> {
    let mut out = Vec::with_capacity(2 * f.shots.len() + 2);
    let msg = Message::new;
    if let Some(s) = f.system {
        out.push(msg(Role::System, s.to_string()));
    }
    let mut header = f.header.map(|h| format!("{h}\n\n"));
    for s in f.shots {
        let lead = header.take().unwrap_or_default();
        out.push(msg(Role::User, format!("{lead}{}", s.block)));
        out.push(msg(Role::Assistant, s.solution.trim().to_string()));
    }
    let lead = header.take().unwrap_or_default();
    out.push(msg(Role::User, format!("{lead}{}", item.block)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::scored::Expected;

    fn it(block: &str, solution: &str, subject: Option<&str>) -> Item {
        Item {
            subject: subject.map(String::from),
            block: block.into(),
            solution: solution.into(),
            expected: Expected::Choice { index: 0, of: 2 },
            at: "t:1".into(),
        }
    }

    #[test]
    fn few_shot_text_and_messages() {
        let pool = [
            it("Q1\nAnswer:", " A", Some("law")),
            it("Q2\nAnswer:", " B", Some("math")),
            it("Q3\nAnswer:", " A", Some("math")),
        ];
        let shots = shots_for(&pool, Some("math"), 2);
        assert_eq!(
            shots.iter().map(|s| s.block.as_str()).collect::<Vec<_>>(),
            ["Q2\nAnswer:", "Q3\nAnswer:"],
            "same subject first"
        );
        assert_eq!(shots_for(&pool, Some("math"), 3)[2].block, "Q1\nAnswer:");
        let h = header(Benchmark::Mmlu, Some("high_school_math")).unwrap();
        assert!(h.ends_with("about high school math."));
        let q = it("Q\nAnswer:", " B", Some("math"));
        let f = Frame {
            system: Some("Be brief."),
            header: Some(&h),
            shots: &shots,
        };
        assert_eq!(
            text(&f, &q),
            format!("Be brief.\n\n{h}\n\nQ2\nAnswer: B\n\nQ3\nAnswer: A\n\nQ\nAnswer:")
        );
        let m = messages(&f, &q);
        let roles: Vec<Role> = m.iter().map(|m| m.role).collect();
        let (s, u, a) = (Role::System, Role::User, Role::Assistant);
        assert_eq!(roles, [s, u, a, u, a, u]);
        assert_eq!(m[1].content, format!("{h}\n\nQ2\nAnswer:"));
        assert_eq!(m[2].content, "B");
        assert_eq!(
            m[5].content, "Q\nAnswer:",
            "the question is the last message"
        );
        // Zero shots: the header leads the question's own message.
        let f = Frame {
            system: None,
            header: Some(&h),
            shots: &[],
        };
        assert_eq!(messages(&f, &q)[0].content, format!("{h}\n\nQ\nAnswer:"));
    }
}
