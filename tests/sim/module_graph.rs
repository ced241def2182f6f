//! The module graph has no cycles, at two scales, and a few directions are forbidden outright.
//!
//! Between top-level modules (a folder counts as one module): vocabulary stays at the bottom,
//! and every stage only names the stages below it.
//!
//! Between files: the same, one node per source file, so no circle runs between the files of a
//! folder either. The rule for an edge `A -> B` (file to file):
//!
//! * the module tree is read from `mod name;` declarations starting at `lib.rs` (files declared
//!   under `#[cfg(test)]` are not part of it); an inline `mod name { .. }` belongs to its file;
//! * `A` names a path that starts at `crate::`, `super::`, `self::` (each relative to the module
//!   the path is written in, inline modules included) or at one of the module's own children
//!   (`session::run()` in a `mod.rs`), in code, in `use` trees (nested groups, several lines) and
//!   in macros (`$crate::`); comments, string literals and `#[cfg(test)]` items do not count;
//! * the path resolves to the deepest module it names; that module's file is `B`
//!   (`crate::sim::state::Shared` → `sim/state.rs`, `super::Foo` → the parent's file);
//! * a re-export is followed to the file that defines the item: `crate::load::Stimulus`, which
//!   `load/mod.rs` re-exports from `stimulus`, is an edge to `load/stimulus.rs`. A module's
//!   re-exports of its own descendants (`pub use stimulus::Stimulus;` in `load/mod.rs`) are its
//!   interface, not a dependency, and make no edge; a re-export of anything else does
//!   (`pub use crate::server_metrics::ServerKind;` in `sim/mod.rs` depends on it);
//! * a file naming what an ancestor module's own file defines makes no edge (`super::Config`
//!   in `sim/state.rs` for a `Config` written in `sim/mod.rs`): a folder's `mod.rs` is its
//!   front, above the files it declares, and names them freely; what they take from it is the
//!   folder's shared ground. So the knots that count are between the files under one `mod.rs`
//!   (siblings, nephews) and across folders. (Counting those edges as well finds 15
//!   knots where this rule finds none, when this test was written: a `mod.rs` that both
//!   declares shared items and calls its children, in most.)
//! * an edge from a file to itself is no edge.
//!
//! The top-level graph is the file graph's edges between top-level modules (`lib.rs`, the crate
//! root, is none). A cycle fails the test, named as one closed walk with one `file:line` per
//! edge. [`FORBIDDEN`] lists the directions DESIGN §2 promises that once ran the wrong way;
//! for those, a path that passes through a forbidden file on its way to a re-exported item
//! counts too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Edges `from -> to` with one `file:line` where `from` names `to`.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// Directions forbidden even without a cycle, as (from, to, why). A side is a file
/// (`stats.rs`, `server_metrics/gpu.rs`) or a module with everything under it (`client`).
const FORBIDDEN: &[(&str, &str, &str)] = &[
    (
        "artifact",
        "client",
        "encoders are functions of records, not of the transport: captures and their form are \
         `record::capture`, the client says which form it captures (`Client::response_form`)",
    ),
    (
        "server_metrics",
        "client",
        "the server view has its own probe (`server_metrics::grpc`), apart from the code path \
         the run measures",
    ),
    (
        "plan",
        "stats",
        "the plan is resolved before anything is measured: input-length bucket edges are \
         vocabulary (`metrics::buckets`)",
    ),
    (
        "stats",
        "server_metrics/gpu.rs",
        "statistics do not read the server view: what the GPUs did is vocabulary (`metrics::gpu`)",
    ),
];

/// Whether the file `rel` (`stats/isl.rs`) is `side` or under it.
fn within(rel: &str, side: &str) -> bool {
    rel == side || rel.strip_suffix(".rs") == Some(side) || rel.starts_with(&format!("{side}/"))
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.g.get(v).into_iter().flat_map(|e| e.keys()) {
            let w = w.as_str();
            if !s.g.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

// ---------------------------------------------------------------------------------------------
// Files: a small Rust lexer, the module tree, path resolution, and the graphs.

/// A token of Rust source with its line: an identifier or keyword, or one punctuation mark
/// (`::` is one mark). Literals, comments and lifetimes are dropped.
#[derive(Debug, Clone, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

impl Token {
    fn is(&self, s: &str) -> bool {
        self.text == s
    }

    fn is_ident(&self) -> bool {
        self.text
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
    }
}

/// Skips a string literal whose opening quote is at `i` (after any `r`/`b` prefix and `#`s):
/// returns the index after it.
fn skip_string(c: &[char], mut i: usize, raw_hashes: Option<usize>, line: &mut usize) -> usize {
    i += 1;
    while i < c.len() {
        match c[i] {
            '\n' => *line += 1,
            '\\' if raw_hashes.is_none() => {
                if c.get(i + 1) == Some(&'\n') {
                    *line += 1;
                }
                i += 1;
            }
            '"' => match raw_hashes {
                None => return i + 1,
                Some(n) if c[i + 1..].iter().take(n).filter(|&&h| h == '#').count() == n => {
                    return i + 1 + n;
                }
                Some(_) => {}
            },
            _ => {}
        }
        i += 1;
    }
    i
}

/// Skips a comment starting at `i` (`//...` or nested `/* */`): returns the index after it.
fn skip_comment(c: &[char], mut i: usize, line: &mut usize) -> usize {
    if c[i + 1] == '/' {
        while i < c.len() && c[i] != '\n' {
            i += 1;
        }
        return i;
    }
    let mut depth = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            if c[i] == '\n' {
                *line += 1;
            }
            i += 1;
        }
    }
    i
}

/// A string literal's prefix at `i` (`r"`, `r#"`, `b"`, `br#"`, ...): the index of its quote
/// and the number of `#` for a raw string; `None` when `i` starts no string.
fn string_start(c: &[char], i: usize) -> Option<(usize, Option<usize>)> {
    let mut j = i;
    if c[j] == 'b' || c[j] == 'c' {
        j += 1;
    }
    if c.get(j) == Some(&'r') {
        let mut k = j + 1;
        while c.get(k) == Some(&'#') {
            k += 1;
        }
        return (c.get(k) == Some(&'"')).then_some((k, Some(k - j - 1)));
    }
    (j != i && c.get(j) == Some(&'"')).then_some((j, None))
}

/// Skips a char literal or a lifetime at `i` (a `'`): returns the index after it.
fn skip_quote(c: &[char], i: usize) -> usize {
    if c.get(i + 1) == Some(&'\\') {
        let mut j = i + 2;
        while j < c.len() && c[j] != '\'' {
            j += 1;
        }
        return j + 1;
    }
    if c.get(i + 2) == Some(&'\'') {
        return i + 3;
    }
    // A lifetime: `'a`.
    let mut j = i + 1;
    while j < c.len() && (c[j].is_alphanumeric() || c[j] == '_') {
        j += 1;
    }
    j
}

/// The tokens of a source file.
fn tokens(text: &str) -> Vec<Token> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && matches!(c.get(i + 1), Some('/') | Some('*')) {
            i = skip_comment(&c, i, &mut line);
        } else if ch == '"' {
            i = skip_string(&c, i, None, &mut line);
        } else if let Some((q, hashes)) = string_start(&c, i) {
            i = skip_string(&c, q, hashes, &mut line);
        } else if ch == '\'' {
            i = skip_quote(&c, i);
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            if word == "r" && c.get(i) == Some(&'#') {
                i += 1; // a raw identifier `r#name`: the name follows
                continue;
            }
            out.push(Token { text: word, line });
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: ch.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// The index after the bracket group opening at `i` (`(`, `[` or `{`).
fn skip_group(t: &[Token], i: usize) -> usize {
    let mut depth = 0i64;
    let mut j = i;
    while j < t.len() {
        match t[j].text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// Whether the tokens at `i` are exactly `#[cfg(test)]`.
fn is_cfg_test(t: &[Token], i: usize) -> bool {
    let want = ["#", "[", "cfg", "(", "test", ")", "]"];
    t.len() >= i + want.len() && want.iter().enumerate().all(|(k, w)| t[i + k].is(w))
}

/// The tokens without `#[cfg(test)]` items (test modules may use the front end to build their
/// inputs): the attribute, any attributes after it, and the item up to its `;` or its body.
fn without_test_items(t: &[Token]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        if !is_cfg_test(t, i) {
            out.push(t[i].clone());
            i += 1;
            continue;
        }
        i += 7;
        while i < t.len() && t[i].is("#") {
            i = skip_group(t, i + 1);
        }
        let is_use = t[i..].iter().take(4).any(|x| x.is("use"));
        // The item ends at its `;` or its body's `{` (a `use` group's braces are skipped).
        while i < t.len() && !t[i].is(";") && (is_use || !t[i].is("{")) {
            i = if t[i].is("(") || t[i].is("[") || (t[i].is("{") && is_use) {
                skip_group(t, i)
            } else {
                i + 1
            };
        }
        i = if i < t.len() && t[i].is("{") {
            skip_group(t, i)
        } else {
            i + 1
        };
    }
    out
}

/// One path a file names: its segments as written and the line of its last segment.
#[derive(Debug, Clone, PartialEq)]
struct NamedPath {
    segments: Vec<String>,
    /// `as NAME` in a `use` tree.
    alias: Option<String>,
    line: usize,
}

/// Reads the path tree at `i` (after a segment and its `::`) into `out`, each path prefixed
/// with `prefix`; returns the index after it.
fn path_tree(t: &[Token], mut i: usize, prefix: Vec<String>, out: &mut Vec<NamedPath>) -> usize {
    let mut segments = prefix;
    loop {
        let Some(tok) = t.get(i) else { return i };
        if tok.is("{") {
            i += 1;
            while i < t.len() && !t[i].is("}") {
                i = path_tree(t, i, segments.clone(), out);
                if t.get(i).is_some_and(|x| x.is(",")) {
                    i += 1;
                }
            }
            return i + 1;
        }
        if !(tok.is_ident() || tok.is("*")) {
            return i;
        }
        // `a::{self, B}`: `self` names `a` itself.
        if !tok.is("self") || segments.is_empty() {
            segments.push(tok.text.clone());
        }
        let line = tok.line;
        i += 1;
        if t.get(i).is_some_and(|x| x.is("::")) && t.get(i + 1).is_some_and(|x| !x.is("<")) {
            i += 1;
            continue;
        }
        let alias = (t.get(i).is_some_and(|x| x.is("as")))
            .then(|| t.get(i + 1).map(|x| x.text.clone()))
            .flatten();
        if alias.is_some() {
            i += 2;
        }
        out.push(NamedPath {
            segments,
            alias,
            line,
        });
        return i;
    }
}

/// A module of the crate: its file, and the items it re-exports (name → path as written).
#[derive(Debug, Default)]
struct Module {
    file: usize,
    children: BTreeSet<String>,
    reexports: BTreeMap<String, NamedPath>,
}

/// Paths named in one module of a file, and whether each sits in a `pub use` (a re-export).
#[derive(Debug)]
struct Named {
    module: Vec<String>,
    path: NamedPath,
    reexport: bool,
}

/// A source file: its path under `src/`, its module, and its code tokens.
struct SourceFile {
    rel: String,
    module: Vec<String>,
    tokens: Vec<Token>,
}

/// Walks the tokens of one file: declared children (`mod x;`), inline modules, and every path
/// that starts at `crate`, `super`, `self` or a child module.
fn scan(file: &SourceFile, children_of: &dyn Fn(&[String]) -> BTreeSet<String>) -> Vec<Named> {
    let t = &file.tokens;
    let mut out = Vec::new();
    let mut inline: Vec<(String, i64)> = Vec::new();
    let mut depth = 0i64;
    let mut stmt_is_pub_use = false;
    let mut i = 0;
    while i < t.len() {
        let module: Vec<String> = file
            .module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(n, _)| n.clone()))
            .collect();
        let tok = &t[i];
        match tok.text.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            ";" => stmt_is_pub_use = false,
            "use" => {
                let before: Vec<&str> = t[i.saturating_sub(4)..i]
                    .iter()
                    .map(|x| x.text.as_str())
                    .collect();
                stmt_is_pub_use = before.contains(&"pub");
            }
            "mod" if t.get(i + 2).is_some_and(|x| x.is("{")) => {
                inline.push((t[i + 1].text.clone(), depth));
            }
            _ => {}
        }
        let starts_path = tok.is_ident()
            && t.get(i + 1).is_some_and(|x| x.is("::"))
            && !t.get(i.wrapping_sub(1)).is_some_and(|x| x.is("::"))
            && (matches!(tok.text.as_str(), "crate" | "super" | "self")
                || children_of(&module).contains(&tok.text));
        if !starts_path {
            i += 1;
            continue;
        }
        let mut paths = Vec::new();
        i = path_tree(t, i, Vec::new(), &mut paths);
        for path in paths {
            out.push(Named {
                module: module.clone(),
                path,
                reexport: stmt_is_pub_use,
            });
        }
    }
    out
}

/// Child modules a file declares with `mod name;` (not inline ones).
fn declared_children(t: &[Token]) -> Vec<String> {
    t.windows(3)
        .filter(|w| w[0].is("mod") && w[1].is_ident() && w[2].is(";"))
        .map(|w| w[1].text.clone())
        .collect()
}

/// The crate's module tree from `lib.rs`: every module file, and the modules by path.
fn module_tree(src: &Path) -> (Vec<SourceFile>, BTreeMap<Vec<String>, Module>) {
    let mut files = Vec::new();
    let mut modules = BTreeMap::new();
    let mut todo = vec![(src.join("lib.rs"), Vec::<String>::new())];
    while let Some((path, module)) = todo.pop() {
        let text = std::fs::read_to_string(&path).unwrap();
        let toks = without_test_items(&tokens(&text));
        let is_mod_rs = matches!(
            path.file_name().and_then(|n| n.to_str()),
            Some("lib.rs" | "mod.rs")
        );
        let dir = if is_mod_rs {
            path.parent().unwrap().to_path_buf()
        } else {
            path.with_extension("")
        };
        let children = declared_children(&toks);
        for c in &children {
            let flat = dir.join(format!("{c}.rs"));
            let nested = dir.join(c).join("mod.rs");
            let child = if flat.exists() { flat } else { nested };
            let mut m = module.clone();
            m.push(c.clone());
            todo.push((child, m));
        }
        modules.insert(
            module.clone(),
            Module {
                file: files.len(),
                children: children.into_iter().collect(),
                reexports: BTreeMap::new(),
            },
        );
        let rel = path.strip_prefix(src).unwrap().display().to_string();
        files.push(SourceFile {
            rel,
            module,
            tokens: toks,
        });
    }
    (files, modules)
}

/// The crate's files and modules, with each module's re-exports read.
struct Crate {
    files: Vec<SourceFile>,
    modules: BTreeMap<Vec<String>, Module>,
    named: Vec<Vec<Named>>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let (files, mut modules) = module_tree(src);
        let children_of = |m: &[String]| -> BTreeSet<String> {
            modules
                .get(m)
                .map(|x| x.children.clone())
                .unwrap_or_default()
        };
        let named: Vec<Vec<Named>> = files.iter().map(|f| scan(f, &children_of)).collect();
        for n in named.iter().flatten().filter(|n| n.reexport) {
            let name = n.path.alias.clone().or(n.path.segments.last().cloned());
            if let (Some(m), Some(name)) = (modules.get_mut(&n.module), name) {
                m.reexports.insert(name, n.path.clone());
            }
        }
        Crate {
            files,
            modules,
            named,
        }
    }

    /// The absolute module path a path written in `module` starts at, and its other segments.
    fn absolute(&self, module: &[String], segments: &[String]) -> Vec<String> {
        let mut base: Vec<String> = match segments[0].as_str() {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => module[..module.len().saturating_sub(1)].to_vec(),
            child => {
                let mut m = module.to_vec();
                m.push(child.to_string());
                m
            }
        };
        let mut rest = &segments[1..];
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        base
    }

    /// The file a path written in `module` resolves to, following re-exports (see the module
    /// doc); `via` gets each file a re-export was followed through. `None` for a path outside
    /// the crate's modules.
    fn resolve(
        &self,
        module: &[String],
        segments: &[String],
        via: &mut Vec<usize>,
    ) -> Option<usize> {
        let full = self.absolute(module, segments);
        // The deepest module the path names (an inline module is not in the tree: its file is
        // the enclosing module's).
        let deepest = (0..=full.len())
            .rev()
            .find(|&k| self.modules.contains_key(&full[..k]))?;
        let m = &self.modules[&full[..deepest]];
        if let Some(source) = full
            .get(deepest)
            .and_then(|item| m.reexports.get(item))
            .filter(|_| via.len() < 8)
        {
            via.push(m.file);
            return self.resolve(&full[..deepest], &source.segments, via);
        }
        Some(m.file)
    }

    /// Whether a re-export written in `module` names one of its own descendants.
    fn is_facade(&self, module: &[String], segments: &[String]) -> bool {
        let full = self.absolute(module, segments);
        full.len() > module.len() && full[..module.len()] == *module
    }

    /// Every place a file names another file (see the module doc), in file order.
    fn references(&self) -> Vec<Reference> {
        let mut out = Vec::new();
        for (from, named) in self.named.iter().enumerate() {
            for n in named {
                if n.reexport && self.is_facade(&n.module, &n.path.segments) {
                    continue;
                }
                let mut via = Vec::new();
                match self.resolve(&n.module, &n.path.segments, &mut via) {
                    Some(to) if to != from => out.push(Reference {
                        from,
                        to,
                        via,
                        line: n.path.line,
                    }),
                    _ => {}
                }
            }
        }
        out
    }

    /// A graph of `references` as named by `node` (a file's node, or `None` for none), the
    /// first line of each edge kept.
    fn graph_of<'a>(
        &self,
        references: impl Iterator<Item = &'a Reference>,
        node: impl Fn(&str) -> Option<String>,
    ) -> Graph {
        let mut first: BTreeMap<(String, String), (usize, String)> = BTreeMap::new();
        let mut g = Graph::new();
        for f in &self.files {
            if let Some(n) = node(&f.rel) {
                g.entry(n).or_default();
            }
        }
        for r in references {
            let from = &self.files[r.from].rel;
            let (Some(a), Some(b)) = (node(from), node(&self.files[r.to].rel)) else {
                continue;
            };
            if a != b {
                let at = first.entry((a, b)).or_insert((r.line, from.clone()));
                if (r.line, from) < (at.0, &at.1) {
                    *at = (r.line, from.clone());
                }
            }
        }
        for ((a, b), (line, file)) in first {
            g.entry(a).or_default().insert(b, format!("{file}:{line}"));
        }
        g
    }

    /// The file graph, without edges to what an ancestor module's own file defines.
    fn file_graph(&self) -> Graph {
        let refs = self.references();
        let counted = refs.iter().filter(|r| {
            let up = &self.files[r.to].module;
            let own = &self.files[r.from].module;
            !(own.len() > up.len() && own[..up.len()] == up[..])
        });
        self.graph_of(counted, |rel| Some(rel.to_string()))
    }

    /// The graph between top-level modules (a folder and its `name.rs` count as one).
    fn top_graph(&self) -> Graph {
        let refs = self.references();
        self.graph_of(refs.iter(), |rel| {
            let top = rel.split('/').next()?.trim_end_matches(".rs");
            (top != "lib").then(|| top.to_string())
        })
    }

    /// Each reference that runs a [`FORBIDDEN`]-style direction of `rules`: the line that names
    /// it and why it is forbidden.
    fn forbidden(&self, rules: &[(&str, &str, &str)]) -> Vec<String> {
        let mut out = Vec::new();
        for r in self.references() {
            let from = &self.files[r.from].rel;
            for (a, b, why) in rules {
                let hit = r
                    .via
                    .iter()
                    .chain([&r.to])
                    .map(|&f| &self.files[f].rel)
                    .find(|rel| within(from, a) && within(rel, b));
                if let Some(to) = hit {
                    out.push(format!("  {from}:{} names {to}: {why}\n", r.line));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// One place a file names another: the file the path resolves to, the files a re-export was
/// followed through on the way, and the line.
struct Reference {
    from: usize,
    to: usize,
    via: Vec<usize>,
    line: usize,
}

/// A shortest closed walk through `start` inside the strongly connected group `comp`.
fn shortest_cycle(g: &Graph, comp: &[String], start: &str) -> Vec<String> {
    let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in g[v].keys().filter(|w| comp.contains(w)) {
            if w == start {
                let mut walk = vec![v.to_string()];
                let mut at = v;
                while at != start {
                    at = prev[at];
                    walk.push(at.to_string());
                }
                walk.reverse();
                return walk;
            }
            if !prev.contains_key(w.as_str()) {
                prev.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    vec![start.to_string()]
}

/// Each cycle of `g` written as one closed walk per strongly connected group, one `file:line`
/// per edge, then the group's other files.
fn describe_cycles(g: &Graph, found: &[Vec<String>]) -> String {
    let mut report = String::new();
    for comp in found {
        report.push_str(&format!("cycle among {} files:\n", comp.len()));
        let walk = shortest_cycle(g, comp, &comp[0]);
        for (k, from) in walk.iter().enumerate() {
            let to = &walk[(k + 1) % walk.len()];
            report.push_str(&format!("  {from} -> {to}  ({})\n", g[from][to]));
        }
        let rest: Vec<&str> = comp
            .iter()
            .filter(|f| !walk.contains(f))
            .map(String::as_str)
            .collect();
        if !rest.is_empty() {
            report.push_str(&format!("  (and, in the same knot: {})\n", rest.join(", ")));
        }
    }
    report
}

fn crate_src() -> Crate {
    Crate::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn no_cycles_between_top_level_modules() {
    let g = crate_src().top_graph();
    let found = cycles(&g);
    assert!(found.is_empty(), "{}", describe_cycles(&g, &found));
}

#[test]
fn no_cycles_between_files() {
    let g = crate_src().file_graph();
    let found = cycles(&g);
    let edges: usize = g.values().map(BTreeMap::len).sum();
    eprintln!(
        "file graph: {} files, {edges} edges, {} file cycles (strongly connected groups)",
        g.len(),
        found.len()
    );
    assert!(found.is_empty(), "{}", describe_cycles(&g, &found));
}

#[test]
fn no_forbidden_direction() {
    let found = crate_src().forbidden(FORBIDDEN);
    assert!(
        found.is_empty(),
        "forbidden directions:\n{}",
        found.concat()
    );
}

/// A small crate on disk with one of each thing the reader must see or leave out.
const FIXTURE: &[(&str, &str)] = &[
    (
        "lib.rs",
        "pub mod a;\npub mod b;\nmod c;\n#[cfg(test)]\nmod t;\npub mod proto { pub struct X; }\n",
    ),
    (
        "a/mod.rs",
        "//! crate::c in a comment\npub mod x;\npub mod y;\npub use x::Thing;\npub fn run() { y::go(); }\npub struct Shared;\n",
    ),
    (
        "a/x.rs",
        "use super::Shared;\nuse crate::{\n    b::{self, Deep},\n};\npub struct Thing;\nconst S: &str = \"crate::c::nothing {\";\nconst C: char = '{';\nmod inner {\n    use super::Thing;\n}\n",
    ),
    ("a/y.rs", "pub fn go() {\n    let _ = crate::a::Thing;\n}\n"),
    (
        "b.rs",
        "pub struct Deep;\npub fn f() { crate::a::y::go(); }\n",
    ),
    (
        "c.rs",
        "use crate::b::Deep as D;\n#[cfg(test)]\nmod tests {\n    use crate::a::x::Thing;\n}\n/* crate::a */\n",
    ),
    ("t.rs", "use crate::a;\n"),
];

/// The reader sees paths over several lines, nested groups, child paths, re-exports and
/// `$crate`, and leaves out comments, strings, test items, facades and an ancestor's own
/// items; the checker names cycles at both scales and forbidden directions, through
/// re-exports too.
#[test]
fn the_checker_sees_what_it_must() {
    let dir = std::env::temp_dir().join(format!("ttftbench-module-graph-{}", std::process::id()));
    for (path, text) in FIXTURE {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let krate = Crate::read(&dir);
    let files = krate.file_graph();
    let edges: Vec<(&str, &str, &str)> = files
        .iter()
        .flat_map(|(a, e)| {
            e.iter()
                .map(move |(b, at)| (a.as_str(), b.as_str(), at.as_str()))
        })
        .collect();
    assert_eq!(
        edges,
        [
            ("a/mod.rs", "a/y.rs", "a/mod.rs:5"),
            ("a/x.rs", "b.rs", "a/x.rs:3"),
            ("a/y.rs", "a/x.rs", "a/y.rs:2"),
            ("b.rs", "a/y.rs", "b.rs:2"),
            ("c.rs", "b.rs", "c.rs:1"),
        ]
    );
    assert_eq!(cycles(&files), [vec!["a/x.rs", "a/y.rs", "b.rs"]]);
    assert!(describe_cycles(&files, &cycles(&files)).contains("a/y.rs -> a/x.rs  (a/y.rs:2)"));
    let top = krate.top_graph();
    assert_eq!(cycles(&top), [vec!["a", "b"]]);
    assert_eq!(top["c"]["b"], "c.rs:1");
    // A direction found through the re-export in `a/mod.rs`, and one found directly.
    let rules = [("a/y.rs", "a/mod.rs", "why"), ("c", "b", "because")];
    assert_eq!(
        krate.forbidden(&rules),
        [
            "  a/y.rs:2 names a/mod.rs: why\n",
            "  c.rs:1 names b.rs: because\n"
        ]
    );
    let mut g = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")] {
        g.entry(a.into()).or_default().insert(b.into(), "x".into());
    }
    assert_eq!(cycles(&g), [vec!["a", "b", "c"]]);
    std::fs::remove_dir_all(&dir).unwrap();
}
