//! What a command line that does not parse is told: clap's own error, with advice that holds
//! for these commands. `profile` takes GenAI-Perf's perf_analyzer arguments after `--`, which
//! makes clap suggest `-- --streming` for a misspelt flag and `-- -3` for a negative value:
//! followed, the first runs a benchmark without the flag (perf_analyzer's arguments are named as
//! ignored) and the second fails again. Those tips are dropped; a value that looks negative
//! gets one that says what the flag takes.

use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::cli::Cli;

/// Parses `argv` (the program name first) into [`Cli`], with clap's error reworded by
/// [`reword`] when it does not parse.
pub fn parse(argv: &[String]) -> Result<Cli, clap::Error> {
    <Cli as clap::Parser>::try_parse_from(argv).map_err(|e| {
        let search = argv.get(1).is_some_and(|s| s == "search");
        reword(e, search)
    })
}

/// Lets a flag's value start with `-` when it is a number (`--request-rate -3`), so the flag's
/// own check says what is wrong with it instead of clap calling `-3` an unknown flag. Applied to
/// every argument of the load-generating subcommands; a flag without a value is left as it is.
pub fn negative_numbers_reach_the_flag(arg: clap::Arg) -> clap::Arg {
    if arg.get_action().takes_values() {
        arg.allow_negative_numbers(true)
    } else {
        arg
    }
}

/// `e` without the `-- ARG` tip, and with a tip for a negative number where one was given;
/// `search`: whether the command line is a search's, told what to use instead of a flag of
/// `profile` that it does not take.
pub fn reword(mut e: clap::Error, search: bool) -> clap::Error {
    // Clap's tips are styled text; its `-- ARG` tip is the one that reads "to pass 'ARG' as a
    // value, use '-- ARG'".
    let mut tips: Vec<clap::builder::StyledStr> = match e.remove(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(tips)) => tips
            .into_iter()
            .filter(|t| !t.to_string().starts_with("to pass '"))
            .collect(),
        _ => Vec::new(),
    };
    let tip = match e.kind() {
        // `--concurrency -1:32`: clap reads `-1` as a short flag.
        ErrorKind::UnknownArgument => string(&e, ContextKind::InvalidArg).and_then(|a| {
            if looks_negative(&a) {
                Some(format!(
                    "'{a}' is read as a flag because it starts with '-'; levels, rates and counts are positive numbers"
                ))
            } else if let Some(instead) = search.then(|| crate::cli::search::not_in_search(&a)).flatten() {
                // A similar flag of search's own is not what was meant.
                tips.clear();
                Some(instead)
            } else {
                None
            }
        }),
        // `--request-count -3`: the number parser's own words ("invalid digit") do not say it.
        ErrorKind::ValueValidation if !own_message(&e) => string(&e, ContextKind::InvalidValue)
            .filter(|v| looks_negative(v))
            .map(|v| {
                let flag = string(&e, ContextKind::InvalidArg).unwrap_or_default();
                let flag = flag.split_whitespace().next().unwrap_or("this flag");
                format!("'{v}' is negative: {flag} must be positive")
            }),
        _ => None,
    };
    tips.extend(tip.map(Into::into));
    if !tips.is_empty() {
        e.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    }
    e
}

/// Whether `s` is a negative number, or a range or list that starts with one (`-1:32`).
fn looks_negative(s: &str) -> bool {
    s.strip_prefix('-')
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
}

/// Whether the value was refused by one of ttftbench's own parsers, whose message already
/// says what is wrong (`must not be negative`).
fn own_message(e: &clap::Error) -> bool {
    std::error::Error::source(e)
        .is_some_and(|s| s.is::<crate::error::UsageError>() || s.is::<crate::cli::SizeError>())
}

fn string(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(args: &[&str]) -> String {
        let argv: Vec<String> = std::iter::once("ttftbench")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        match parse(&argv) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => e.render().to_string(),
        }
    }

    /// Found by a new user: `--streming` advised `-- --streming`, which ran a benchmark
    /// without streaming and exited 0.
    #[test]
    fn a_misspelt_flag_gets_the_similar_flag_and_no_double_dash() {
        let e = error(&["profile", "-m", "gpt2", "--streming"]);
        assert!(
            e.contains("a similar argument exists: '--streaming'"),
            "{e}"
        );
        assert!(!e.contains("-- --streming"), "{e}");
        let e = error(&["search", "-m", "gpt2", "--sloo", "x"]);
        assert!(!e.contains("use '--"), "{e}");
    }

    /// Found by a new user: `--request-rate -3` advised `-- -3`, which failed again.
    #[test]
    fn a_negative_value_reaches_its_flag_or_is_named() {
        // The level's own parser says "must be positive", with no second tip.
        let e = error(&["profile", "-m", "gpt2", "--request-rate", "-3"]);
        assert!(
            e.contains("--request-rate -3: rates must be positive ('-3' is not)")
                && !e.contains("tip:"),
            "{e}"
        );
        let e = error(&["perf", "-m", "m", "--concurrency-range", "-3"]);
        assert!(
            e.contains("--concurrency-range -3: values must be positive ('-3' is not)")
                && !e.contains("tip:"),
            "{e}"
        );
        let e = error(&["profile", "-m", "gpt2", "--request-count", "-3"]);
        assert!(
            e.contains("'-3' is negative: --request-count must be positive"),
            "{e}"
        );
        assert!(!e.contains("-- -3"), "{e}");
        let e = error(&["profile", "-m", "gpt2", "--concurrency", "-1:32"]);
        assert!(e.contains("levels, rates and counts are positive"), "{e}");
        assert!(!e.contains("-- -1"), "{e}");
        // A duration's own parser already says it; no second tip.
        let e = error(&["profile", "-m", "gpt2", "-p", "-5"]);
        assert!(
            e.contains("must not be negative") && !e.contains("tip:"),
            "{e}"
        );
    }

    /// perf_analyzer's arguments after `--` still parse.
    #[test]
    fn arguments_after_the_double_dash_still_reach_profile() {
        let argv: Vec<String> = ["ttftbench", "profile", "-m", "gpt2", "--", "-p", "500"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let Ok(Cli {
            command: crate::cli::Command::Profile(a),
        }) = parse(&argv)
        else {
            panic!("did not parse");
        };
        assert_eq!(a.perf_analyzer_args, ["-p", "500"]);
    }
}
