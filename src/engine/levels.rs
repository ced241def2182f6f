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
use crate::load::{Interrupt, LevelLength, Stimulus};
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
    pub fn load(&self) -> Result<(Stimulus, LevelLength)> {
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
pub async fn run<M: Mode>(mode: &mut M, interrupt: &Interrupt, say: bool) -> Result<Ran<M::Level>> {
    mode.announce();
    let mut ran = Ran {
        levels: Vec::new(),
        idle: Vec::new(),
        cut: false,
    };
    while let Some(level) = mode.next(&ran.levels) {
        if interrupt.stopping() {
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
    let (Err(why), Some(record)) = (&part.load, writer.shard_record(part, None)) else {
        return Ok(None);
    };
    crate::error::create_dir(dir)?;
    let file = dir.join(crate::artifact::shard::SHARD_FILE);
    crate::artifact::write_file(&file, crate::artifact::shard::encode(&record))?;
    let name = part.whole.name();
    if say {
        eprintln!(
            "{name}: no load for this shard ({why}); {} says so",
            file.display()
        );
    }
    Ok(Some((name, why.to_string())))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ShardPlan;
    use crate::plan::shard::Idle;

    /// What a level of [`Fake`] does.
    #[derive(Clone, Copy, PartialEq)]
    enum Does {
        Measures,
        /// No load for this shard.
        Idles,
        /// Stopped before it measured anything.
        Interrupted,
        /// Measured, then Ctrl-C.
        CtrlC,
        /// Measured, then the mode ends the run.
        Stops,
    }

    /// Shard 1/2 of concurrency levels 1, 2, ..., each doing what `script` says.
    struct Fake {
        script: Vec<Does>,
        asked: usize,
        interrupt: Interrupt,
        shard: ShardPlan,
        dir: PathBuf,
    }

    impl Mode for Fake {
        type Probe = Does;
        type Level = u32;

        fn next(&mut self, _done: &[u32]) -> Option<Planned<Does>> {
            let does = *self.script.get(self.asked)?;
            self.asked += 1;
            let c = self.asked as u32;
            let load = match does {
                Does::Idles => Err(Idle::NoWorker {
                    level: format!("concurrency{c}"),
                    count: 2,
                    shard: self.shard.shard,
                }),
                _ => Ok((Stimulus::Concurrency(c), LevelLength::Requests(1))),
            };
            Some(Planned {
                part: LevelPart {
                    index: c - 1,
                    whole: Stimulus::Concurrency(c),
                    load,
                    warmup: None,
                    start_at: None,
                },
                dir: Some(self.dir.join(format!("c{c}"))),
                probe: does,
            })
        }

        fn writer(&self) -> Writer<'_> {
            Writer {
                mode: "profile",
                plan_id: "plan",
                shard: &self.shard,
                anchor_unix_ns: 0,
                run_config: "",
            }
        }

        async fn measure(&mut self, level: Planned<Does>) -> Result<u32> {
            match level.probe {
                Does::Interrupted => return Err(Error::Interrupted),
                Does::CtrlC => self.interrupt.stop_sending(),
                _ => {}
            }
            Ok(level.part.index + 1)
        }

        fn after(&mut self, done: &[u32]) -> Flow {
            let last = done.last().map_or(0, |c| *c as usize - 1);
            match self.script[last] {
                Does::Stops => Flow::Stop,
                _ => Flow::Next,
            }
        }
    }

    /// The levels measured, whether the loop was cut, and the levels without load.
    async fn run_script(dir: &Path, script: &[Does]) -> Result<(Vec<u32>, bool, Vec<String>)> {
        let mut shard = ShardPlan::default();
        shard.shard.count = 2;
        let interrupt = Interrupt::new();
        let mut mode = Fake {
            script: script.to_vec(),
            asked: 0,
            interrupt: interrupt.clone(),
            shard,
            dir: dir.to_path_buf(),
        };
        let r = run(&mut mode, &interrupt, false).await?;
        Ok((
            r.levels,
            r.cut,
            r.idle.into_iter().map(|(n, _)| n).collect(),
        ))
    }

    #[tokio::test]
    async fn runs_until_the_mode_stops_ctrl_c_or_an_interrupted_level() {
        use Does::*;
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        let none = Vec::<String>::new;
        let all = run_script(t, &[Measures, Measures, Measures]).await;
        assert_eq!(all.unwrap(), (vec![1, 2, 3], false, none()));
        let stops = run_script(t, &[Measures, Stops, Measures]).await;
        assert_eq!(stops.unwrap(), (vec![1, 2], false, none()));
        let ctrl_c = run_script(t, &[CtrlC, Measures]).await;
        assert_eq!(ctrl_c.unwrap(), (vec![1], true, none()));
        // A level stopped before it measured anything: the levels before it stand, and the
        // first one's interruption is the run's.
        let later = run_script(t, &[Measures, Interrupted, Measures]).await;
        assert_eq!(later.unwrap(), (vec![1], true, none()));
        let first = run_script(t, &[Interrupted, Measures]).await;
        assert!(matches!(first, Err(Error::Interrupted)));
    }

    #[tokio::test]
    async fn a_level_without_load_gets_its_shard_file_and_is_skipped() {
        use Does::*;
        let tmp = tempfile::tempdir().unwrap();
        let r = run_script(tmp.path(), &[Measures, Idles, Measures]).await;
        assert_eq!(r.unwrap(), (vec![1, 3], false, vec!["concurrency2".into()]));
        let shard = std::fs::read_to_string(tmp.path().join("c2/shard.json")).unwrap();
        assert!(shard.contains("no worker"), "{shard}");
        assert!(
            !tmp.path().join("c1/shard.json").exists(),
            "measured: not written here"
        );
    }
}
