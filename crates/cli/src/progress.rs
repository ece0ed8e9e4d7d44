//! What a long run shows while it works.
//!
//! The party counts the items of its bulk phases into a shared
//! [`privset_protocols::Meter`] (see that module for why), and the driver reports its
//! status between messages. A ticker thread here reads both ten times a second and
//! shows them:
//! * `--progress auto` (the default): a bar per phase on a terminal (phase name as the
//!   protocol's docs name it, items done of total, rate, time left; a finished phase
//!   leaves one summary line), a spinner with the status between phases; nothing when
//!   stderr is not a terminal (logs, CI, pipes);
//! * `--progress json`: one JSON object per line on stderr for every update, for other
//!   programs (fields in [`Update`]), at most [`JSON_EVERY`] apart while a phase runs
//!   plus one for every new phase, finished phase and status;
//! * `--progress none`: nothing.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use privset_protocols::{Meter, Reading};
use serde::Serialize;

/// How progress is shown (`--progress`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    /// A bar on a terminal, nothing otherwise.
    #[default]
    Auto,
    /// One JSON object per line on stderr.
    Json,
    /// Nothing.
    None,
}

static MODE: OnceLock<ProgressMode> = OnceLock::new();

/// Sets the mode for every [`Progress`] of this process (once, from the flags).
pub fn set_mode(mode: ProgressMode) {
    let _ = MODE.set(mode);
}

/// How often the ticker reads the meter.
const TICK: Duration = Duration::from_millis(100);
/// Longest gap between two JSON lines while a phase advances.
const JSON_EVERY: Duration = Duration::from_millis(500);

/// One JSON progress line.
#[derive(Debug, Serialize, PartialEq)]
pub struct Update<'a> {
    /// The party ("psi receiver", "pi-sum p1", ...).
    pub party: &'a str,
    /// What the driver last reported ("waiting for the sender's 1000 items", ...).
    pub status: &'a str,
    /// The bulk phase, as the protocol's docs name the step; absent before the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<&'a str>,
    /// Items of the phase done, and in total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Items per second in this phase so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Seconds left in this phase at that rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<f64>,
    /// Seconds since the party started.
    pub elapsed_seconds: f64,
}

/// What the ticker last showed, to decide what changed.
struct Seen {
    started: Instant,
    status: String,
    phase_number: u64,
    phase: &'static str,
    total: u64,
    phase_started: Instant,
    done: u64,
    /// The last phase was shown finished.
    finished: bool,
    last_json: Instant,
}

impl Seen {
    fn new(now: Instant) -> Self {
        Self {
            started: now,
            status: String::new(),
            phase_number: 0,
            phase: "",
            total: 0,
            phase_started: now,
            done: 0,
            finished: false,
            last_json: now,
        }
    }

    /// Items per second and seconds left in the current phase.
    fn rate_and_eta(&self, r: &Reading, now: Instant) -> (Option<f64>, Option<f64>) {
        let secs = now.duration_since(self.phase_started).as_secs_f64();
        if r.done == 0 || secs <= 0.0 {
            return (None, None);
        }
        let rate = r.done as f64 / secs;
        (Some(rate), Some((r.total - r.done) as f64 / rate))
    }
}

/// Decides which JSON lines are due and builds them: on a new status, a new phase, a
/// finished phase, or every [`JSON_EVERY`] while the phase advances. A phase that ended
/// and was followed by the next between two ticks is reported finished first (phases
/// run one after another, so a new phase means the last one is complete), and so is
/// every phase in `unseen` (`(name, total)`: phases that began and ended between two
/// ticks, [`Meter::ended_between`]).
fn json_updates<'a>(
    seen: &mut Seen,
    party: &'a str,
    status: &'a str,
    r: &Reading,
    unseen: &[(&'a str, u64)],
    now: Instant,
) -> Vec<Update<'a>> {
    let mut out = Vec::new();
    let elapsed_seconds = now.duration_since(seen.started).as_secs_f64();
    let new_phase = r.phase_number != seen.phase_number;
    if new_phase {
        let finished = |phase: &'a str, total: u64, rate: Option<f64>| Update {
            party,
            status,
            phase: Some(phase),
            done: Some(total),
            total: Some(total),
            rate,
            eta_seconds: Some(0.0),
            elapsed_seconds,
        };
        if seen.phase_number > 0 && !seen.finished {
            let secs = now.duration_since(seen.phase_started).as_secs_f64();
            let rate = (secs > 0.0).then(|| seen.total as f64 / secs);
            out.push(finished(seen.phase, seen.total, rate));
        }
        out.extend(
            unseen
                .iter()
                .map(|&(phase, total)| finished(phase, total, None)),
        );
        seen.phase_number = r.phase_number;
        seen.phase = r.phase;
        seen.total = r.total;
        seen.phase_started = now;
        seen.done = 0;
        seen.finished = false;
    }
    let finished_now = r.phase_number > 0 && !seen.finished && r.done == r.total;
    let advanced = r.done != seen.done && now.duration_since(seen.last_json) >= JSON_EVERY;
    let new_status = status != seen.status;
    if !(new_phase || finished_now || advanced || new_status) {
        return out;
    }
    seen.done = r.done;
    seen.finished |= finished_now;
    seen.last_json = now;
    if new_status {
        seen.status = status.to_string();
    }
    let has_phase = r.phase_number > 0;
    // A rate only while the phase runs and as it ends (later it would only decay).
    let (rate, eta) = if has_phase && (r.done < r.total || finished_now) {
        seen.rate_and_eta(r, now)
    } else {
        (None, None)
    };
    out.push(Update {
        party,
        status,
        phase: has_phase.then_some(r.phase),
        done: has_phase.then_some(r.done),
        total: has_phase.then_some(r.total),
        rate,
        eta_seconds: eta,
        elapsed_seconds,
    });
    out
}

/// What the driver thread and the ticker share.
struct Shared {
    label: String,
    status: Mutex<String>,
    meter: Option<Arc<Meter>>,
    stop: AtomicBool,
}

impl Shared {
    fn reading(&self) -> Reading {
        self.meter.as_ref().map_or(
            Reading {
                phase: "",
                phase_number: 0,
                done: 0,
                total: 0,
            },
            |m| m.read(),
        )
    }

    /// The phases that began and ended after phase `seen` and before `r`'s.
    fn unseen(&self, seen: u64, r: &Reading) -> Vec<(&'static str, u64)> {
        match &self.meter {
            Some(m) if r.phase_number > seen + 1 => m
                .ended_between(seen, r.phase_number)
                .into_iter()
                .map(|(_, phase, total)| (phase, total))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn status(&self) -> String {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The display for one party's run; [`Progress::finish`] stops it.
pub struct Progress {
    shared: Option<Arc<Shared>>,
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts showing the party `label`, whose bulk phases count into `meter`.
    pub fn new(label: &str, meter: Option<Arc<Meter>>) -> Self {
        let mode = *MODE.get().unwrap_or(&ProgressMode::Auto);
        let show = match mode {
            ProgressMode::Auto => std::io::stderr().is_terminal(),
            ProgressMode::Json => true,
            ProgressMode::None => false,
        };
        if !show {
            return Self {
                shared: None,
                ticker: None,
            };
        }
        let shared = Arc::new(Shared {
            label: label.to_string(),
            status: Mutex::new("starting".into()),
            meter,
            stop: AtomicBool::new(false),
        });
        let for_ticker = Arc::clone(&shared);
        let ticker = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || match mode {
                ProgressMode::Json => tick_json(&for_ticker),
                ProgressMode::Auto | ProgressMode::None => tick_bar(&for_ticker),
            })
            .ok();
        Self {
            shared: Some(shared),
            ticker,
        }
    }

    /// The driver's latest status (cheap: the ticker shows it at its next tick).
    pub fn status(&self, message: &str) {
        if let Some(shared) = &self.shared {
            *shared.status.lock().unwrap_or_else(|e| e.into_inner()) = message.to_string();
        }
    }

    /// Stops the display (after showing the last state).
    pub fn finish(&mut self) {
        if let Some(shared) = &self.shared {
            shared.stop.store(true, Ordering::Relaxed);
        }
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Sleeps one tick; false once the display should stop (after one last round).
fn keep_ticking(shared: &Shared) -> bool {
    if shared.stop.load(Ordering::Relaxed) {
        return false;
    }
    std::thread::sleep(TICK);
    true
}

fn tick_json(shared: &Shared) {
    let mut seen = Seen::new(Instant::now());
    let mut err = std::io::stderr();
    loop {
        let going = keep_ticking(shared);
        let status = shared.status();
        let reading = shared.reading();
        let unseen = shared.unseen(seen.phase_number, &reading);
        let updates = json_updates(
            &mut seen,
            &shared.label,
            &status,
            &reading,
            &unseen,
            Instant::now(),
        );
        for update in updates {
            if let Ok(line) = serde_json::to_string(&update) {
                // A closed stderr is not a reason to stop the party.
                let _ = writeln!(err, "{line}");
            }
        }
        if !going {
            return;
        }
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{prefix}: {msg} [{bar:30}] {human_pos}/{human_len} items, {rate}, {eta} left",
    )
    .map(|style| {
        style.with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            },
        )
    })
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ")
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} [{elapsed_precise}] {prefix}: {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// The line a finished phase leaves above the bar.
fn print_finished(
    bar: &ProgressBar,
    label: &str,
    phase: &str,
    total: u64,
    seen: &Seen,
    now: Instant,
) {
    let secs = now.duration_since(seen.phase_started).as_secs_f64();
    bar.println(format!("{label}: {phase}: {total} items in {secs:.1} s"));
}

fn tick_bar(shared: &Shared) {
    let bar = ProgressBar::new_spinner();
    bar.set_style(spinner_style());
    bar.set_prefix(shared.label.clone());
    let mut seen = Seen::new(Instant::now());
    let mut in_phase = false;
    loop {
        let going = keep_ticking(shared);
        let r = shared.reading();
        let now = Instant::now();
        if r.phase_number != seen.phase_number {
            if seen.phase_number > 0 && !seen.finished {
                // It ended between two ticks (phases run one after another).
                print_finished(&bar, &shared.label, seen.phase, seen.total, &seen, now);
            }
            for (phase, total) in shared.unseen(seen.phase_number, &r) {
                bar.println(format!("{}: {phase}: {total} items", shared.label));
            }
            // A new phase: the bar starts again (rate and time left are per phase).
            seen.phase_number = r.phase_number;
            seen.phase = r.phase;
            seen.total = r.total;
            seen.phase_started = now;
            seen.finished = false;
            bar.reset();
            bar.set_style(bar_style());
            bar.set_length(r.total);
            bar.set_message(r.phase);
            in_phase = true;
        }
        if in_phase {
            bar.set_position(r.done);
            if r.done == r.total && !seen.finished {
                seen.finished = true;
                print_finished(&bar, &shared.label, r.phase, r.total, &seen, now);
                in_phase = false;
                bar.set_style(spinner_style());
            }
        }
        if !in_phase {
            bar.set_message(shared.status());
            bar.tick();
        }
        if !going {
            bar.finish_and_clear();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(phase_number: u64, done: u64, total: u64) -> Reading {
        Reading {
            phase: "R1: hashing and evaluating our items",
            phase_number,
            done,
            total,
        }
    }

    fn one(updates: Vec<Update<'_>>) -> Option<Update<'_>> {
        assert!(updates.len() <= 1, "{updates:?}");
        updates.into_iter().next()
    }

    #[test]
    fn json_lines_come_for_new_phases_and_statuses_and_are_throttled() {
        let t0 = Instant::now();
        let mut seen = Seen::new(t0);
        let ms = |n| t0 + Duration::from_millis(n);
        let party = "psi receiver";
        // The first status is news; no phase yet.
        let u = one(json_updates(
            &mut seen,
            party,
            "starting",
            &reading(0, 0, 0),
            &[],
            ms(0),
        ))
        .expect("first status");
        assert_eq!((u.phase, u.done, u.total), (None, None, None));
        // A phase starts: a line at once.
        let r = reading(1, 0, 100);
        let u = one(json_updates(&mut seen, party, "starting", &r, &[], ms(100))).expect("phase");
        assert_eq!((u.done, u.total), (Some(0), Some(100)));
        // Progress within JSON_EVERY of the last line: throttled.
        let r = reading(1, 10, 100);
        assert!(json_updates(&mut seen, party, "starting", &r, &[], ms(200)).is_empty());
        // After JSON_EVERY: reported, with a rate (20 items in 0.5 s) and time left.
        let r = reading(1, 20, 100);
        let u = one(json_updates(&mut seen, party, "starting", &r, &[], ms(600))).expect("due");
        assert_eq!(u.rate, Some(40.0));
        assert_eq!(u.eta_seconds, Some(2.0));
        // The end of a phase is always reported, once.
        let r = reading(1, 100, 100);
        assert!(one(json_updates(&mut seen, party, "starting", &r, &[], ms(700))).is_some());
        assert!(json_updates(&mut seen, party, "starting", &r, &[], ms(2000)).is_empty());
        // A new status is reported at once, without a rate once the phase is over.
        let u = one(json_updates(&mut seen, party, "waiting", &r, &[], ms(2010))).expect("status");
        assert_eq!((u.status, u.rate), ("waiting", None));
        let line = serde_json::to_string(&u).expect("json");
        assert!(line.contains(r#""done":100,"total":100"#), "{line}");
    }

    #[test]
    fn a_phase_overtaken_between_two_ticks_is_reported_finished() {
        let t0 = Instant::now();
        let mut seen = Seen::new(t0);
        let ms = |n| t0 + Duration::from_millis(n);
        let first = reading(1, 5, 100);
        assert_eq!(
            json_updates(&mut seen, "p", "s", &first, &[], ms(0)).len(),
            1
        );
        let second = Reading {
            phase: "S1: evaluating the sender's items",
            ..reading(2, 0, 50)
        };
        let lines = json_updates(&mut seen, "p", "s", &second, &[], ms(1000));
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0].phase, Some("R1: hashing and evaluating our items"));
        assert_eq!((lines[0].done, lines[0].total), (Some(100), Some(100)));
        assert_eq!(lines[1].phase, Some("S1: evaluating the sender's items"));
        assert_eq!((lines[1].done, lines[1].total), (Some(0), Some(50)));
    }

    /// Phases that began and ended between two ticks (the meter remembers them) are
    /// reported finished, in order, before the current one.
    #[test]
    fn phases_never_seen_by_a_tick_are_reported_finished() {
        let t0 = Instant::now();
        let mut seen = Seen::new(t0);
        let third = Reading {
            phase: "third",
            ..reading(3, 1, 9)
        };
        let unseen = [("first", 10), ("second", 20)];
        let lines = json_updates(&mut seen, "p", "s", &third, &unseen, t0);
        let got: Vec<_> = lines.iter().map(|u| (u.phase, u.done, u.total)).collect();
        assert_eq!(
            got,
            [
                (Some("first"), Some(10), Some(10)),
                (Some("second"), Some(20), Some(20)),
                (Some("third"), Some(1), Some(9)),
            ]
        );
    }
}
