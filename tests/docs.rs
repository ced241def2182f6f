//! The README and the user guide (docs/) run. Every fenced block that holds `ttftbench`
//! commands carries a marker (the syntax: docs/contributing.md):
//!
//! * `run` blocks are executed by bash in a fresh directory, with the test-built binary first on
//!   `PATH`, against `ttftbench serve` children on free ports (`localhost:8000`, `:8001` and
//!   `:8002` in the commands are pointed at them); the output a transcript shows under each
//!   `$ command` is compared with what the command printed: numbers masked, words, columns and
//!   line order exact, `...` standing for lines left out.
//! * `check` blocks (a real Triton, hours of load, a cluster) are parsed by the CLI itself, so a
//!   renamed or removed flag fails here too.
//!
//! Beside them: each subcommand's `--help` and its page in docs/reference/ list the same flags
//! under the same headings, with the same examples; the seeds' command lines are shown in the
//! guide; links and anchors between the pages resolve; the README stays under 350 lines.
//!
//! `TTFTBENCH_DOCS_ONLY=perf` runs only the `run` blocks of files whose path contains `perf`;
//! `TTFTBENCH_DOCS_JOBS=N` runs N sessions at a time (default 3: sessions mostly wait on the
//! simulator); `TTFTBENCH_DOCS_VERBOSE=1` prints each block's and session's time.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser};
use common::{ServeChild, bin, path_with_bin};
use ttftbench::cli::Cli;

/// The repository root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// Reading the pages
// ---------------------------------------------------------------------------------------------

/// One Markdown file: its path relative to the repository and its lines.
struct Doc {
    path: String,
    lines: Vec<String>,
}

/// README.md and every `.md` file under docs/, in path order.
fn docs() -> Vec<Doc> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let mut paths = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            Doc {
                path: p
                    .strip_prefix(root())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                lines: text.lines().map(str::to_string).collect(),
            }
        })
        .collect()
}

/// What a block's marker asks for.
#[derive(Clone, Debug, PartialEq)]
enum Mode {
    /// Execute the commands; compare shown output.
    Run,
    /// Parse the `ttftbench` commands with the CLI only, for the reason given.
    Check(String),
    /// Write the block's text to this file of the session's directory before it runs.
    File(String),
    /// The shown output of the `run` script block just above.
    Output,
}

/// `<!-- doc-test: MODE [key=value ...] -->` on the line before a fence.
#[derive(Clone, Debug)]
struct Marker {
    mode: Mode,
    session: Option<String>,
    serve: Option<String>,
    subs: Vec<(String, String)>,
    timeout: Option<u64>,
}

/// A fenced code block.
#[derive(Clone, Debug)]
struct Block {
    doc: String,
    /// 1-based line of the opening fence.
    line: usize,
    lang: String,
    /// (1-based line, text) of each line inside the fence.
    body: Vec<(usize, String)>,
    marker: Option<Marker>,
}

impl Block {
    fn at(&self, line: usize) -> String {
        format!("{}:{}", self.doc, line)
    }
}

/// Words of a marker: spaces separate, `key="a b"` keeps its quoted spaces.
fn marker_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// The marker in `line`, if it is one; an error names what is wrong with it.
fn parse_marker(line: &str) -> Option<Result<Marker, String>> {
    let inner = line
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim()
        .strip_prefix("doc-test:")?
        .trim();
    let words = marker_words(inner);
    let Some((mode, rest)) = words.split_first() else {
        return Some(Err(
            "a doc-test marker needs a mode: run, check, file or output".into(),
        ));
    };
    let mut m = Marker {
        mode: Mode::Run,
        session: None,
        serve: None,
        subs: Vec::new(),
        timeout: None,
    };
    let mut keys = rest;
    match mode.as_str() {
        "run" => {}
        "output" => m.mode = Mode::Output,
        "check" => {
            let reason = rest.join(" ");
            if reason.trim().is_empty() {
                return Some(Err(
                    "`check` needs a reason: why the block cannot run here".into()
                ));
            }
            return Some(Ok(Marker {
                mode: Mode::Check(reason),
                ..m
            }));
        }
        "file" => {
            let Some((name, more)) = rest.split_first() else {
                return Some(Err("`file` needs the file's name".into()));
            };
            m.mode = Mode::File(name.clone());
            keys = more;
        }
        other => {
            return Some(Err(format!(
                "unknown doc-test mode `{other}`: run, check, file or output"
            )));
        }
    }
    for kv in keys {
        let Some((k, v)) = kv.split_once('=') else {
            return Some(Err(format!("`{kv}`: expected key=value")));
        };
        match k {
            "session" => m.session = Some(v.to_string()),
            "serve" => m.serve = Some(v.to_string()),
            "timeout" => match v.parse() {
                Ok(t) => m.timeout = Some(t),
                Err(_) => return Some(Err(format!("timeout={v}: seconds expected"))),
            },
            "sub" => {
                let Some((a, b)) = v.split_once("=>") else {
                    return Some(Err(format!("sub=\"{v}\": expected \"SHOWN => RUN\"")));
                };
                let (a, b) = (a.trim().to_string(), b.trim().to_string());
                let flags = |s: &str| -> Vec<String> {
                    s.split_whitespace()
                        .filter(|w| {
                            w.starts_with('-')
                                && w.len() > 1
                                && !w[1..].starts_with(|c: char| c.is_ascii_digit())
                        })
                        .map(str::to_string)
                        .collect()
                };
                if flags(&a) != flags(&b) {
                    return Some(Err(format!(
                        "sub=\"{v}\": a substitution may change values, never flags ({:?} vs {:?})",
                        flags(&a),
                        flags(&b)
                    )));
                }
                m.subs.push((a, b));
            }
            other => return Some(Err(format!("unknown doc-test key `{other}`"))),
        }
    }
    Some(Ok(m))
}

/// The fence a line opens (three or more backticks or tildes), if it opens one.
fn fence_of(t: &str) -> Option<String> {
    let c = t.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = t.chars().take_while(|&x| x == c).count();
    (n >= 3).then(|| c.to_string().repeat(n))
}

/// Whether `line` closes a block opened with `fence`: at least as many of its characters, alone.
fn closes(line: &str, fence: &str) -> bool {
    let t = line.trim();
    let c = fence.chars().next().unwrap();
    !t.is_empty() && t.chars().all(|x| x == c) && t.len() >= fence.len()
}

/// For each line, whether it is prose: outside fenced blocks and not a fence itself.
fn prose(lines: &[String]) -> Vec<bool> {
    let mut out = Vec::with_capacity(lines.len());
    let mut open: Option<String> = None;
    for l in lines {
        match &open {
            Some(f) => {
                if closes(l, f) {
                    open = None;
                }
                out.push(false);
            }
            None => match fence_of(l.trim_start()) {
                Some(f) => {
                    open = Some(f);
                    out.push(false);
                }
                None => out.push(true),
            },
        }
    }
    out
}

/// Every fenced block of `doc` with its marker; marker errors are collected into `errors`.
fn blocks(doc: &Doc, errors: &mut Vec<String>) -> Vec<Block> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < doc.lines.len() {
        let line = &doc.lines[i];
        let t = line.trim_start();
        let Some(fence) = fence_of(t) else {
            i += 1;
            continue;
        };
        let lang = t[fence.len()..].trim().to_string();
        let mut marker = None;
        // The marker is the last non-blank line before the fence.
        let mut k = i;
        while k > 0 && doc.lines[k - 1].trim().is_empty() {
            k -= 1;
        }
        if k > 0 {
            match parse_marker(&doc.lines[k - 1]) {
                Some(Ok(m)) => marker = Some(m),
                Some(Err(e)) => errors.push(format!("{}:{}: {e}", doc.path, k)),
                None => {}
            }
        }
        let mut body = Vec::new();
        let mut j = i + 1;
        while j < doc.lines.len() && !closes(&doc.lines[j], &fence) {
            body.push((j + 1, doc.lines[j].clone()));
            j += 1;
        }
        out.push(Block {
            doc: doc.path.clone(),
            line: i + 1,
            lang,
            body,
            marker,
        });
        i = j + 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Commands in a block
// ---------------------------------------------------------------------------------------------

/// One command of a block and the output shown under it.
#[derive(Clone, Debug)]
struct Cmd {
    /// 1-based line of the command's first line.
    line: usize,
    /// The shell text, continuation lines included (prompts stripped).
    text: String,
    /// (line, text) of the output shown under it.
    shown: Vec<(usize, String)>,
}

/// Whether the block is a transcript: some line starts with the `$ ` prompt.
fn is_transcript(b: &Block) -> bool {
    b.body.iter().any(|(_, l)| l.starts_with("$ ") || l == "$")
}

/// The heredoc terminator a line opens (`<<'EOF'`, `<<EOF`, `<<"EOF"`, `<<-EOF`), if any.
fn heredoc(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = line[at + 2..].trim_start_matches('-').trim_start();
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// Whether shell text ends inside a quoted string (the command goes on on the next line).
fn unclosed_quote(text: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        let at_word_start = prev.is_whitespace();
        prev = c;
        match (quote, c) {
            (None, '\\') | (Some('"'), '\\') => {
                chars.next();
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if at_word_start => {
                // A comment runs to the end of its line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        prev = c;
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    quote.is_some()
}

/// The commands of a transcript block: `$ ` starts one; a line ending in `\`, a `> ` line after
/// it, or an open heredoc continues it; any other line is output shown under it.
fn transcript(b: &Block) -> Result<Vec<Cmd>, String> {
    let mut cmds: Vec<Cmd> = Vec::new();
    let mut it = b.body.iter().peekable();
    while let Some((n, line)) = it.next() {
        if let Some(rest) = line.strip_prefix("$ ").or((line == "$").then_some("")) {
            let mut text = rest.to_string();
            let mut open = heredoc(rest);
            loop {
                let cont = text.ends_with('\\') || open.is_some() || unclosed_quote(&text);
                match it.peek() {
                    Some((_, next)) if open.is_some() => {
                        text.push('\n');
                        text.push_str(next);
                        if next.trim() == open.as_deref().unwrap() {
                            open = None;
                        }
                        it.next();
                    }
                    Some((_, next)) if cont => {
                        text.push('\n');
                        text.push_str(next);
                        open = heredoc(next);
                        it.next();
                    }
                    Some((_, next)) if next.starts_with("> ") || next == ">" => {
                        text.push('\n');
                        text.push_str(next.strip_prefix("> ").unwrap_or(""));
                        open = heredoc(next);
                        it.next();
                    }
                    _ => break,
                }
            }
            cmds.push(Cmd {
                line: *n,
                text,
                shown: Vec::new(),
            });
        } else {
            match cmds.last_mut() {
                Some(c) => c.shown.push((*n, line.clone())),
                None if line.trim().is_empty() => {}
                None => return Err(format!("{}: output before any `$ ` command", b.at(*n))),
            }
        }
    }
    Ok(cmds)
}

/// A shell word or operator, as far as finding `ttftbench` invocations needs.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    /// `|`, `||`, `&&`, `;`, `&`, `(`, `)`, a newline, `<(`, `$(`.
    Sep,
    /// `>`, `>>`, `<`, `2>`, `2>&1`, `&>`: the next word is a file, not an argument.
    Redirect,
}

/// Splits shell text into words (quotes removed, variables and command substitutions replaced
/// by `1`, which parses wherever a number or a name is expected) and separators. Comments are
/// dropped.
fn shell_tokens(text: &str) -> Vec<Tok> {
    let text = text.replace("\\\n", " ");
    let cs: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let mut deferred = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut i = 0;
    let flush = |cur: &mut String, in_word: &mut bool, toks: &mut Vec<Tok>| {
        if *in_word {
            toks.push(Tok::Word(std::mem::take(cur)));
            *in_word = false;
        }
    };
    // Skips a balanced `(...)` starting at cs[i] == '('; returns the index after it.
    let skip_parens = |mut i: usize| -> usize {
        let mut depth = 0;
        while i < cs.len() {
            match cs[i] {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        i
    };
    while i < cs.len() {
        let c = cs[i];
        match c {
            '\'' => {
                in_word = true;
                i += 1;
                while i < cs.len() && cs[i] != '\'' {
                    cur.push(cs[i]);
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < cs.len() && cs[i] != '"' {
                    if cs[i] == '\\' && i + 1 < cs.len() {
                        i += 1;
                        cur.push(cs[i]);
                    } else if cs[i] == '$' {
                        cur.push('1');
                        i = skip_var(&cs, i) - 1;
                    } else {
                        cur.push(cs[i]);
                    }
                    i += 1;
                }
                i += 1;
            }
            '\\' if i + 1 < cs.len() => {
                in_word = true;
                cur.push(cs[i + 1]);
                i += 2;
            }
            '$' if cs.get(i + 1) == Some(&'(') => {
                // A command substitution: its inside is tokenized as a command of its own, and
                // the word gets `1`.
                let end = skip_parens(i + 1);
                let inner: String = cs[i + 2..end.saturating_sub(1).max(i + 2)].iter().collect();
                in_word = true;
                cur.push('1');
                // Kept aside: only a `ttftbench` inside matters; appended after everything.
                deferred.push(Tok::Sep);
                deferred.extend(shell_tokens(&inner));
                i = end;
            }
            '$' => {
                in_word = true;
                cur.push('1');
                i = skip_var(&cs, i);
            }
            '#' if !in_word => {
                while i < cs.len() && cs[i] != '\n' {
                    i += 1;
                }
            }
            ' ' | '\t' => {
                flush(&mut cur, &mut in_word, &mut toks);
                i += 1;
            }
            '\n' | ';' | '|' | '(' | ')' => {
                flush(&mut cur, &mut in_word, &mut toks);
                toks.push(Tok::Sep);
                i += 1;
            }
            '&' => {
                flush(&mut cur, &mut in_word, &mut toks);
                if cs.get(i + 1) == Some(&'>') {
                    toks.push(Tok::Redirect);
                    i += 2;
                } else {
                    toks.push(Tok::Sep);
                    i += 1;
                }
            }
            '<' if cs.get(i + 1) == Some(&'(') => {
                flush(&mut cur, &mut in_word, &mut toks);
                toks.push(Tok::Sep);
                i += 2;
            }
            '>' | '<' => {
                let fd_redirect = in_word && cur.chars().all(|c| c.is_ascii_digit());
                if fd_redirect {
                    cur.clear();
                    in_word = false;
                } else {
                    flush(&mut cur, &mut in_word, &mut toks);
                }
                i += 1;
                while i < cs.len() && matches!(cs[i], '>' | '<') {
                    i += 1;
                }
                if cs.get(i) == Some(&'&') {
                    // `2>&1`: no file word follows.
                    i += 1;
                    while i < cs.len() && cs[i].is_ascii_digit() {
                        i += 1;
                    }
                    toks.push(Tok::Sep);
                } else {
                    toks.push(Tok::Redirect);
                }
            }
            c => {
                in_word = true;
                cur.push(c);
                i += 1;
            }
        }
    }
    flush(&mut cur, &mut in_word, &mut toks);
    toks.push(Tok::Sep);
    toks.extend(deferred);
    toks
}

/// The index after a `$NAME`, `${...}`, `$((...))` or `$?` starting at cs[i] == '$'.
fn skip_var(cs: &[char], mut i: usize) -> usize {
    i += 1;
    match cs.get(i) {
        Some('{') => {
            while i < cs.len() && cs[i] != '}' {
                i += 1;
            }
            i + 1
        }
        Some('(') => {
            let mut depth = 0;
            while i < cs.len() {
                match cs[i] {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            i
        }
        Some(c) if c.is_ascii_alphabetic() || *c == '_' => {
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            i
        }
        Some(_) => i + 1,
        None => i,
    }
}

/// Every `ttftbench` invocation in shell text (also `cargo run [--release] -- ARGS`), as its
/// arguments.
fn invocations(text: &str) -> Vec<Vec<String>> {
    let toks = shell_tokens(text);
    let mut out = Vec::new();
    let mut at_start = true;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Sep => {
                at_start = true;
                i += 1;
            }
            Tok::Redirect => {
                i += 2;
            }
            Tok::Word(w)
                if at_start
                    && matches!(
                        w.as_str(),
                        "do" | "then" | "else" | "time" | "exec" | "!" | "{"
                    ) =>
            {
                i += 1;
            }
            Tok::Word(w) if at_start && (w == "ttftbench" || w == "cargo") => {
                let cargo = w == "cargo";
                let mut args = Vec::new();
                i += 1;
                while i < toks.len() {
                    match &toks[i] {
                        Tok::Word(a) => args.push(a.clone()),
                        Tok::Redirect => i += 1,
                        Tok::Sep => break,
                    }
                    i += 1;
                }
                if cargo {
                    if args.first().is_some_and(|a| a == "run")
                        && let Some(dd) = args.iter().position(|a| a == "--")
                    {
                        out.push(args[dd + 1..].to_vec());
                    }
                } else {
                    out.push(args);
                }
                at_start = false;
            }
            Tok::Word(w) => {
                // `VAR=value cmd`: still at the start.
                at_start = at_start && w.contains('=') && !w.starts_with('-');
                i += 1;
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Masking and matching output
// ---------------------------------------------------------------------------------------------

/// A line as compared: numbers (with their sign) become `#`, run ids `<run>`, the client
/// machine a run line names (host, system, CPU: whichever machine runs the test) `<client>`,
/// whitespace runs one space, a word of dashes `---`.
fn mask(line: &str) -> String {
    let client = line
        .find(", client ")
        .filter(|_| line.starts_with("run ") && line.ends_with(')'));
    let line = match client {
        Some(at) => format!("{}, client <client>", &line[..at]),
        None => line.to_string(),
    };
    let cs: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < cs.len() {
        // A run id: 20261202T025206Z-29ffa8.
        if i + 23 <= cs.len()
            && cs[i..i + 8].iter().all(char::is_ascii_digit)
            && cs[i + 8] == 'T'
            && cs[i + 9..i + 15].iter().all(char::is_ascii_digit)
            && cs[i + 15] == 'Z'
            && cs[i + 16] == '-'
            && cs[i + 17..i + 23].iter().all(|c| c.is_ascii_hexdigit())
        {
            out.push_str("<run>");
            i += 23;
            continue;
        }
        let c = cs[i];
        let prev_alnum = i > 0 && (cs[i - 1].is_alphanumeric() || cs[i - 1] == '_');
        let signed = (c == '+' || c == '-')
            && !prev_alnum
            && cs.get(i + 1).is_some_and(char::is_ascii_digit);
        if c.is_ascii_digit() || signed {
            i += 1;
            while i < cs.len()
                && (cs[i].is_ascii_digit()
                    || (cs[i] == '.' && cs.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            // 1e-05
            if i + 1 < cs.len()
                && cs[i] == 'e'
                && (cs[i + 1] == '-' || cs[i + 1] == '+' || cs[i + 1].is_ascii_digit())
                && !cs.get(i + 1).is_some_and(|c| c.is_alphabetic())
            {
                let mut k = i + 1;
                if cs[k] == '-' || cs[k] == '+' {
                    k += 1;
                }
                if cs.get(k).is_some_and(char::is_ascii_digit) {
                    i = k;
                    while i < cs.len() && cs[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            out.push('#');
            continue;
        }
        out.push(c);
        i += 1;
    }
    out.split_whitespace()
        .map(|w| {
            if w.len() >= 3 && w.chars().all(|c| c == '-') {
                "---"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One shown line as a pattern.
#[derive(Debug, Clone, PartialEq)]
enum Pat {
    /// `...` alone: any number of lines.
    Any,
    /// `text ...`: a line that starts with `text`.
    Prefix(String),
    /// The whole line.
    Exact(String),
}

fn pattern(line: &str) -> Pat {
    let t = line.trim();
    if t == "..." || t == "…" {
        return Pat::Any;
    }
    if let Some(p) = t.strip_suffix("...").or_else(|| t.strip_suffix('…')) {
        return Pat::Prefix(mask(p));
    }
    Pat::Exact(mask(t))
}

fn pat_matches(p: &Pat, line: &str) -> bool {
    match p {
        Pat::Any => true,
        Pat::Prefix(s) => line.starts_with(s.as_str()),
        Pat::Exact(s) => line == s,
    }
}

/// Lines the live view draws in place on a terminal and prints every 5 s on a pipe
/// (`level 2/6 concurrency4 at 5.0 s: ...`; a search, whose number of probes is not known in
/// advance, `level 2 concurrency2 at 5.0 s: ...`): what a reader never keeps in the scrollback.
fn is_live_line(line: &str) -> bool {
    let mut w = line.split_whitespace();
    if w.next() != Some("level") {
        return false;
    }
    let Some(n) = w.next() else { return false };
    let (a, b) = n.split_once('/').unwrap_or((n, "1"));
    if a.parse::<u32>().is_err() || b.parse::<u32>().is_err() {
        return false;
    }
    let head = line.split(": ").next().unwrap_or("");
    head.contains(" at ") && !head.contains(" done in ") && !head.contains(" interrupted after ")
}

/// Verdict lines that say the machine running the docs was busy (the client's event loop stalled,
/// its CPU saturated, its collector fell behind): true of the run, not of the command, so they
/// are left out on both sides.
fn is_machine_line(line: &str) -> bool {
    line.starts_with("NOT TRUSTWORTHY")
        && (line.contains("event loop stalled")
            || line.contains("the load generator used")
            || line.contains("waited for the collector"))
}

/// Compares shown lines with printed ones. `Ok` when they match; else the index of the first
/// shown line that could not be matched and the index of the printed line where matching stood.
fn compare(shown: &[Pat], printed: &[String]) -> Result<(), (usize, usize)> {
    let (n, m) = (shown.len(), printed.len());
    // reach[i][j]: shown[..i] matches printed[..j].
    let mut reach = vec![vec![false; m + 1]; n + 1];
    reach[0][0] = true;
    for i in 0..n {
        for j in 0..=m {
            if !reach[i][j] {
                continue;
            }
            match &shown[i] {
                Pat::Any => {
                    for r in reach[i + 1].iter_mut().skip(j) {
                        *r = true;
                    }
                }
                p => {
                    if j < m && pat_matches(p, &printed[j]) {
                        reach[i + 1][j + 1] = true;
                    }
                }
            }
        }
    }
    if reach[n][m] {
        return Ok(());
    }
    // The longest prefix of the shown lines that matched some prefix of the printed ones.
    for i in (0..=n).rev() {
        if let Some(j) = (0..=m).rev().find(|&j| reach[i][j]) {
            return Err((i, j));
        }
    }
    Err((0, 0))
}

// ---------------------------------------------------------------------------------------------
// Running sessions
// ---------------------------------------------------------------------------------------------

/// The blocks of one session, in document order: `run` blocks and the `file` blocks they need.
struct Session {
    name: String,
    blocks: Vec<Block>,
}

/// The `run` and `file` blocks of the docs grouped into sessions: blocks that name the same
/// session share a directory and a simulator, in the order of the files' paths and then of their
/// lines (a session may go on over several pages); an unnamed `run` block is a session of its
/// own. The `output` block that follows a `run` script block is attached to it.
fn sessions(all: &[Block]) -> Vec<Session> {
    let mut named: BTreeMap<String, Vec<Block>> = BTreeMap::new();
    let mut out = Vec::new();
    for (k, b) in all.iter().enumerate() {
        let Some(m) = &b.marker else { continue };
        match &m.mode {
            Mode::Run | Mode::File(_) => {
                let mut b = b.clone();
                if let Some(next) = all.get(k + 1)
                    && next.doc == b.doc
                    && next.marker.as_ref().is_some_and(|m| m.mode == Mode::Output)
                {
                    // The output block becomes the shown output of the script.
                    b.body.push((0, "\u{1}output".into()));
                    b.body.extend(next.body.iter().cloned());
                }
                match &m.session {
                    Some(s) => named.entry(s.clone()).or_default().push(b),
                    None if m.mode == Mode::Run => out.push(Session {
                        name: format!("{}:{}", b.doc, b.line),
                        blocks: vec![b],
                    }),
                    None => {}
                }
            }
            _ => {}
        }
    }
    for (s, blocks) in named {
        out.push(Session {
            name: format!("session {s} ({})", blocks[0].doc),
            blocks,
        });
    }
    out
}

/// What a session ran: commands, shown outputs checked, failures.
#[derive(Default)]
struct Tally {
    commands: usize,
    outputs: usize,
    failures: Vec<String>,
    skipped: Vec<String>,
}

/// The live simulator of a session and how to point the docs' ports at it.
struct Sim {
    _child: ServeChild,
    ports: [(String, String); 3],
    banner: String,
}

impl Sim {
    fn start(flags: &str) -> Result<Sim, String> {
        let extra: Vec<String> = flags.split_whitespace().map(str::to_string).collect();
        let child = ServeChild::start(&extra)?;
        let port = |a: &str| a.rsplit(':').next().unwrap_or_default().to_string();
        let ports = [
            ("8000".to_string(), port(&child.http)),
            ("8001".to_string(), port(&child.grpc)),
            ("8002".to_string(), port(&child.metrics)),
        ];
        Ok(Sim {
            banner: child.banner.clone(),
            _child: child,
            ports,
        })
    }

    /// `localhost:8000` (and `127.0.0.1:8000`) → the simulator's port, for each of the three.
    fn point(&self, text: &str) -> String {
        let mut t = text.to_string();
        for (from, to) in &self.ports {
            for host in ["localhost:", "127.0.0.1:"] {
                t = t.replace(&format!("{host}{from}"), &format!("{host}{to}"));
            }
        }
        t
    }
}

/// Whether `text` names one of Triton's ports the simulator stands in for (`localhost:8000`,
/// `:8001`, `:8002`, or with `127.0.0.1`).
fn names_sim_port(text: &str) -> bool {
    ["localhost:800", "127.0.0.1:800"]
        .iter()
        .any(|h| text.contains(h))
}

/// Whether a command stops the backgrounded server (`kill %1`, `kill %%`, `kill $!`): the
/// session's simulator is stopped instead.
fn kill_line(text: &str) -> bool {
    let t = text.trim();
    t.strip_prefix("kill ")
        .is_some_and(|j| j.starts_with('%') || j == "$!")
}

/// The flags of a `ttftbench serve ... &` command line, if it is one.
fn serve_line(text: &str) -> Option<String> {
    let t = text.trim();
    let rest = t.strip_prefix("ttftbench serve")?;
    let rest = rest.trim_end().strip_suffix('&')?;
    Some(rest.replace("\\\n", " ").trim().to_string())
}

/// Tools the docs' commands use besides ttftbench; a block needing a missing one is skipped.
fn missing_tools(text: &str) -> Vec<&'static str> {
    ["jq", "column", "curl", "python3", "xmllint"]
        .into_iter()
        .filter(|t| {
            text.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == *t)
                && std::process::Command::new("sh")
                    .args(["-c", &format!("command -v {t}")])
                    .output()
                    .map(|o| !o.status.success())
                    .unwrap_or(true)
        })
        .collect()
}

/// Runs `script` with bash in `dir` (stdout and stderr together, as a terminal shows them),
/// killing its process group after `timeout`; returns what it printed and whether it timed out.
fn bash(script: &str, dir: &Path, timeout: Duration) -> (String, bool) {
    use std::os::unix::process::CommandExt;
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("block.sh");
    std::fs::write(&file, format!("exec 2>&1\n{script}")).unwrap();
    let mut child = std::process::Command::new("bash")
        .arg(&file)
        .current_dir(dir)
        .env("PATH", path_with_bin())
        .env("NO_COLOR", "1")
        .env("LC_ALL", "C.UTF-8")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("bash runs");
    let pid = child.id() as i32;
    let done = Arc::new(AtomicBool::new(false));
    let timed_out = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (done, timed_out) = (done.clone(), timed_out.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            while !done.load(Ordering::Relaxed) {
                if start.elapsed() > timeout {
                    timed_out.store(true, Ordering::Relaxed);
                    // SAFETY: signals the process group this test started.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let _ = child.wait();
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    // Background jobs the block left running (none should) go with the group.
    // SAFETY: as above.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    (
        String::from_utf8_lossy(&out).into_owned(),
        timed_out.load(Ordering::Relaxed),
    )
}

/// The separator printed after each command: `\x1e<exit code>\x1e`.
const SEP: char = '\u{1e}';

/// Runs one session: its files, its simulator, its blocks in order.
fn run_session(s: &Session, tally: &mut Tally) {
    let dir = tempfile::tempdir().unwrap();
    let mut sim: Option<Sim> = None;
    // The simulator flags a block asked for; started when a command first needs it.
    for b in &s.blocks {
        let m = b.marker.as_ref().unwrap();
        if let Mode::File(name) = &m.mode {
            let text: Vec<&str> = b.body.iter().map(|(_, l)| l.as_str()).collect();
            let mut text = text.join("\n");
            text.push('\n');
            // A file that names the simulator's ports (a script run later) is written with the
            // session's own, so the simulator starts here, as for a command naming them: written
            // as shown, it would reach whatever else listens on Triton's ports, or nothing.
            if sim.is_none() && names_sim_port(&text) {
                match Sim::start(m.serve.as_deref().unwrap_or("")) {
                    Ok(s) => sim = Some(s),
                    Err(e) => {
                        tally.failures.push(format!("{}: {e}", b.at(b.line)));
                        return;
                    }
                }
            }
            let text = match &sim {
                Some(sim) => sim.point(&text),
                None => text,
            };
            let path = dir.path().join(name);
            if let Some(p) = path.parent() {
                std::fs::create_dir_all(p).unwrap();
            }
            std::fs::write(path, text).unwrap();
            continue;
        }
        // Commands and shown output.
        let (cmds, shown_whole): (Vec<Cmd>, Option<Vec<(usize, String)>>) = if is_transcript(b) {
            match transcript(b) {
                Ok(c) => (c, None),
                Err(e) => {
                    tally.failures.push(e);
                    continue;
                }
            }
        } else {
            let split = b.body.iter().position(|(_, l)| l == "\u{1}output");
            let (script, output) = match split {
                Some(k) => (&b.body[..k], Some(b.body[k + 1..].to_vec())),
                None => (&b.body[..], None),
            };
            let text: Vec<&str> = script.iter().map(|(_, l)| l.as_str()).collect();
            (
                vec![Cmd {
                    line: b.line + 1,
                    text: text.join("\n"),
                    shown: Vec::new(),
                }],
                output,
            )
        };
        let all_text: String = cmds
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let missing = missing_tools(&all_text);
        if !missing.is_empty() {
            tally.skipped.push(format!(
                "{}: skipped, {} not installed",
                b.at(b.line),
                missing.join(", ")
            ));
            continue;
        }
        for (a, _) in &m.subs {
            if !cmds.iter().any(|c| c.text.contains(a.as_str())) {
                tally.failures.push(format!(
                    "{}: sub=\"{a} => ...\": the block has no `{a}` to substitute",
                    b.at(b.line)
                ));
            }
        }
        // Segments between `ttftbench serve ... &` lines, which (re)start the simulator.
        let mut k = 0;
        while k < cmds.len() {
            if let Some(flags) = serve_line(&cmds[k].text) {
                drop(sim.take());
                match Sim::start(&flags) {
                    Ok(s) => {
                        // What it prints at start, when the page shows it.
                        if cmds[k].shown.iter().any(|(_, l)| !l.trim().is_empty()) {
                            check_output(b, &cmds[k], &cmds[k].shown, &s.banner, tally);
                        }
                        sim = Some(s);
                    }
                    Err(e) => {
                        tally.failures.push(format!("{}: {e}", b.at(cmds[k].line)));
                        return;
                    }
                }
                tally.commands += 1;
                k += 1;
                continue;
            }
            if kill_line(&cmds[k].text) {
                drop(sim.take());
                tally.commands += 1;
                k += 1;
                continue;
            }
            let end = (k..cmds.len())
                .find(|&e| serve_line(&cmds[e].text).is_some() || kill_line(&cmds[e].text))
                .unwrap_or(cmds.len());
            let seg = &cmds[k..end];
            let needs_sim = seg.iter().any(|c| names_sim_port(&c.text));
            if sim.is_none() && (needs_sim || m.serve.is_some()) {
                match Sim::start(m.serve.as_deref().unwrap_or("")) {
                    Ok(s) => sim = Some(s),
                    Err(e) => {
                        tally.failures.push(format!("{}: {e}", b.at(b.line)));
                        return;
                    }
                }
            }
            let mut script = String::new();
            for c in seg {
                let mut text = c.text.clone();
                for (a, bb) in &m.subs {
                    text = text.replace(a.as_str(), bb.as_str());
                }
                if let Some(sim) = &sim {
                    text = sim.point(&text);
                }
                let _ = writeln!(script, "{{ {text}\n}}\nprintf '\\n{SEP}%d{SEP}\\n' $?");
            }
            let timeout = Duration::from_secs(m.timeout.unwrap_or(240));
            let started = Instant::now();
            let (printed, timed_out) = bash(&script, dir.path(), timeout);
            if std::env::var_os("TTFTBENCH_DOCS_VERBOSE").is_some() {
                eprintln!(
                    "{} ({} commands): {:.1} s",
                    b.at(seg[0].line),
                    seg.len(),
                    started.elapsed().as_secs_f64()
                );
            }
            if timed_out {
                tally.failures.push(format!(
                    "{}: did not finish within {} s (timeout=SECS on the marker); it printed:\n{}",
                    b.at(seg[0].line),
                    timeout.as_secs(),
                    indent(&printed)
                ));
                return;
            }
            // Split what was printed at the separators.
            let mut outputs: Vec<(String, i32)> = Vec::new();
            let mut rest = printed.as_str();
            while let Some(a) = rest.find(SEP) {
                let body = &rest[..a];
                let after = &rest[a + SEP.len_utf8()..];
                let Some(bend) = after.find(SEP) else { break };
                let code: i32 = after[..bend].parse().unwrap_or(-1);
                let body = body.strip_suffix('\n').unwrap_or(body);
                outputs.push((body.to_string(), code));
                rest = after[bend + SEP.len_utf8()..]
                    .strip_prefix('\n')
                    .unwrap_or("");
            }
            for (idx, c) in seg.iter().enumerate() {
                tally.commands += 1;
                let Some((out, code)) = outputs.get(idx) else {
                    tally.failures.push(format!(
                        "{}: the command did not complete (the block stopped before it); printed:\n{}",
                        b.at(c.line),
                        indent(&printed)
                    ));
                    break;
                };
                let shown: Vec<(usize, String)> = match &shown_whole {
                    Some(s) => s.clone(),
                    None => c.shown.clone(),
                };
                let script_without_output = shown_whole.is_none() && !is_transcript(b);
                if *code != 0 && !c.text.contains("$?") {
                    tally.failures.push(format!(
                        "{}: `{}` exited with {code} (a command whose exit code is not 0 shows it: `; echo \"exit $?\"`); it printed:\n{}",
                        b.at(c.line),
                        first_line(&c.text),
                        indent(out)
                    ));
                    continue;
                }
                if script_without_output {
                    continue;
                }
                check_output(b, c, &shown, out, tally);
            }
            k = end;
        }
    }
}

/// Compares the output shown for `c` with what it printed; a mismatch goes into `tally`.
fn check_output(b: &Block, c: &Cmd, shown: &[(usize, String)], out: &str, tally: &mut Tally) {
    tally.outputs += 1;
    let kept = |l: &str| !l.trim().is_empty() && !is_machine_line(l.trim());
    let pats: Vec<Pat> = shown
        .iter()
        .filter(|(_, l)| kept(l))
        .map(|(_, l)| pattern(l))
        .collect();
    let shown_lines: Vec<&(usize, String)> = shown.iter().filter(|(_, l)| kept(l)).collect();
    let raw_lines: Vec<&str> = out
        .lines()
        .filter(|l| kept(l) && !is_live_line(l))
        .collect();
    let printed_lines: Vec<String> = raw_lines.iter().map(|l| mask(l)).collect();
    let Err((i, j)) = compare(&pats, &printed_lines) else {
        return;
    };
    let mut msg = String::new();
    match shown_lines.get(i) {
        Some((n, l)) => {
            let _ = writeln!(
                msg,
                "{}:{}: the output shown for `{}` ({}) is not what it prints:\n  shown:   {}\n  masked:  {}",
                b.doc,
                n,
                first_line(&c.text),
                b.at(c.line),
                l.trim(),
                mask(l)
            );
            match printed_lines.get(j) {
                Some(p) => {
                    let _ = writeln!(msg, "  printed: {}\n  masked:  {p}", raw_lines[j]);
                }
                None => {
                    let _ = writeln!(msg, "  printed: (nothing more)");
                }
            }
        }
        None => {
            let _ = writeln!(
                msg,
                "{}: `{}` printed more than its shown output ends with (end the shown output with `...` to leave the rest out); from:\n  printed: {}",
                b.at(c.line),
                first_line(&c.text),
                raw_lines.get(j).copied().unwrap_or("")
            );
        }
    }
    let _ = write!(msg, "  the whole output:\n{}", indent(out));
    tally.failures.push(msg);
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("");
    if s.lines().count() > 1 {
        format!("{} ...", l.trim_end_matches('\\').trim_end())
    } else {
        l.to_string()
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    | {l}\n")).collect()
}

/// Every fenced block of every page, with marker errors.
fn all_blocks() -> (Vec<Block>, Vec<String>) {
    let mut errors = Vec::new();
    let mut all = Vec::new();
    for d in docs() {
        all.extend(blocks(&d, &mut errors));
    }
    (all, errors)
}

#[test]
fn marked_commands_run_and_print_what_the_docs_show() {
    let started = Instant::now();
    let (all, errors) = all_blocks();
    assert!(errors.is_empty(), "bad markers:\n{}", errors.join("\n"));
    let only = std::env::var("TTFTBENCH_DOCS_ONLY").ok();
    let sessions: Vec<Session> = sessions(&all)
        .into_iter()
        .filter(|s| {
            only.as_ref()
                .is_none_or(|o| s.blocks[0].doc.contains(o.as_str()))
        })
        .collect();
    let jobs: usize = std::env::var("TTFTBENCH_DOCS_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(3)
        .max(1);
    let queue = Arc::new(Mutex::new(sessions.into_iter().collect::<Vec<_>>()));
    let total = Arc::new(Mutex::new(Tally::default()));
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let (queue, total) = (queue.clone(), total.clone());
            std::thread::spawn(move || {
                loop {
                    let Some(s) = ({
                        let mut q = queue.lock().unwrap();
                        if q.is_empty() {
                            None
                        } else {
                            Some(q.remove(0))
                        }
                    }) else {
                        return;
                    };
                    let t0 = Instant::now();
                    let mut t = Tally::default();
                    run_session(&s, &mut t);
                    if std::env::var_os("TTFTBENCH_DOCS_VERBOSE").is_some() {
                        eprintln!("session {}: {:.1} s", s.name, t0.elapsed().as_secs_f64());
                    }
                    let mut total = total.lock().unwrap();
                    total.commands += t.commands;
                    total.outputs += t.outputs;
                    total.failures.extend(t.failures);
                    total.skipped.extend(t.skipped);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a session's thread");
    }
    let total = total.lock().unwrap();
    for s in &total.skipped {
        eprintln!("{s}");
    }
    eprintln!(
        "docs: {} commands run, {} shown outputs checked, {} blocks skipped, in {:.0} s",
        total.commands,
        total.outputs,
        total.skipped.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        total.failures.is_empty(),
        "{} documented command(s) do not do what the docs show:\n\n{}",
        total.failures.len(),
        total.failures.join("\n")
    );
}

#[test]
fn check_commands_parse_and_every_command_block_is_marked() {
    let (all, errors) = all_blocks();
    assert!(errors.is_empty(), "bad markers:\n{}", errors.join("\n"));
    let mut failures = Vec::new();
    let mut parsed = 0;
    for b in &all {
        let mode = b.marker.as_ref().map(|m| &m.mode);
        // A page's source shown as an example (docs/contributing.md) is not a command block.
        if matches!(mode, Some(Mode::File(_)) | Some(Mode::Output))
            || matches!(b.lang.as_str(), "markdown" | "md")
        {
            continue;
        }
        let shell = matches!(
            b.lang.as_str(),
            "sh" | "bash" | "console" | "shell" | "shell-session"
        );
        let cmds: Vec<(usize, String)> = if is_transcript(b) {
            match transcript(b) {
                Ok(c) => c.into_iter().map(|c| (c.line, c.text)).collect(),
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            }
        } else if shell {
            vec![(
                b.line + 1,
                b.body
                    .iter()
                    .map(|(_, l)| l.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )]
        } else {
            continue;
        };
        let calls: Vec<(usize, Vec<String>)> = cmds
            .iter()
            .flat_map(|(n, t)| invocations(t).into_iter().map(move |a| (*n, a)))
            .collect();
        if calls.is_empty() {
            continue;
        }
        match mode {
            None => failures.push(format!(
                "{}: a block with ttftbench commands needs a marker on the line before it: `<!-- doc-test: run -->`, or `<!-- doc-test: check WHY IT CANNOT RUN -->` (docs/contributing.md)",
                b.at(b.line)
            )),
            Some(Mode::Check(_)) => {
                for (n, args) in calls {
                    parsed += 1;
                    let argv = std::iter::once("ttftbench".to_string()).chain(args.iter().cloned());
                    if let Err(e) = Cli::try_parse_from(argv) {
                        use clap::error::ErrorKind;
                        if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                            failures.push(format!(
                                "{}: `ttftbench {}` does not parse: {}",
                                b.at(n),
                                args.join(" "),
                                e.to_string().lines().next().unwrap_or("")
                            ));
                        }
                    }
                }
                // Scripts the block names exist.
                for (n, t) in &cmds {
                    for w in shell_tokens(t) {
                        if let Tok::Word(w) = w
                            && w.starts_with("scripts/")
                            && !root().join(&w).exists()
                        {
                            failures.push(format!("{}: `{w}` does not exist", b.at(*n)));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    eprintln!("docs: {parsed} ttftbench command lines of check blocks parsed");
    assert!(parsed > 0, "no check blocks found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// --help and docs/reference/
// ---------------------------------------------------------------------------------------------

/// A subcommand's `--help`: flags by heading (in order), and the example commands.
#[derive(Debug, Default)]
struct Help {
    groups: Vec<(String, Vec<String>)>,
    examples: Vec<String>,
}

/// The flag a help or table line names: its long form, or the short one when it has none, or a
/// positional `<NAME>`.
fn flag_of(spec: &str) -> Option<String> {
    let spec = spec.trim();
    let mut short = None;
    for part in spec.split([',', ' ']) {
        let part = part.trim().trim_matches('`');
        if part.starts_with("--") && part.len() > 2 {
            return Some(part.split(['=', '<', '[']).next().unwrap().to_string());
        }
        if short.is_none() && part.len() == 2 && part.starts_with('-') {
            short = Some(part.to_string());
        }
    }
    if short.is_some() {
        return short;
    }
    let s = spec.trim_matches('`');
    if s.starts_with('<') || s.starts_with('[') {
        return Some(
            s.split_whitespace()
                .next()
                .unwrap()
                .replace(['[', ']'], "")
                .replace("...", ""),
        );
    }
    None
}

/// Parses `ttftbench <sub> --help` as printed.
fn help_of(sub: &str) -> Help {
    let out = bin()
        .args([sub, "--help"])
        .env("COLUMNS", "200")
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut h = Help::default();
    let mut heading: Option<String> = None;
    let mut examples = false;
    let mut current_example = String::new();
    for line in text.lines() {
        if !line.starts_with(' ') && line.ends_with(':') && !line.is_empty() {
            let name = line.trim_end_matches(':').to_string();
            examples = name == "Examples";
            if !examples {
                h.groups.push((name.clone(), Vec::new()));
            }
            heading = Some(name);
            continue;
        }
        if examples {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            if line.starts_with("  ttftbench") || line.starts_with("  source") {
                if !current_example.is_empty() {
                    h.examples.push(std::mem::take(&mut current_example));
                }
                current_example = t.to_string();
            } else {
                // A continuation line: the `\` before it goes, as in the page's examples.
                current_example = current_example
                    .trim_end_matches('\\')
                    .trim_end()
                    .to_string();
                current_example.push(' ');
                current_example.push_str(t);
            }
            continue;
        }
        if heading.is_none() {
            continue;
        }
        // `  -m, --model <MODEL>  text`, `      --streaming  text`, `  <DIRS>...  text`; the
        // flag's own text, defaults and possible values are indented further.
        let indent = line.len() - line.trim_start().len();
        if (2..=6).contains(&indent) {
            let t = line.trim_start();
            if t.starts_with('-') || t.starts_with('<') || t.starts_with('[') {
                let spec = t.split("  ").next().unwrap_or(t);
                if let Some(f) = flag_of(spec)
                    && f != "--help"
                    && f != "--version"
                {
                    h.groups.last_mut().unwrap().1.push(f);
                }
            }
        }
    }
    if !current_example.is_empty() {
        h.examples.push(current_example);
    }
    h.groups.retain(|(_, f)| !f.is_empty());
    h
}

/// A reference page: flags by `## ` section (table rows whose first cell names a flag), and the
/// commands of its Examples block.
fn reference_of(path: &Path) -> Help {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut h = Help::default();
    let mut section = String::new();
    let mut in_fence = false;
    let mut example = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            if !in_fence && !example.is_empty() {
                h.examples.push(std::mem::take(&mut example));
            }
            continue;
        }
        if in_fence {
            if section == "Examples" {
                let t = line.trim();
                let cont = example.ends_with('\\');
                if cont {
                    example.pop();
                    example = example.trim_end().to_string();
                    example.push(' ');
                    example.push_str(t);
                } else if !t.is_empty() {
                    if !example.is_empty() {
                        h.examples.push(std::mem::take(&mut example));
                    }
                    example = t.to_string();
                }
            }
            continue;
        }
        if let Some(s) = line.strip_prefix("## ") {
            section = s.trim().to_string();
            if section != "Examples" {
                h.groups.push((section.clone(), Vec::new()));
            }
            continue;
        }
        if section.is_empty() || section == "Examples" {
            continue;
        }
        if let Some(row) = line.strip_prefix('|') {
            let cell = row.split('|').next().unwrap_or("").trim();
            if (cell.starts_with("`-") || cell.starts_with("`<") || cell.starts_with("`["))
                && let Some(f) = flag_of(&cell.replace('`', ""))
            {
                // `-m`, `--model <MODEL>`: the long form names it.
                h.groups.last_mut().unwrap().1.push(f);
            }
        }
    }
    h.groups.retain(|(_, f)| !f.is_empty());
    h
}

#[test]
fn help_and_reference_pages_list_the_same_flags_and_examples() {
    let mut failures = Vec::new();
    let cli = Cli::command();
    let subs: Vec<String> = cli
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    let index = std::fs::read_to_string(root().join("docs/reference/index.md")).unwrap();
    for sub in &subs {
        let page = root().join(format!("docs/reference/{sub}.md"));
        if !index.contains(&format!("({sub}.md)")) {
            failures.push(format!("docs/reference/index.md: no link to {sub}.md"));
        }
        if !page.exists() {
            failures.push(format!(
                "docs/reference/{sub}.md is missing: `ttftbench {sub}` needs its page"
            ));
            continue;
        }
        let help = help_of(sub);
        let doc = reference_of(&page);
        let rel = format!("docs/reference/{sub}.md");
        let help_names: Vec<&String> = help.groups.iter().map(|(g, _)| g).collect();
        let doc_names: Vec<&String> = doc.groups.iter().map(|(g, _)| g).collect();
        if help_names != doc_names {
            failures.push(format!(
                "{rel}: its flag sections are {doc_names:?}; `ttftbench {sub} --help` groups its flags as {help_names:?}"
            ));
        }
        let where_in = |groups: &[(String, Vec<String>)]| -> BTreeMap<String, String> {
            groups
                .iter()
                .flat_map(|(g, fs)| fs.iter().map(move |f| (f.clone(), g.clone())))
                .collect()
        };
        let (hmap, dmap) = (where_in(&help.groups), where_in(&doc.groups));
        for (f, g) in &hmap {
            match dmap.get(f) {
                None => failures.push(format!(
                    "{rel}: `{f}` is in `ttftbench {sub} --help` (under {g}) but not on the page"
                )),
                Some(dg) if dg != g => failures.push(format!(
                    "{rel}: `{f}` is under {dg} on the page but under {g} in --help"
                )),
                _ => {}
            }
        }
        for (f, g) in &dmap {
            if !hmap.contains_key(f) {
                failures.push(format!(
                    "{rel}: `{f}` (under {g}) is not a flag of `ttftbench {sub}` (--help does not list it)"
                ));
            }
        }
        let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let hex: Vec<String> = help.examples.iter().map(|e| squash(e)).collect();
        let dex: Vec<String> = doc.examples.iter().map(|e| squash(e)).collect();
        if hex != dex {
            failures.push(format!(
                "{rel}: its Examples are not the ones `ttftbench {sub} --help` ends with:\n  help: {hex:#?}\n  page: {dex:#?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// The guides' commands, links, the README's length
// ---------------------------------------------------------------------------------------------

/// The command lines of the two guides (seeds/), `genai-perf`/`perf_analyzer` replaced by
/// `ttftbench profile`/`ttftbench perf`; the docs show each of them in a marked block.
const SEED_COMMANDS: &[&str] = &[
    "ttftbench profile -m gpt2 --service-kind triton --backend tensorrtllm --num-prompts 200 --synthetic-input-tokens-mean 200 --synthetic-input-tokens-stddev 20 --output-tokens-mean 100 --output-tokens-stddev 10 --concurrency 1 --measurement-interval 10000 --streaming --url localhost:8001 --artifact-dir ./ttft_c1",
    "column -s, -t ./ttft_c1/profile_export_genai_perf.csv | grep -i first_token",
    "for c in 1 4 8 16 32; do ttftbench profile -m gpt2 --service-kind triton --backend tensorrtllm --num-prompts 200 --synthetic-input-tokens-mean 200 --output-tokens-mean 100 --concurrency $c --measurement-interval 10000 --streaming --url localhost:8001 --artifact-dir ./ttft_c$c done",
    "for c in 1 8 32; do ttftbench profile -m gpt2 --service-kind triton --backend tensorrtllm --num-prompts 200 --synthetic-input-tokens-mean 200 --output-tokens-mean 100 --concurrency $c --measurement-interval 10000 --streaming --url localhost:8001 --artifact-dir ./bench/$TS/c$c done",
    "ttftbench perf -m yolov8s --concurrency-range 4 --shape images:3,640,640 --input-data random -u localhost:8001 --measurement-interval 10000",
    "ttftbench perf -m yolov8s --concurrency-range 1:32:2 --shape images:3,640,640 --input-data random -u localhost:8001 --measurement-interval 15000 -f latency_vs_concurrency.csv",
    "ttftbench perf -m resnet_${fp_mode} -b $batch_size --concurrency-range 8 --input-data random -f result_b${batch_size}_${fp_mode}.csv",
    "ttftbench perf -m llama3 --input-data prompts.json --streaming --measurement-interval 30000 --concurrency-range 1:8:2 -u localhost:8001 --async --request-parameter max_tokens:256 --request-parameter temperature:0.0",
    "ttftbench perf -m yolov8s --concurrency-range 8 --latency-report-file latency_report.csv --verbose-csv",
    "ttftbench perf -m bert_classifier --request-rate-range 100 --measurement-interval 86400000 --periodic-concurrency-range 1 -f stability_24h.csv",
    "ttftbench perf -m $MODEL_NAME --concurrency-range 8 --input-data random -f ci_result.csv",
];

/// Whitespace squashed, line continuations and prompts removed: how a command reads.
fn squash_shell(s: &str) -> String {
    s.replace("\\\n", " ")
        .lines()
        .map(|l| {
            l.strip_prefix("$ ")
                .or_else(|| l.strip_prefix("> "))
                .unwrap_or(l)
        })
        .collect::<Vec<_>>()
        .join(" ")
        .replace(['\\', ';'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_guides_commands_are_in_the_docs() {
    let (all, _) = all_blocks();
    let shown: String = all
        .iter()
        .filter(|b| {
            b.doc.starts_with("docs/")
                && b.marker
                    .as_ref()
                    .is_some_and(|m| matches!(m.mode, Mode::Run | Mode::Check(_)))
        })
        .map(|b| {
            squash_shell(
                &b.body
                    .iter()
                    .map(|(_, l)| l.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let missing: Vec<&&str> = SEED_COMMANDS
        .iter()
        .filter(|c| !shown.contains(&squash_shell(c)))
        .collect();
    assert!(
        missing.is_empty(),
        "the guides' commands not shown in a marked block of docs/:\n{missing:#?}"
    );
    // The list is the guides' own text, where the seeds are beside this checkout.
    for dir in [
        root().join("../shared/seeds"),
        root().join("../../shared/seeds"),
    ] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let seeds: String = rd
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .collect::<Vec<_>>()
            .join("\n");
        let seeds = squash_shell(&seeds);
        for c in SEED_COMMANDS {
            let theirs = squash_shell(c)
                .replace("ttftbench profile", "genai-perf profile")
                .replace("ttftbench perf", "perf_analyzer");
            assert!(seeds.contains(&theirs), "not in the seeds: {theirs}");
        }
        return;
    }
}

/// The anchors of a page's headings, as mdBook and GitHub make them: lowercase, spaces to `-`,
/// other punctuation than `-` and `_` dropped, `-1`, `-2` for repeats.
fn anchors(lines: &[String]) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for (l, is_prose) in lines.iter().zip(prose(lines)) {
        if !is_prose || !l.starts_with('#') {
            continue;
        }
        let text = l.trim_start_matches('#');
        if !text.starts_with(' ') {
            continue;
        }
        // Heading text as rendered: code spans and link syntax removed.
        let mut plain = String::new();
        let mut chars = text.trim().chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '`' => {}
                '[' => {}
                ']' if chars.peek() == Some(&'(') => {
                    for c in chars.by_ref() {
                        if c == ')' {
                            break;
                        }
                    }
                }
                c => plain.push(c),
            }
        }
        let id: String = plain
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_lowercase().next().unwrap())
                } else if c == ' ' {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let n = seen.entry(id.clone()).or_insert(0);
        let id = if *n == 0 {
            id.clone()
        } else {
            format!("{id}-{n}")
        };
        *n += 1;
        out.insert(id);
    }
    out
}

/// `[text](target)` links outside code.
fn links(lines: &[String]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for ((n, l), is_prose) in lines.iter().enumerate().zip(prose(lines)) {
        if !is_prose {
            continue;
        }
        // Drop code spans.
        let mut text = String::new();
        let mut code = false;
        for c in l.chars() {
            if c == '`' {
                code = !code;
            } else if !code {
                text.push(c);
            }
        }
        let mut rest = text.as_str();
        while let Some(a) = rest.find("](") {
            let after = &rest[a + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn links_and_anchors_resolve() {
    let all = docs();
    let by_path: HashMap<String, &Doc> = all.iter().map(|d| (d.path.clone(), d)).collect();
    let mut failures = Vec::new();
    for d in &all {
        let base = Path::new(&d.path).parent().unwrap_or(Path::new(""));
        for (n, target) in links(&d.lines) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f.to_string(), Some(a.to_string())),
                None => (target.clone(), None),
            };
            let path = if file.is_empty() {
                d.path.clone()
            } else {
                // Normalize a/b/../c.
                let mut parts: Vec<String> = Vec::new();
                for p in base.join(&file).components() {
                    match p {
                        std::path::Component::ParentDir => {
                            parts.pop();
                        }
                        std::path::Component::CurDir => {}
                        c => parts.push(c.as_os_str().to_string_lossy().into_owned()),
                    }
                }
                parts.join("/")
            };
            if d.path.starts_with("docs/") && !path.starts_with("docs/") {
                failures.push(format!(
                    "{}:{n}: `{target}` leaves the book (docs/); name the file in a code span or link to it by URL",
                    d.path
                ));
                continue;
            }
            if !root().join(&path).exists() {
                failures.push(format!("{}:{n}: `{target}`: {path} does not exist", d.path));
                continue;
            }
            if let Some(a) = anchor {
                match by_path.get(&path) {
                    Some(t) if !anchors(&t.lines).contains(&a) => failures.push(format!(
                        "{}:{n}: `{target}`: {path} has no heading with the anchor #{a}",
                        d.path
                    )),
                    None => failures.push(format!(
                        "{}:{n}: `{target}`: an anchor into a file that is not a page",
                        d.path
                    )),
                    _ => {}
                }
            }
        }
    }
    // Every page is in the book's table of contents.
    let summary = std::fs::read_to_string(root().join("docs/SUMMARY.md")).unwrap();
    for d in &all {
        if let Some(rel) = d.path.strip_prefix("docs/")
            && rel != "SUMMARY.md"
            && !summary.contains(&format!("({rel})"))
        {
            failures.push(format!(
                "{}: not in docs/SUMMARY.md, so not in the book",
                d.path
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_readme_stays_short() {
    let n = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        n <= 350,
        "README.md has {n} lines: at most 350 (what it is, install, quick start, links); the manual goes to docs/"
    );
}

#[test]
fn masking_and_matching() {
    assert_eq!(mask("  1          27.83   -0.5%  +15.0 ms"), "# # #% # ms");
    assert_eq!(
        mask("run 20261202T025206Z-29ffa8: server"),
        "run <run>: server"
    );
    assert_eq!(
        mask(
            "run 20261203T133528Z-e1a9d3: server x 0.1.0 (GET /v2), client vm (linux, AMD EPYC, 2 cores)"
        ),
        "run <run>: server x # (GET /v#), client <client>"
    );
    assert_eq!(mask("-----------  -----  p99"), "--- --- p#");
    assert_eq!(
        mask("--concurrency 1,4 rep1 1e-05"),
        "--concurrency #,# rep# #"
    );
    let printed: Vec<String> = ["a 1", "b 2", "c 3", "d"].iter().map(|s| mask(s)).collect();
    let pats = |s: &[&str]| s.iter().map(|l| pattern(l)).collect::<Vec<_>>();
    assert!(compare(&pats(&["a 7", "...", "d"]), &printed).is_ok());
    assert!(compare(&pats(&["a 7", "b 9 ..."]), &printed).is_err());
    assert!(compare(&pats(&["a 7", "b ...", "..."]), &printed).is_ok());
    assert_eq!(compare(&pats(&["a 7", "x", "..."]), &printed), Err((1, 1)));
    assert!(is_live_line(
        "level 2/6 concurrency4 at 5.0 s: 120/200 requests"
    ));
    assert!(!is_live_line(
        "level 2/6 concurrency4 done in 6.3 s: 200 requests"
    ));
    assert!(is_live_line(
        "level 1 concurrency1 at 5.0 s: 24/1000 requests, 1 in flight"
    ));
    assert!(!is_live_line(
        "level 1 concurrency1 done in 5.3 s: 25 requests"
    ));
    assert_eq!(
        invocations(
            "for c in 1 4; do\n  ttftbench profile -m x --concurrency $c \\\n  --artifact-dir ./t_$c > out.txt\ndone | tee x"
        ),
        vec![vec![
            "profile",
            "-m",
            "x",
            "--concurrency",
            "1",
            "--artifact-dir",
            "./t_1"
        ]]
    );
    assert_eq!(
        invocations("source <(ttftbench completions bash); cargo run --release -- demo  # tour"),
        vec![vec!["completions", "bash"], vec!["demo"]]
    );
    assert_eq!(
        invocations("T=$(( $(date +%s) + 5 )) ttftbench merge a -o m 2>&1 | jq -c ."),
        vec![vec!["merge", "a", "-o", "m"]]
    );
}
