//! Run plans as files: `--config FILE` (TOML, or YAML by its `.yaml`/`.yml` extension: see
//! [`yaml`]) for `profile` and `perf`, `--print-config`, and the `run.toml` every run writes into
//! its artifact directory.
//!
//! A config file is a flat TOML table whose keys are the subcommand's long flag names (aliases
//! too) and whose values are what the flag takes: a string or number for a flag with a value, a
//! boolean for a switch, an array for a repeatable flag (or a comma list for one that takes a
//! list: `concurrency = [1, 2, 4]` is `--concurrency 1,2,4`):
//!
//! ```toml
//! model = "gpt2"
//! url = "localhost:8001"
//! endpoint-type = "kserve"
//! streaming = true
//! concurrency = [1, 2, 4, 8]
//! slo = ["time_to_first_token.p99<=500ms", "error_rate<1%"]
//! ```
//!
//! The file becomes command-line tokens placed before the command line's own, for each key the
//! command line does not set, so flags on the command line win and everything after is the
//! same parse and validation as typed flags. A key that is not a flag is refused with its line
//! and the closest flag name; a value of the wrong kind with its line and key.
//!
//! `run.toml` is the same form, written from the flags a run was given (file and command line
//! together): `ttftbench profile --config run.toml` repeats the run (same levels, prompts and
//! seed, defaults being the same; byte-identical prompt text when the run had
//! `--prompt-salt none` or a fixed salt, since by default each run salts its text afresh). Secrets are never written: `--api-key` and headers holding
//! credentials become comments saying where the value came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, CommandFactory};
use toml::Value;

use crate::error::UsageError;

mod yaml;

/// The subcommands that take `--config`.
const WITH_CONFIG: [&str; 3] = ["profile", "perf", "search"];

/// `argv` with the `--config` file's flags put in (unchanged without `--config`).
pub fn expand(argv: Vec<String>) -> Result<Vec<String>, UsageError> {
    let Some(sub) = argv.get(1).filter(|s| WITH_CONFIG.contains(&s.as_str())) else {
        return Ok(argv);
    };
    let Some(path) = config_path(&argv[2..]) else {
        return Ok(argv);
    };
    let cmd = subcommand(sub);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        UsageError(format!(
            "--config {}: cannot read it ({e}); give a TOML (or .yaml) file of long flag names, e.g. model = \"gpt2\"",
            path.display()
        ))
    })?;
    let given = given_flags(&cmd, &argv[2..]);
    let mut tokens = Vec::new();
    let is_yaml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
    let entries = if is_yaml {
        yaml::parse(&text, &path)?
    } else {
        parse(&text, &path)?
    };
    for (key, (value, line)) in entries {
        let arg = find_arg(&cmd, &key).ok_or_else(|| unknown_key(&cmd, &key, &path, line))?;
        let long = arg.get_long().unwrap_or(&key).to_string();
        if long == "config" || given.contains(&long) {
            continue;
        }
        tokens.extend(
            tokens_for(arg, &long, &value)
                .map_err(|why| UsageError(format!("{}:{line}: {key}: {why}", path.display())))?,
        );
    }
    let mut out = argv[..2].to_vec();
    out.extend(tokens);
    out.extend_from_slice(&argv[2..]);
    Ok(out)
}

/// `--config FILE` or `--config=FILE` among the subcommand's arguments.
fn config_path(args: &[String]) -> Option<PathBuf> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            return None;
        }
        if a == "--config" {
            return it.next().map(PathBuf::from);
        }
        if let Some(p) = a.strip_prefix("--config=") {
            return Some(PathBuf::from(p));
        }
    }
    None
}

fn subcommand(name: &str) -> clap::Command {
    let mut cli = super::Cli::command();
    cli.build();
    cli.find_subcommand(name)
        .cloned()
        .expect("profile and perf are subcommands")
}

/// A key of the file, its value and its line.
type Entry = (String, (Value, usize));

/// The file's keys with their values and lines, in file order.
fn parse(text: &str, path: &Path) -> Result<Vec<Entry>, UsageError> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let table: BTreeMap<toml::Spanned<String>, toml::Spanned<Value>> = toml::from_str(text)
        .map_err(|e| {
            let at = e
                .span()
                .map(|s| format!(":{}", line_of(s.start)))
                .unwrap_or_default();
            UsageError(format!(
                "{}{at}: not a TOML file of flags: {}",
                path.display(),
                e.message()
            ))
        })?;
    let mut entries: Vec<(usize, String, Value)> = table
        .into_iter()
        .map(|(k, v)| (k.span().start, k.into_inner(), v.into_inner()))
        .collect();
    entries.sort_by_key(|e| e.0);
    Ok(entries
        .into_iter()
        .map(|(at, k, v)| (k, (v, line_of(at))))
        .collect())
}

/// The flag a key names: its long name or one of its aliases.
fn find_arg<'a>(cmd: &'a clap::Command, key: &str) -> Option<&'a Arg> {
    cmd.get_arguments().find(|a| {
        a.get_long() == Some(key) || a.get_all_aliases().is_some_and(|al| al.contains(&key))
    })
}

fn unknown_key(cmd: &clap::Command, key: &str, path: &Path, line: usize) -> UsageError {
    let closest = cmd
        .get_arguments()
        .filter_map(Arg::get_long)
        .map(|l| (strsim::levenshtein(key, l), l))
        .min();
    let hint = match closest {
        Some((d, l)) if d <= key.len().max(3) / 2 + 1 => format!("; did you mean {l}?"),
        _ => String::new(),
    };
    UsageError(format!(
        "{}:{line}: {key}: not a flag of `ttftbench {}`{hint} (keys are the long flag names, as `ttftbench {} --help` lists them)",
        path.display(),
        cmd.get_name(),
        cmd.get_name()
    ))
}

/// The long flags the command line sets (`--name`, `--name=v`, `-x`, `-xVALUE`).
fn given_flags(cmd: &clap::Command, args: &[String]) -> Vec<String> {
    let long = |a: &String| {
        if let Some(rest) = a.strip_prefix("--") {
            let name = rest.split('=').next().unwrap_or(rest);
            find_arg(cmd, name).and_then(Arg::get_long)
        } else {
            let c = a.strip_prefix('-').and_then(|r| r.chars().next())?;
            cmd.get_arguments()
                .find(|x| x.get_short() == Some(c))
                .and_then(Arg::get_long)
        }
    };
    let given = args.iter().take_while(|a| *a != "--");
    given.filter_map(long).map(str::to_string).collect()
}

/// A config value of a kind its flag does not take; the reader puts the file, line and key in
/// front, as a usage error (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ValueError {
    /// A switch given something other than a boolean (its kind).
    #[error("a switch: give true or false, not {0}")]
    Switch(&'static str),
    /// A table or date where the flag takes text (its kind).
    #[error("expected a string or number, found {0}")]
    NotScalar(&'static str),
}

/// The command-line tokens for one key.
fn tokens_for(arg: &Arg, long: &str, value: &Value) -> Result<Vec<String>, ValueError> {
    let flag = format!("--{long}");
    let switch = matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse);
    let repeatable = matches!(arg.get_action(), ArgAction::Append);
    match value {
        Value::Boolean(b) if switch => Ok(if *b { vec![flag] } else { Vec::new() }),
        _ if switch => Err(ValueError::Switch(kind(value))),
        Value::Array(items) if repeatable => {
            let mut out = Vec::new();
            for v in items {
                out.push(flag.clone());
                out.push(scalar(v)?);
            }
            Ok(out)
        }
        Value::Array(items) => {
            let parts = items.iter().map(scalar).collect::<Result<Vec<_>, _>>()?;
            Ok(vec![flag, parts.join(",")])
        }
        v => Ok(vec![flag, scalar(v)?]),
    }
}

/// A value as the flag's text.
fn scalar(v: &Value) -> Result<String, ValueError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        Value::Boolean(b) => Ok(b.to_string()),
        other => Err(ValueError::NotScalar(kind(other))),
    }
}

/// A flag's text as the TOML value a person would write: numbers as numbers, but only where
/// the number reads back as the same text (`007` stays a string: it may be a model name).
fn typed(raw: String) -> Value {
    match (raw.parse::<i64>(), raw.parse::<f64>()) {
        (Ok(i), _) if i.to_string() == raw => Value::Integer(i),
        (_, Ok(f)) if f.is_finite() && f.to_string() == raw => Value::Float(f),
        _ => Value::String(raw),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "a list",
        Value::Table(_) => "a table",
    }
}

/// The flags `argv` (already expanded) sets, as a config file: what `run.toml` holds and
/// `--print-config` prints. Secret values are left out, with a comment saying so.
pub fn resolved(argv: &[String]) -> String {
    let Some(sub) = argv.get(1).filter(|s| WITH_CONFIG.contains(&s.as_str())) else {
        return String::new();
    };
    let cmd = subcommand(sub);
    // The subcommand parses its own arguments, its name standing where a program name would.
    let Ok(m) = cmd.clone().try_get_matches_from(&argv[1..]) else {
        return String::new();
    };
    let mut doc = toml::Table::new();
    let mut withheld = Vec::new();
    for arg in cmd.get_arguments() {
        let (Some(long), id) = (arg.get_long(), arg.get_id().as_str()) else {
            continue;
        };
        if m.value_source(id) != Some(clap::parser::ValueSource::CommandLine)
            || ["config", "print-config"].contains(&long)
        {
            continue;
        }
        if crate::target::is_secret_flag(&format!("--{long}")) {
            withheld.push(format!(
                "# {long}: given, not written (a secret: pass it again)"
            ));
            continue;
        }
        if matches!(arg.get_action(), ArgAction::SetTrue) {
            doc.insert(long.into(), Value::Boolean(m.get_flag(id)));
            continue;
        }
        let raw: Vec<String> = m
            .get_raw(id)
            .into_iter()
            .flatten()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if raw
            .iter()
            .any(|v| crate::target::redact_url_password(v).is_some())
        {
            withheld.push(format!(
                "# {long}: given, not written (its URL holds a password: pass it again)"
            ));
            continue;
        }
        let (kept, secret): (Vec<String>, Vec<String>) = raw
            .into_iter()
            .partition(|v| long != "header" || !crate::target::is_secret_header(v));
        for s in secret {
            let name = s.split(':').next().unwrap_or("").trim().to_string();
            withheld.push(format!(
                "# header {name}: given, not written (a secret: pass it again)"
            ));
        }
        let value = match (arg.get_action(), kept.len()) {
            (_, 0) => continue,
            (ArgAction::Append, _) => Value::Array(kept.into_iter().map(typed).collect()),
            _ => typed(kept.join(" ")),
        };
        doc.insert(long.into(), value);
    }
    let mut out = format!(
        "# ttftbench {} {sub}: the flags of this run; `ttftbench {sub} --config run.toml` repeats it.\n",
        crate::VERSION
    );
    out.extend(withheld.iter().map(|w| format!("{w}\n")));
    out.push_str(&toml::to_string(&doc).unwrap_or_default());
    out
}
