//! Errors are types (DESIGN §2): no `Result<_, String>` in `src/`, so a caller can branch on
//! the cause and the message is built where the error is shown. This reads every `Result<`
//! outside comments (function signatures, closures, type aliases, fields, turbofish), splits
//! its generic arguments at top-level commas, and fails on each whose error type is `String`,
//! with its `file:line`. A use that must stay goes into [`ALLOWED`] with the reason.

use std::path::{Path, PathBuf};

/// `file:line` uses of `Result<_, String>` that are kept, each with why. None today.
const ALLOWED: &[(&str, &str)] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The text without `//` comments (doc comments included); lines keep their numbers.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The generic arguments of the `Result<` whose `<` ends at byte `open`, split at top-level
/// commas.
fn generic_args(code: &str, open: usize) -> Vec<String> {
    let mut depth = 1;
    let mut args = vec![String::new()];
    for c in code[open..].chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => {
                args.push(String::new());
                continue;
            }
            _ => {}
        }
        args.last_mut().unwrap().push(c);
    }
    args
}

/// Each `(line, text)` of `code` that uses `Result<_, String>`.
fn string_results(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("Result<") {
        let at = from + i;
        from = at + "Result<".len();
        let word_start = code[..at]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let args = generic_args(code, from);
        if word_start && args.len() == 2 && args[1].trim() == "String" {
            let line = code[..at].matches('\n').count() + 1;
            let text = code.lines().nth(line - 1).unwrap_or("").trim().to_string();
            out.push((line, text));
        }
    }
    out
}

#[test]
fn no_string_errors_in_src() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap().display().to_string();
        let code = without_comments(&std::fs::read_to_string(f).unwrap());
        for (line, text) in string_results(&code) {
            let at = format!("{rel}:{line}");
            if !ALLOWED.iter().any(|(a, _)| *a == at) {
                found.push(format!("  {at}: {text}\n"));
            }
        }
    }
    eprintln!("Result<_, String> in src: {}", found.len() + ALLOWED.len());
    assert!(
        found.is_empty(),
        "Result<_, String> in src (give the error a type: thiserror, the flag, the cause and the fix, and its exit code if it reaches main):\n{}",
        found.concat()
    );
}

/// The scanner sees signatures, closures, aliases and nested generics, and no comment.
#[test]
fn the_scanner_sees_what_it_must() {
    let code = without_comments(
        "fn a() -> Result<(u32, Vec<u8>), String> {}\n\
         // fn b() -> Result<u8, String>\n\
         let c = || -> Result<f64, String> { 1.0 };\n\
         type D = Pin<Box<dyn Future<Output = Result<Bytes, String>>>>;\n\
         fn e() -> Result<String, MyError> {}\n\
         fn f() -> io::Result<String> {}\n\
         fn g() -> MyResult<u8, String> {}\n",
    );
    let lines: Vec<usize> = string_results(&code).iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [1, 3, 4]);
}
