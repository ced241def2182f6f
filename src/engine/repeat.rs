//! `--repeat N`: the loop that runs a whole plan N times in a row, shared by every front end
//! (profile and perf combine the repetitions each in their own files).

use std::future::Future;

use crate::analysis::slo::{SloResult, noise_warning};
use crate::error::Result;
use crate::load::Interrupt;
use crate::metrics::Slo;
use crate::plan::Repeat;

/// Runs `one(k)` for repetitions k = 1..=`r.count` in order, `r.pause` apart (Ctrl-C ends a
/// pause and the loop), and stops after a repetition that says it was interrupted (`one`
/// returns its outcome and whether it was). `say` gets the progress lines. Returns the finished
/// repetitions' outcomes.
pub async fn each<T, F, Fut>(
    r: Repeat,
    interrupt: &Interrupt,
    say: impl Fn(&str),
    mut one: F,
) -> Result<Vec<T>>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<(T, bool)>>,
{
    let mut done = Vec::new();
    for k in 1..=r.count {
        if interrupt.stopping() {
            break;
        }
        if k > 1 && !r.pause.is_zero() {
            say(&format!(
                "pausing {:.1} s before repetition {k}/{} (--repeat-pause)",
                r.pause.as_secs_f64(),
                r.count
            ));
            tokio::select! {
                () = tokio::time::sleep(r.pause) => {}
                () = interrupt.wait_stop() => break,
            }
        }
        say(&format!("repetition {k}/{}", r.count));
        let (outcome, interrupted) = one(k).await?;
        done.push(outcome);
        if interrupted {
            break;
        }
    }
    Ok(done)
}

/// The level `find` picks in every repetition, in order; `None` when one lacks it (interrupted
/// before it, or it failed to start there).
pub fn in_each<'a, R, L>(
    reps: &'a [R],
    find: impl Fn(&'a R) -> Option<&'a L>,
) -> Option<Vec<&'a L>> {
    reps.iter()
        .map(find)
        .collect::<Option<Vec<_>>>()
        .filter(|v| !v.is_empty())
}

/// Says (`say`) when the repetitions of level `level` disagree on an objective: `checks` holds
/// each repetition's checks, in the order of `slos`.
pub fn warn_slo_noise(level: &str, slos: &[Slo], checks: &[&[SloResult]], say: impl Fn(&str)) {
    for (i, objective) in slos.iter().enumerate() {
        let reps: Vec<_> = checks.iter().map(|c| c.get(i)).collect();
        noise_warning(level, objective, &reps).inspect(|w| say(w));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[tokio::test]
    async fn runs_each_repetition_in_order_with_pauses() {
        let r = Repeat {
            count: 3,
            pause: Duration::from_millis(20),
        };
        let said = std::sync::Mutex::new(Vec::new());
        let t0 = Instant::now();
        let got = each(
            r,
            &Interrupt::new(),
            |s| said.lock().unwrap().push(s.to_string()),
            |k| async move { Ok((k * 10, false)) },
        )
        .await
        .unwrap();
        assert_eq!(got, vec![10, 20, 30]);
        assert!(t0.elapsed() >= Duration::from_millis(40), "two pauses");
        assert_eq!(said.lock().unwrap()[0], "repetition 1/3");
        assert_eq!(said.lock().unwrap().len(), 5, "3 starts, 2 pauses");
        // An interrupted repetition is the last.
        let got = each(
            r,
            &Interrupt::new(),
            |_| {},
            |k| async move { Ok((k, k == 2)) },
        )
        .await
        .unwrap();
        assert_eq!(got, vec![1, 2]);
    }
}
