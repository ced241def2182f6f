//! The module graph has no cycles between top-level modules (a folder counts as one module):
//! vocabulary stays at the bottom, and every stage only names the stages below it. This reads
//! the `crate::` paths of `src/` (outside comments and `#[cfg(test)]` modules) and fails on any
//! cycle, naming the modules in it and one place for each edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Edges `from -> to` with one `file:line` where `from` names `to`.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

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

/// The top-level module a file belongs to (`src/client/h1.rs` → `client`); `None` for the crate
/// root and the binary.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.trim_end_matches(".rs");
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// Code lines of a file without comments and without `#[cfg(test)]` items (test modules may
/// use the front end to build their inputs).
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut skip_depth: Option<i64> = None;
    let mut depth = 0i64;
    let mut pending_test = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or("");
        let trimmed = line.trim();
        if trimmed.starts_with("#[cfg(test)]") {
            pending_test = true;
            continue;
        }
        let opens = line.matches('{').count() as i64;
        let closes = line.matches('}').count() as i64;
        if pending_test && opens > 0 && skip_depth.is_none() {
            skip_depth = Some(depth);
            pending_test = false;
        }
        depth += opens - closes;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        if pending_test && trimmed.ends_with(';') {
            // `#[cfg(test)] use ...;` or `mod tests;`
            pending_test = false;
            continue;
        }
        out.push((i + 1, line.to_string()));
    }
    out
}

/// Every `crate::name` (and `crate::{name, ...}`) a line refers to.
fn referenced(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let before_ok = i == 0
            || !rest[..i]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if before_ok {
            if let Some(group) = after.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        out.push(name);
                    }
                }
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
        rest = after;
    }
    out
}

fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(src, f)).collect();
    let mut g = Graph::new();
    for f in &files {
        let Some(from) = top_module(src, f) else {
            continue;
        };
        g.entry(from.clone()).or_default();
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in code_lines(&text) {
            for to in referenced(&line) {
                if to != from && modules.contains(&to) {
                    g.entry(from.clone())
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| {
                            format!("{}:{n}", f.strip_prefix(src).unwrap_or(f).display())
                        });
                }
            }
        }
    }
    g
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

#[test]
fn no_cycles_between_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    let found = cycles(&g);
    let mut report = String::new();
    for comp in &found {
        report.push_str(&format!("cycle among {{{}}}:\n", comp.join(", ")));
        for from in comp {
            for (to, at) in &g[from] {
                if comp.contains(to) {
                    report.push_str(&format!("  {from} -> {to}  ({at})\n"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{report}");
}

/// The checker itself finds a cycle, skips test modules and comments, and reads grouped paths.
#[test]
fn the_checker_sees_what_it_must() {
    let text = "use crate::{a, b::C};\n// crate::x\n#[cfg(test)]\nmod tests {\n    use crate::y;\n}\nfn f() { crate::z::g(); }\n";
    let refs: Vec<String> = code_lines(text)
        .iter()
        .flat_map(|(_, l)| referenced(l))
        .collect();
    assert_eq!(refs, ["a", "b", "z"]);
    let mut g = Graph::new();
    g.entry("a".into())
        .or_default()
        .insert("b".into(), "x".into());
    g.entry("b".into())
        .or_default()
        .insert("c".into(), "x".into());
    g.entry("c".into())
        .or_default()
        .insert("a".into(), "x".into());
    g.entry("d".into())
        .or_default()
        .insert("a".into(), "x".into());
    assert_eq!(cycles(&g), [vec!["a", "b", "c"]]);
}
