//! Killed parties over an exchange directory: both parties of pi-sum and psi-card-sum,
//! and the three participants of each multi-party PSI (de Jong's thesis: Bay et al.,
//! Miyaji-Nishida, Hazay-Venkitasubramaniam), run as real processes; one or several are
//! killed with SIGKILL at random moments (possibly several times) and restarted at once
//! with the same command. Every run must end with every RESULT.json giving the
//! plaintext answer computed here from the generated inputs (for mpsi, the learners'
//! rows files holding exactly the plaintext intersection). The full two-party count
//! (20 runs each at 5,000 a side) is `scripts/kill_resume.sh`; its figures are in
//! docs/reliability.md.
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
    /// Multi-party PSI with [`MPSI_PARTIES`] participants, by protocol name.
    Mpsi(&'static str),
}

/// Participants of each multi-party run: the coordinator and two set holders.
const MPSI_PARTIES: usize = 3;

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::PiSum => "pi-sum",
            Op::PsiCardSum => "psi-card-sum",
            Op::Mpsi(protocol) => protocol,
        }
    }
    /// Role names, which name each party's files: (holder of `a.csv`, holder of
    /// `b.csv` with the values), or the mpsi participants' names in the parties file.
    fn roles(self) -> Vec<&'static str> {
        match self {
            Op::PiSum => vec!["p1", "p2"],
            Op::PsiCardSum => vec!["receiver", "sender"],
            Op::Mpsi(_) => ["org0", "org1", "org2"][..MPSI_PARTIES].to_vec(),
        }
    }
}

/// The mpsi role of participant `which` (the first is the coordinator).
fn mpsi_role(protocol: &str, which: usize) -> &'static str {
    match (protocol, which) {
        ("miyaji-nishida", 0) => "dealer",
        ("miyaji-nishida", _) => "party",
        (_, 0) => "server",
        _ => "client",
    }
}

/// Whether mpsi participant `which` learns the intersection.
fn mpsi_learns(protocol: &str, which: usize) -> bool {
    matches!(mpsi_role(protocol, which), "server" | "party")
}

/// The command line of one mpsi participant; the same for every restart.
fn mpsi_args(protocol: &'static str, dir: &Path, which: usize) -> Vec<String> {
    let name = Op::Mpsi(protocol).roles()[which];
    let s = |p: PathBuf| p.display().to_string();
    let mut a: Vec<String> = vec![
        "mpsi".into(),
        "--protocol".into(),
        protocol.into(),
        "--role".into(),
        mpsi_role(protocol, which).into(),
        "--name".into(),
        name.into(),
        "--parties".into(),
        s(dir.join("parties.toml")),
        "--exchange-dir".into(),
        s(dir.join("exchange")),
        "--poll-interval-ms".into(),
        "5".into(),
        "--timeout".into(),
        "120".into(),
        "--state-dir".into(),
        s(dir.join(format!("state-{name}"))),
        "--output".into(),
        s(dir.join(format!("{name}.json"))),
    ];
    if mpsi_role(protocol, which) != "dealer" {
        a.extend([
            "--input".into(),
            s(dir.join(format!("{name}.csv"))),
            "--id-column".into(),
            "id".into(),
        ]);
    }
    if mpsi_learns(protocol, which) {
        a.extend([
            "--output-rows".into(),
            s(dir.join(format!("{name}-rows.csv"))),
        ]);
    }
    a
}

/// Writes the parties file and every set holder's `<name>.csv` (column `id`, `n`
/// random identifiers, `overlap` of them held by every holder, the rest fresh, in
/// random order); returns the plaintext intersection.
fn write_mpsi_inputs(
    protocol: &'static str,
    dir: &Path,
    n: usize,
    overlap: usize,
    rng: &mut Rng,
) -> HashSet<String> {
    let names = Op::Mpsi(protocol).roles();
    let mut toml = String::new();
    for name in &names {
        toml.push_str(&format!("[[party]]\nname = \"{name}\"\n"));
    }
    std::fs::write(dir.join("parties.toml"), toml).unwrap();
    let mut seen = HashSet::new();
    let mut fresh = |rng: &mut Rng| loop {
        let id = format!("{:016x}", rng.next());
        if seen.insert(id.clone()) {
            return id;
        }
    };
    let shared: Vec<String> = (0..overlap).map(|_| fresh(rng)).collect();
    for (which, name) in names.iter().enumerate() {
        if mpsi_role(protocol, which) == "dealer" {
            continue;
        }
        let mut set = shared.clone();
        set.extend((overlap..n).map(|_| fresh(rng)));
        shuffle(&mut set, rng);
        let text: String = std::iter::once("id".to_string())
            .chain(set)
            .map(|l| l + "\n")
            .collect();
        std::fs::write(dir.join(format!("{name}.csv")), text).unwrap();
    }
    shared.into_iter().collect()
}

/// The plaintext answer a run must give.
enum Want {
    /// (cardinality, sum of b's values over the intersection).
    CardSum(u64, u64),
    /// The intersection every learner's rows file must hold.
    Intersection(HashSet<String>),
}

/// The command line of one party; the same for every restart.
fn party_args(op: Op, dir: &Path, which: usize) -> Vec<String> {
    if let Op::Mpsi(protocol) = op {
        return mpsi_args(protocol, dir, which);
    }
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

/// Runs every party of `op` once, killing per `kills` (per party: delays from the
/// start of each of its processes). Returns the landed kills and the wall time.
fn run_once(
    op: Op,
    dir: &Path,
    kills: Vec<Vec<Duration>>,
    want: &Want,
) -> Result<(Vec<String>, Duration), String> {
    let parties: Vec<Party> = (0..op.roles().len())
        .map(|which| Party {
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
        })
        .collect();
    let mut g = Guard(parties);
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
    check_answer(op, dir, &g.0, want)?;
    let landed =
        g.0.iter()
            .flat_map(|p| p.landed.iter().map(move |k| format!("{}@{k}", p.role)))
            .collect();
    Ok((landed, wall))
}

/// Checks every party's RESULT.json (and mpsi learners' rows) against `want`.
fn check_answer(op: Op, dir: &Path, parties: &[Party], want: &Want) -> Result<(), String> {
    let results = parties
        .iter()
        .map(|p| result(&p.output).ok_or(format!("{} wrote no result", p.role)))
        .collect::<Result<Vec<_>, _>>()?;
    match (op, want) {
        (Op::Mpsi(protocol), Want::Intersection(want)) => {
            for (which, (p, r)) in parties.iter().zip(&results).enumerate() {
                if !mpsi_learns(protocol, which) {
                    if !r["intersection_size"].is_null() {
                        return Err(format!("{} learned an intersection size", p.role));
                    }
                    continue;
                }
                let rows = std::fs::read_to_string(dir.join(format!("{}-rows.csv", p.role)))
                    .map_err(|e| format!("{}'s rows: {e}", p.role))?;
                let got: HashSet<String> = rows.lines().skip(1).map(str::to_string).collect();
                if &got != want || r["intersection_size"].as_u64() != Some(want.len() as u64) {
                    return Err(format!(
                        "wrong answer at {}: {} rows (intersection_size {}), want {} (the plaintext intersection)",
                        p.role,
                        got.len(),
                        r["intersection_size"],
                        want.len()
                    ));
                }
            }
            Ok(())
        }
        (_, &Want::CardSum(card, sum)) => {
            let (ra, rb) = (&results[0], &results[1]);
            let got = match op {
                Op::PiSum => (
                    ra["cardinality"].as_u64(),
                    rb["cardinality"].as_u64(),
                    rb["sums"][0].as_u64(),
                ),
                _ => (
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
            Ok(())
        }
        _ => unreachable!("every operation has its kind of answer"),
    }
}

/// The inputs of one run in `dir`, and the plaintext answer.
fn write_run_inputs(op: Op, dir: &Path, n: usize, overlap: usize, rng: &mut Rng) -> Want {
    match op {
        Op::Mpsi(protocol) => Want::Intersection(write_mpsi_inputs(protocol, dir, n, overlap, rng)),
        _ => {
            let (card, sum) = write_inputs(dir, n, overlap, rng);
            Want::CardSum(card, sum)
        }
    }
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
    let parties = op.roles().len();
    let want = write_run_inputs(op, &base, n, n * 2 / 5, &mut rng);
    let (_, clean) = run_once(op, &base, vec![vec![]; parties], &want)
        .unwrap_or_else(|e| panic!("{} clean run (seed {seed}): {e}", op.name()));
    eprintln!("{}: clean run {:.2}s", op.name(), clean.as_secs_f64());
    let mut total_landed = 0;
    for run in 0..runs {
        let dir = root.join(format!("run-{run}"));
        std::fs::create_dir_all(&dir).unwrap();
        let overlap = 1 + rng.below(n as u64 - 1) as usize;
        let want = write_run_inputs(op, &dir, n, overlap, &mut rng);
        // One party (any) or all; one to three kills each, each at a uniform moment
        // within 80% of a clean run after the start of that party's current process.
        let victims: Vec<bool> = match rng.below(parties as u64 + 1) as usize {
            all if all == parties => vec![true; parties],
            one => (0..parties).map(|p| p == one).collect(),
        };
        let window = clean.as_secs_f64() * 0.8;
        let kills: Vec<Vec<Duration>> = victims
            .iter()
            .map(|&v| {
                let count = if v { 1 + rng.below(3) } else { 0 };
                (0..count)
                    .map(|_| Duration::from_secs_f64(window * rng.unit()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let plan = format!("{kills:?}");
        let (landed, wall) = run_once(op, &dir, kills, &want).unwrap_or_else(|e| {
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

#[test]
fn bay_survives_killed_participants() {
    kill_and_resume(Op::Mpsi("bay"), 4, 200);
}

#[test]
fn miyaji_nishida_survives_killed_participants() {
    kill_and_resume(Op::Mpsi("miyaji-nishida"), 4, 200);
}

#[test]
fn hazay_survives_killed_participants() {
    kill_and_resume(Op::Mpsi("hazay"), 4, 200);
}
