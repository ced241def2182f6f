//! What `merge` was given: the shard level directories under each argument (the argument itself,
//! or the level directories right below a sweep), grouped by level, checked to be one run — one
//! plan identity, one shard count, one start time, every shard index exactly once per level —
//! before anything is added up. Every refusal is a usage error (exit 2) naming the directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::artifact::read::{DirKind, kind_of};
use crate::artifact::shard::{self, SHARD_FILE, ShardRecord};
use crate::error::{Error, Result};

/// One shard's directory of one level.
#[derive(Debug, Clone)]
pub struct Member {
    /// The level directory.
    pub dir: PathBuf,
    /// Its `shard.json`.
    pub record: ShardRecord,
}

/// The shard level directories in (or right below) `arg`.
fn level_dirs(arg: &Path) -> Result<Vec<PathBuf>> {
    if !arg.is_dir() {
        return Err(Error::usage(format!(
            "{}: no such directory (give the artifact directories of the shards: each a sweep or a level written with --shard)",
            arg.display()
        )));
    }
    if arg.join(SHARD_FILE).is_file() {
        return Ok(vec![arg.to_path_buf()]);
    }
    let mut below: Vec<PathBuf> = std::fs::read_dir(arg)
        .map_err(|e| Error::io("read", arg, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(SHARD_FILE).is_file())
        .collect();
    below.sort();
    if below.is_empty() {
        let why = match kind_of(arg) {
            DirKind::Other => "is not ttftbench output".to_string(),
            _ => "is a ttftbench run without shards (it was not started with --shard or --shards)"
                .to_string(),
        };
        return Err(Error::usage(format!(
            "{} {why}: no {SHARD_FILE} in it or in the directories right below it; merge takes the artifact directories of the shards of one run",
            arg.display()
        )));
    }
    Ok(below)
}

fn read_member(dir: PathBuf) -> Result<Member> {
    let path = dir.join(SHARD_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io("read", &path, e))?;
    let record = shard::decode(&text).map_err(|e| Error::from(e).context(path.display()))?;
    Ok(Member { dir, record })
}

/// Reads every argument's shard directories and groups them by level (in plan order, each
/// level's shards index 0 first), refusing mixed runs, duplicate or missing shards.
pub fn gather(args: &[PathBuf]) -> Result<Vec<Vec<Member>>> {
    if args.is_empty() {
        return Err(Error::usage("merge: give the shards' artifact directories"));
    }
    let mut members = Vec::new();
    for a in args {
        for dir in level_dirs(a)? {
            members.push(read_member(dir)?);
        }
    }
    check_one_run(&members)?;
    let mut by_level: BTreeMap<u32, Vec<Member>> = BTreeMap::new();
    for m in members {
        by_level.entry(m.record.level.index).or_default().push(m);
    }
    let count = by_level
        .values()
        .next()
        .and_then(|v| v.first())
        .map_or(1, |m| m.record.shard.count);
    by_level
        .into_iter()
        .map(|(index, mut members)| {
            members.sort_by_key(|m| m.record.shard.index);
            check_shards(index, &members, count)?;
            Ok(members)
        })
        .collect()
}

/// One plan, one shard count, one start time.
fn check_one_run(members: &[Member]) -> Result<()> {
    let Some(first) = members.first() else {
        return Ok(());
    };
    let f = &first.record;
    for m in &members[1..] {
        let r = &m.record;
        let why = if r.plan_id != f.plan_id {
            format!(
                "its plan {} differs from plan {} of {}: the shards were started with different flags (or ttftbench versions {} and {}), so they are not parts of one run",
                r.plan_id,
                f.plan_id,
                first.dir.display(),
                r.ttftbench_version,
                f.ttftbench_version
            )
        } else if r.shard.count != f.shard.count {
            format!(
                "it is a shard of a {}-shard run, {} of a {}-shard run",
                r.shard.count,
                first.dir.display(),
                f.shard.count
            )
        } else if r.start_at_unix_ns != f.start_at_unix_ns {
            format!(
                "it started at --start-at {:?}, {} at {:?}: shards of different runs",
                r.start_at_unix_ns,
                first.dir.display(),
                f.start_at_unix_ns
            )
        } else {
            continue;
        };
        return Err(Error::usage(format!(
            "cannot merge {}: {why}",
            m.dir.display()
        )));
    }
    Ok(())
}

/// Every shard index of the level exactly once.
fn check_shards(level: u32, members: &[Member], count: u32) -> Result<()> {
    let name = members
        .first()
        .map_or_else(String::new, |m| m.record.level_name());
    for w in members.windows(2) {
        if w[0].record.shard.index == w[1].record.shard.index {
            return Err(Error::usage(format!(
                "cannot merge: {} and {} are both shard {} of level {name}; give each shard's directory once",
                w[0].dir.display(),
                w[1].dir.display(),
                w[0].record.shard.label()
            )));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !members.iter().any(|m| m.record.shard.index == *i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(Error::usage(format!(
            "cannot merge level {name} (level {level} of the plan): shard {} of {count} missing (given: {}); every shard's directory is needed for exact totals",
            missing.join(", "),
            members
                .iter()
                .map(|m| m.dir.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}
