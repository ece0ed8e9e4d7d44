//! `privset batch`: many PI-Sum executions over shared storage (Ion et al. 2020, Sec. 2.4).
//!
//! A job spec is a JSON file in the jobs directory, one per execution and per party:
//! an object whose keys are `privset pi-sum` flags without the dashes, for example
//! `{"role": "p1", "exchange-dir": "shared/run-0001", "input": "p1-0001.csv",
//! "id-column": "id", "output": "results/p1-0001.json"}`. Arrays repeat a flag
//! (`"value-column": ["spend", "count"]`), `true` sets a switch. Relative paths are
//! relative to the jobs directory. Each organisation runs `privset batch` on its own
//! job specs; the two sides meet in the exchange directories.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::{Args, Parser};

use crate::fail::Failure;
use crate::pi_sum_cmd::{self, PiSumArgs, PiSumReport};

#[derive(Args, Debug)]
pub struct BatchArgs {
    /// Directory of job specs (*.json).
    #[arg(long, value_name = "DIR")]
    pub jobs: PathBuf,
    /// Executions running at once.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
}

/// Parses a job spec into the flags of `privset pi-sum`.
#[derive(Parser, Debug)]
#[command(name = "privset pi-sum", no_binary_name = true)]
struct JobCli {
    #[command(flatten)]
    args: PiSumArgs,
}

const PATH_FLAGS: [&str; 7] = [
    "input",
    "output",
    "exchange-dir",
    "state-dir",
    "tls-ca",
    "tls-cert",
    "tls-key",
];

fn job_args(spec_path: &Path) -> Result<PiSumArgs, Failure> {
    let base = spec_path.parent().unwrap_or(Path::new("."));
    let text = std::fs::read_to_string(spec_path)?;
    let spec: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Failure::input(format!("{}: not JSON: {e}", spec_path.display())))?;
    let object = spec.as_object().ok_or_else(|| {
        Failure::input(format!(
            "{}: a job spec is a JSON object of pi-sum flags",
            spec_path.display()
        ))
    })?;
    let mut argv: Vec<String> = Vec::new();
    for (key, value) in object {
        let flag = format!("--{key}");
        let render = |v: &serde_json::Value| -> Result<String, Failure> {
            let s = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                _ => {
                    return Err(Failure::input(format!(
                        "{}: bad value for {key}",
                        spec_path.display()
                    )));
                }
            };
            Ok(if PATH_FLAGS.contains(&key.as_str()) {
                base.join(s).display().to_string()
            } else {
                s
            })
        };
        match value {
            serde_json::Value::Bool(true) => argv.push(flag),
            serde_json::Value::Bool(false) => {}
            serde_json::Value::Array(items) => {
                for item in items {
                    argv.push(flag.clone());
                    argv.push(render(item)?);
                }
            }
            other => {
                argv.push(flag);
                argv.push(render(other)?);
            }
        }
    }
    JobCli::try_parse_from(argv)
        .map(|j| j.args)
        .map_err(|e| Failure::input(format!("{}: {}", spec_path.display(), e.to_string().trim())))
}

pub fn run(args: &BatchArgs) -> Result<(), Failure> {
    let mut specs: Vec<PathBuf> = std::fs::read_dir(&args.jobs)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", args.jobs.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    specs.sort();
    if specs.is_empty() {
        return Err(Failure::input(format!(
            "no *.json job specs in {}",
            args.jobs.display()
        )));
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(PathBuf, Result<PiSumReport, Failure>)>> = Mutex::new(Vec::new());
    let workers = args.concurrency.clamp(1, specs.len());
    eprintln!("privset batch: {} jobs, {workers} at a time", specs.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(spec) = specs.get(i) else { break };
                    let outcome = job_args(spec).and_then(|a| pi_sum_cmd::run(&a));
                    let status = match &outcome {
                        Ok(_) => "ok".to_string(),
                        Err(f) => format!("FAILED: {}", f.message),
                    };
                    eprintln!("  [{}/{}] {}: {status}", i + 1, specs.len(), spec.display());
                    results
                        .lock()
                        .expect("results lock")
                        .push((spec.clone(), outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("results lock");
    results.sort_by(|a, b| a.0.cmp(&b.0));
    print_summary(&results);
    let failed = results.iter().filter(|r| r.1.is_err()).count();
    if failed > 0 {
        Err(Failure::other(format!(
            "{failed} of {} jobs failed",
            results.len()
        )))
    } else {
        Ok(())
    }
}

fn print_summary(results: &[(PathBuf, Result<PiSumReport, Failure>)]) {
    println!(
        "{:<28} {:>4} {:>7} {:>12} {:>16} {:>12} {:>12} {:>8} {:>8} {:>9}",
        "job",
        "role",
        "status",
        "cardinality",
        "sum",
        "sent",
        "received",
        "cpu s",
        "wall s",
        "cents"
    );
    let (mut cpu, mut bytes, mut cents) = (0.0, 0u64, 0.0);
    for (spec, r) in results {
        let name = spec
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        match r {
            Ok(rep) => {
                cpu += rep.run.cpu_seconds;
                bytes += rep.run.bytes_sent;
                cents += rep.run.cost_cents;
                println!(
                    "{:<28} {:>4} {:>7} {:>12} {:>16} {:>12} {:>12} {:>8.2} {:>8.2} {:>9.5}",
                    name,
                    rep.output.role,
                    if rep.output.aborted { "aborted" } else { "ok" },
                    rep.output.cardinality.map_or("-".into(), |c| c.to_string()),
                    rep.output.sums.as_ref().map_or("-".into(), |s| s
                        .iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(";")),
                    rep.run.bytes_sent,
                    rep.run.bytes_received,
                    rep.run.cpu_seconds,
                    rep.run.wall_seconds,
                    rep.run.cost_cents
                );
            }
            Err(f) => println!("{name:<28} {:>4} FAILED  {}", "", f.message),
        }
    }
    println!(
        "total: {} jobs, {} failed, {:.2} CPU s (process-wide, shared by concurrent jobs), {} bytes sent, {:.5} cents",
        results.len(),
        results.iter().filter(|r| r.1.is_err()).count(),
        cpu,
        bytes,
        cents
    );
}
