//! Killed parties over an exchange directory: both parties of pi-sum and psi-card-sum
//! run as real processes; one or both are killed with SIGKILL at random moments
//! (possibly several times) and restarted at once with the same command. Every run must
//! end with both RESULT.json files giving the plaintext answer computed here from the
//! generated inputs. The full count (20 runs each at 5,000 a side) is
//! `scripts/kill_resume.sh`; its figures are in docs/reliability.md.
//!
//! The kill schedule comes from a seed printed at the start of each test; rerun with
//! `PRIVSET_KILL_SEED=<seed>` to replay the same inputs and kill delays.

#![cfg(unix)]

use std::collections::HashSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_privset");
/// No run may take longer than this, restarts included.
const RUN_DEADLINE: Duration = Duration::from_secs(180);
const VALUE_BOUND: u64 = 1_000_000;
const SIGKILL: i32 = 9;

/// SplitMix64: enough randomness for inputs and kill moments, reproducible from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn test_seed() -> u64 {
    match std::env::var("PRIVSET_KILL_SEED") {
        Ok(s) => s.parse().expect("PRIVSET_KILL_SEED must be a u64"),
        Err(_) => {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            t.as_nanos() as u64 ^ ((std::process::id() as u64) << 32)
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("privset-kill-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `a.csv` (column `id`) and `b.csv` (columns `id,value`) with `n` random
/// identifiers each, `overlap` of them shared, in random order; returns the plaintext
/// (cardinality, sum of b's values over the intersection).
fn write_inputs(dir: &Path, n: usize, overlap: usize, rng: &mut Rng) -> (u64, u64) {
    let mut seen = HashSet::new();
    let mut fresh = |rng: &mut Rng| loop {
        let id = format!("{:016x}@example.org", rng.next());
        if seen.insert(id.clone()) {
            return id;
        }
    };
    let shared: Vec<String> = (0..overlap).map(|_| fresh(rng)).collect();
    let mut a: Vec<String> = shared.clone();
    a.extend((overlap..n).map(|_| fresh(rng)));
    let mut b: Vec<(String, u64, bool)> = shared
        .iter()
        .map(|id| (id.clone(), rng.below(VALUE_BOUND + 1), true))
        .collect();
    b.extend((overlap..n).map(|_| (fresh(rng), rng.below(VALUE_BOUND + 1), false)));
    shuffle(&mut a, rng);
    shuffle(&mut b, rng);
    let sum = b.iter().filter(|r| r.2).map(|r| r.1).sum();
    let mut text = String::from("id\n");
    for id in &a {
        text.push_str(id);
        text.push('\n');
    }
    std::fs::write(dir.join("a.csv"), text).unwrap();
    let mut text = String::from("id,value\n");
    for (id, v, _) in &b {
        text.push_str(&format!("{id},{v}\n"));
    }
    std::fs::write(dir.join("b.csv"), text).unwrap();
    (overlap as u64, sum)
}

fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    PiSum,
    PsiCardSum,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::PiSum => "pi-sum",
            Op::PsiCardSum => "psi-card-sum",
        }
    }
    /// Role names: (holder of `a.csv`, holder of `b.csv` with the values).
    fn roles(self) -> [&'static str; 2] {
        match self {
            Op::PiSum => ["p1", "p2"],
            Op::PsiCardSum => ["receiver", "sender"],
        }
    }
}

/// The command line of one party; the same for every restart.
fn party_args(op: Op, dir: &Path, which: usize) -> Vec<String> {
    let role = op.roles()[which];
    let mut a: Vec<String> = vec![op.name().into(), "--role".into(), role.into()];
    let s = |p: PathBuf| p.display().to_string();
    a.extend([
        "--exchange-dir".into(),
        s(dir.join("exchange")),
        "--poll-interval-ms".into(),
        "5".into(),
        "--timeout".into(),
        "120".into(),
        // Each organisation keeps its resume seed in its own private directory.
        "--state-dir".into(),
        s(dir.join(format!("state-{role}"))),
        "--input".into(),
        s(dir.join(if which == 0 { "a.csv" } else { "b.csv" })),
        "--id-column".into(),
        "id".into(),
        "--output".into(),
        s(dir.join(format!("{role}.json"))),
    ]);
    if which == 1 {
        a.extend([
            "--value-column".into(),
            "value".into(),
            "--value-bound".into(),
            VALUE_BOUND.to_string(),
        ]);
    }
    if op == Op::PiSum {
        a.extend(["--he-modulus-bits".into(), "1024".into()]);
    }
    a
}

/// A complete RESULT.json, if the party has written one.
fn result(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// One party under supervision: its current process, and its kill schedule.
struct Party {
    role: &'static str,
    args: Vec<String>,
    output: PathBuf,
    dir: PathBuf,
    child: Option<Child>,
    started: Instant,
    attempt: u32,
    /// Delays (from the start of the current process) of the kills still to come.
    kills: Vec<Duration>,
    landed: Vec<String>,
    done: bool,
}

impl Party {
    fn spawn(&mut self) {
        self.attempt += 1;
        let err = std::fs::File::create(self.stderr_path()).unwrap();
        self.child = Some(
            Command::new(BIN)
                .args(&self.args)
                .stdout(Stdio::null())
                .stderr(err)
                .spawn()
                .unwrap(),
        );
        self.started = Instant::now();
    }

    fn stderr_path(&self) -> PathBuf {
        self.dir
            .join(format!("{}.attempt{}.stderr", self.role, self.attempt))
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_path()).unwrap_or_default()
    }

    /// Advances the party: notices its exit, or kills and restarts it when due.
    /// Returns an error message if its process failed.
    fn step(&mut self, t0: Instant) -> Result<(), String> {
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        if let Some(status) = child.try_wait().unwrap() {
            self.child = None;
            return self.exited(status);
        }
        let Some(&due) = self.kills.first() else {
            return Ok(());
        };
        if self.started.elapsed() < due {
            return Ok(());
        }
        self.kills.remove(0);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        self.child = None;
        if status.signal() != Some(SIGKILL) {
            return self.exited(status); // it finished just before the kill
        }
        let at = t0.elapsed().as_secs_f64();
        if result(&self.output).is_some() {
            // Killed after writing its result (and perhaps removing its seed): the
            // party has finished; an operator sees the result and does not rerun it.
            self.landed.push(format!("{at:.2}s(after result)"));
            self.done = true;
            return Ok(());
        }
        self.landed.push(format!("{at:.2}s"));
        self.spawn();
        Ok(())
    }

    fn exited(&mut self, status: ExitStatus) -> Result<(), String> {
        self.done = true;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} (attempt {}) failed with {status}: {}",
                self.role,
                self.attempt,
                self.stderr()
            ))
        }
    }
}

/// Kills every process still running when a run ends, however it ends.
struct Guard(Vec<Party>);

impl Drop for Guard {
    fn drop(&mut self) {
        for p in &mut self.0 {
            if let Some(c) = p.child.as_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// Runs both parties of `op` once, killing per `kills` (per party: delays from the
/// start of each of its processes). Returns the landed kills and the wall time.
fn run_once(
    op: Op,
    dir: &Path,
    kills: [Vec<Duration>; 2],
    want: (u64, u64),
) -> Result<(Vec<String>, Duration), String> {
    let parties = [0, 1].map(|which| Party {
        role: op.roles()[which],
        args: party_args(op, dir, which),
        output: dir.join(format!("{}.json", op.roles()[which])),
        dir: dir.to_path_buf(),
        child: None,
        started: Instant::now(),
        attempt: 0,
        kills: kills[which].clone(),
        landed: Vec::new(),
        done: false,
    });
    let mut g = Guard(parties.into());
    let t0 = Instant::now();
    for p in &mut g.0 {
        p.spawn();
    }
    while !g.0.iter().all(|p| p.done) {
        if t0.elapsed() > RUN_DEADLINE {
            return Err(format!("run did not finish within {RUN_DEADLINE:?}"));
        }
        for p in &mut g.0 {
            p.step(t0)?;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let wall = t0.elapsed();
    let [ra, rb] = [0, 1].map(|i| result(&g.0[i].output));
    let (ra, rb) = (
        ra.ok_or("first party wrote no result")?,
        rb.ok_or("second party wrote no result")?,
    );
    let (card, sum) = want;
    let got = match op {
        Op::PiSum => (
            ra["cardinality"].as_u64(),
            rb["cardinality"].as_u64(),
            rb["sums"][0].as_u64(),
        ),
        Op::PsiCardSum => (
            ra["cardinality"].as_u64(),
            rb["cardinality"].as_u64(),
            rb["sum"].as_u64(),
        ),
    };
    if got != (Some(card), Some(card), Some(sum)) {
        return Err(format!(
            "wrong answer: got (cardinality, cardinality, sum) = {got:?}, want ({card}, {card}, {sum})"
        ));
    }
    let landed =
        g.0.iter()
            .flat_map(|p| p.landed.iter().map(move |k| format!("{}@{k}", p.role)))
            .collect();
    Ok((landed, wall))
}

/// `runs` runs of `op` at `n` a side: a clean run first (the answer without kills, and
/// the run time that bounds the kill moments), then killed runs.
fn kill_and_resume(op: Op, runs: usize, n: usize) {
    let seed = test_seed();
    eprintln!(
        "{}: seed {seed} (PRIVSET_KILL_SEED={seed} replays it)",
        op.name()
    );
    let mut rng = Rng(seed);
    let root = scratch(op.name());
    let base = root.join("clean");
    std::fs::create_dir_all(&base).unwrap();
    let want = write_inputs(&base, n, n * 2 / 5, &mut rng);
    let (_, clean) = run_once(op, &base, [vec![], vec![]], want)
        .unwrap_or_else(|e| panic!("{} clean run (seed {seed}): {e}", op.name()));
    eprintln!("{}: clean run {:.2}s", op.name(), clean.as_secs_f64());
    let mut total_landed = 0;
    for run in 0..runs {
        let dir = root.join(format!("run-{run}"));
        std::fs::create_dir_all(&dir).unwrap();
        let overlap = 1 + rng.below(n as u64 - 1) as usize;
        let want = write_inputs(&dir, n, overlap, &mut rng);
        // One party (either) or both; one to three kills each, each at a uniform moment
        // within 80% of a clean run after the start of that party's current process.
        let victims = match rng.below(3) {
            0 => [true, false],
            1 => [false, true],
            _ => [true, true],
        };
        let window = clean.as_secs_f64() * 0.8;
        let kills = victims.map(|v| {
            let count = if v { 1 + rng.below(3) } else { 0 };
            (0..count)
                .map(|_| Duration::from_secs_f64(window * rng.unit()))
                .collect::<Vec<_>>()
        });
        let plan = format!("{kills:?}");
        let (landed, wall) = run_once(op, &dir, kills, want).unwrap_or_else(|e| {
            panic!(
                "{} run {run} (seed {seed}, kill plan {plan}): {e}",
                op.name()
            )
        });
        eprintln!(
            "{} run {run}: n={n} overlap={overlap} plan={plan} landed=[{}] wall={:.2}s ok",
            op.name(),
            landed.join(" "),
            wall.as_secs_f64()
        );
        total_landed += landed.len();
    }
    // Kill moments are random: require that about half the runs saw a kill land on a
    // running party (one per run was too strict: seed 1795604989962044839 landed 4 in 5).
    assert!(
        total_landed * 2 >= runs,
        "only {total_landed} kills landed on a running party in {runs} runs (seed {seed})"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn pi_sum_survives_killed_parties() {
    kill_and_resume(Op::PiSum, 5, 2000);
}

#[test]
fn psi_card_sum_survives_killed_parties() {
    kill_and_resume(Op::PsiCardSum, 5, 2000);
}
