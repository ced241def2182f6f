//! The level loop every front end runs (`profile`, `perf`, `search`), and what it says around a
//! level. The mode makes the choices that differ ([`Mode`]): what it announces before the first
//! level, which level comes next, how a level is measured and kept, and whether the run goes on
//! after one. The loop keeps what is the same in every mode: Ctrl-C ends the run before the next
//! level; a level stopped before it measured anything ends the run with the levels before it
//! (the first level's interruption is the run's error); a level at which this shard has no load
//! gets `shard.json` alone, said on the console. [`say_measured`] says a measured level's
//! server-view notes and late start.

use std::future::Future;
use std::path::{Path, PathBuf};

use super::Measured;
use super::files::Writer;
use crate::error::{Error, Result};
use crate::load::Shard;
use crate::load::{Cancel, Stimulus, Stop};
use crate::plan::LevelPart;

/// A level the mode runs next.
#[derive(Debug, Clone)]
pub struct Planned<P> {
    /// The plan's level and this process's part of it.
    pub part: LevelPart,
    /// Where its files go (`None`: `perf` without `--artifact-dir`).
    pub dir: Option<PathBuf>,
    /// The mode's own choices for it (a search probe's load and rule).
    pub probe: P,
}

impl<P> Planned<P> {
    /// This process's load and stop at the level. A shard without load there reaches this only
    /// without a directory to write `shard.json` into.
    pub fn load(&self) -> Result<(Stimulus, Stop)> {
        self.part
            .load
            .clone()
            .map_err(|idle| Error::failed(idle.to_string()))
    }
}

/// Whether the run goes on after a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// To the mode's next level.
    Next,
    /// The run ends here.
    Stop,
}

/// What the loop ran.
#[derive(Debug, Clone)]
pub struct Ran<L> {
    /// The measured levels, in order.
    pub levels: Vec<L>,
    /// Levels at which this shard had no load: name and why.
    pub idle: Vec<(String, String)>,
    /// Whether a stop (Ctrl-C) ended the loop before the mode ran out of levels.
    pub cut: bool,
}

/// A front end's choices in the level loop; [`run`] is the loop.
pub trait Mode {
    /// The mode's own choices for a level ([`Planned::probe`]).
    type Probe;
    /// What the mode keeps of a measured level.
    type Level;

    /// Said once before the first level (profile's and perf's `--start-at` schedule).
    fn announce(&self) {}

    /// The next level, given the levels measured so far; `None`: the run has no more.
    fn next(&mut self, done: &[Self::Level]) -> Option<Planned<Self::Probe>>;

    /// Who writes this process's level files (for `shard.json` of a level without load).
    fn writer(&self) -> Writer<'_>;

    /// Measures the level, writes its files, says it and publishes it.
    fn measure(&mut self, level: Planned<Self::Probe>)
    -> impl Future<Output = Result<Self::Level>>;

    /// After a level (the last of `done`): go on, or end the run there.
    fn after(&mut self, _done: &[Self::Level]) -> Flow {
        Flow::Next
    }
}

/// Runs the mode's levels in order until it has no more, it stops, or Ctrl-C; `say`: whether
/// a shard's levels without load are said on the console.
pub async fn run<M: Mode>(mode: &mut M, cancel: &Cancel, say: bool) -> Result<Ran<M::Level>> {
    mode.announce();
    let mut ran = Ran {
        levels: Vec::new(),
        idle: Vec::new(),
        cut: false,
    };
    while let Some(level) = mode.next(&ran.levels) {
        if cancel.stopping() {
            ran.cut = true;
            break;
        }
        if let Some(dir) = &level.dir
            && let Some(idle) = write_idle(&mode.writer(), &level.part, dir, say)?
        {
            ran.idle.push(idle);
            continue;
        }
        match mode.measure(level).await {
            // Stopped before this level measured anything: the levels before it stand.
            Err(Error::Interrupted) if !ran.levels.is_empty() => {
                ran.cut = true;
                break;
            }
            r => ran.levels.push(r?),
        }
        if mode.after(&ran.levels) == Flow::Stop {
            break;
        }
    }
    Ok(ran)
}

/// Writes `shard.json` alone into `dir` when this shard has no load at the level, and says so
/// (with `say`); returns the level's name and why.
pub fn write_idle(
    writer: &Writer<'_>,
    part: &LevelPart,
    dir: &Path,
    say: bool,
) -> Result<Option<(String, String)>> {
    let Some(why) = writer.write_idle(dir, part)? else {
        return Ok(None);
    };
    let name = part.whole.name();
    if say {
        eprintln!(
            "{name}: no load for this shard ({why}); {} says so",
            dir.join(crate::artifact::shard::SHARD_FILE).display()
        );
    }
    Ok(Some((name, why)))
}

/// Says a measured level's server-view notes and, when it started after its planned moment
/// (`--start-at`), by how much.
pub fn say_measured(m: &Measured, shard: Shard) {
    for n in &m.notes {
        eprintln!("{n}");
    }
    if let Some(s) = m.start.filter(|s| s.late) {
        let who = if shard.is_whole() {
            String::new()
        } else {
            format!("{shard} ")
        };
        eprintln!(
            "{}: {who}started {:.3} s after its planned start {} (recorded in shard.json and the validity verdict of the merged run)",
            m.summary.stimulus.name(),
            s.delay_ns() as f64 / 1e9,
            crate::report::html::utc(s.planned_unix_ns)
        );
    }
}

/// The GPU names a measured level's server view reported, added to the run's context.
pub fn note_gpus(context: &mut crate::context::RunContext, m: &Measured) {
    if let Some(g) = &m.summary.gpu {
        context.add_gpus(g.gpus.iter().filter_map(|g| g.name.as_deref()));
    }
}
