//! The `privset` command line: a thin face over `privset-protocols` and `privset-net`.
//! All protocol logic lives below it.

mod apsi_cmd;
mod batch;
mod bench;
mod connect;
mod datagen;
mod demo;
#[cfg(test)]
mod doc_commands;
mod input_args;
mod mpsi_cmd;
mod pi_sum_cmd;
mod progress;
mod pso_cmd;
mod run;
mod shared_args;
mod toy_cmd;
mod upsi_cmd;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use privset_protocols::pso::Operation;

// Shared with the Python package (crates/run), kept under their old paths here.
use privset_run::{fail, metrics};

use crate::fail::Failure;

/// Private set operations between organisations: each party learns the agreed answer
/// about the sets together (intersection size, sum over it, ...) and nothing else.
#[derive(Parser)]
#[command(name = "privset", version, about, long_about = None)]
struct Cli {
    /// How a long run shows its progress on stderr: a bar per phase on a terminal and
    /// nothing otherwise (auto), one JSON object per line for other programs, or nothing.
    #[arg(long, global = true, value_enum, default_value_t = progress::ProgressMode::Auto)]
    progress: progress::ProgressMode,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Private Intersection-Sum with Cardinality (Ion et al. 2020, Google's deployed DDH protocol).
    PiSum(Box<pi_sum_cmd::PiSumArgs>),
    /// PSI (Chen et al. 2024, Fig. 7): the receiver learns the intersection.
    Psi(Box<pso_cmd::PsoArgs>),
    /// PSI-cardinality (Chen et al. 2024, Fig. 7): the receiver learns the intersection's size.
    PsiCard(Box<pso_cmd::PsoArgs>),
    /// PSI-card-sum (Chen et al. 2024, Fig. 7): both learn the intersection's size, the sender
    /// (the value holder) its values' sum over it.
    PsiCardSum(Box<pso_cmd::PsoArgs>),
    /// PSU (Chen et al. 2024, Fig. 7): the receiver learns the union.
    Psu(Box<pso_cmd::PsoArgs>),
    /// Secret-shared intersection (Chen et al. 2024, Fig. 7, card-secret-sharing): both get XOR
    /// shares of each intersection element; the receiver learns the size.
    PsiShare(Box<pso_cmd::PsoArgs>),
    /// Private-ID (Chen et al. 2024, Sec. 6.2): both get a shared pseudorandom ID space.
    PrivateId(Box<pso_cmd::PsoArgs>),
    /// The judge of authorized PSI (Falzon and Markatou): key generation, and serving clients'
    /// authorizations under a policy.
    Judge {
        #[command(subcommand)]
        which: apsi_cmd::JudgeCommand,
    },
    /// Authorized PSI and Partial-APSI (Falzon and Markatou): authorize a set with the judge,
    /// serve a set, intersect authorized items with a server's set.
    Apsi {
        #[command(subcommand)]
        which: apsi_cmd::ApsiCommand,
    },
    /// Unbalanced labeled PSI (Cong et al. 2021): a server's large database, built once
    /// and updated in place, queried by clients with up to 4,096 items, who learn which
    /// are in it and their labels.
    Upsi {
        #[command(subcommand)]
        which: upsi_cmd::UpsiCommand,
    },
    /// Make a throwaway CA and per-party certificates for trying privset out.
    Certs {
        /// Directory to write ca.pem and NAME.pem / NAME.key into.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Comma-separated party names.
        #[arg(
            long,
            value_name = "A,B",
            value_delimiter = ',',
            default_value = "p1,p2"
        )]
        names: Vec<String>,
    },
    /// Both parties on loopback over mutual TLS with generated data: prints the answer,
    /// bytes, time and cost.
    Demo(demo::DemoArgs),
    /// Benchmarks, printed in the shape of the seed papers' tables.
    Bench {
        #[command(subcommand)]
        which: bench::BenchCommand,
    },
    /// The toy sum among N participants (star or mesh): each holds a number, all learn
    /// the total. Nothing is hidden; it tests n-party links end to end.
    ToySum(Box<toy_cmd::ToySumArgs>),
    /// Multi-party PSI among 3 to 255 participants, each its own process (de Jong's thesis:
    /// Bay et al., Miyaji-Nishida, Hazay-Venkitasubramaniam) on threshold ElGamal or
    /// threshold Paillier.
    Mpsi(Box<mpsi_cmd::MpsiArgs>),
    /// The trusted dealer of threshold Paillier for `privset mpsi --scheme paillier`:
    /// makes a key for the set holders of a parties file (every participant but the
    /// first), writes DIR/public.key and DIR/NAME.key for each holder (give each its
    /// own, privately), and keeps nothing.
    MpsiDeal(mpsi_cmd::DealArgs),
    /// Run many exchange-directory executions (a directory of job specs) with bounded
    /// concurrency, then print a summary table: the 1,000-runs-a-day deployment.
    Batch(batch::BatchArgs),
}

fn run_pso(operation: Operation, args: &pso_cmd::PsoArgs) -> Result<(), Failure> {
    let report = pso_cmd::run(operation, args)?;
    let shown = |v: Option<u64>| v.map_or("-".to_string(), |c| c.to_string());
    eprintln!(
        "{} {}: cardinality {}, sum {}, rows {}, {} bytes sent, {} received, {:.2} s CPU, {:.2} s wall -> {}",
        report.protocol,
        report.role,
        shown(report.cardinality),
        report.sum.map_or("-".to_string(), |s| s.to_string()),
        shown(report.rows.map(|r| r as u64)),
        report.run.bytes_sent,
        report.run.bytes_received,
        report.run.cpu_seconds,
        report.run.wall_seconds,
        args.output.display()
    );
    Ok(())
}

fn main() {
    if std::env::args()
        .nth(1)
        .is_some_and(|a| a == "--version" || a == "-V")
    {
        // The version and which code this CPU gets (the build is portable; the fast
        // paths are chosen at run time: crates/crypto/src/cpu.rs).
        println!("privset {}", env!("CARGO_PKG_VERSION"));
        println!("{}", privset_crypto::cpu::report());
        return;
    }
    let cli = Cli::parse();
    progress::set_mode(cli.progress);
    let result = match cli.command {
        Command::PiSum(args) => pi_sum_cmd::run(&args).map(|report| {
            eprintln!(
                "pi-sum {}: cardinality {}, {} bytes sent, {} received, {:.2} s CPU, {:.2} s wall -> {}",
                report.output.role,
                report.output.cardinality.map_or("(not revealed)".into(), |c| c.to_string()),
                report.run.bytes_sent,
                report.run.bytes_received,
                report.run.cpu_seconds,
                report.run.wall_seconds,
                args.output.display()
            );
        }),
        Command::Psi(args) => run_pso(Operation::Psi, &args),
        Command::PsiCard(args) => run_pso(Operation::PsiCard, &args),
        Command::PsiCardSum(args) => run_pso(Operation::PsiCardSum, &args),
        Command::Psu(args) => run_pso(Operation::Psu, &args),
        Command::PsiShare(args) => run_pso(Operation::PsiShare, &args),
        Command::PrivateId(args) => run_pso(Operation::PrivateId, &args),
        Command::Judge { which } => apsi_cmd::run_judge(&which),
        Command::Apsi { which } => apsi_cmd::run_apsi(&which),
        Command::Upsi { which } => upsi_cmd::run(&which),
        Command::Certs { out, names } => privset_net::certs::generate(&out, &names)
            .map(|files| {
                for f in files {
                    println!("{}", f.display());
                }
            })
            .map_err(Failure::from),
        Command::Demo(args) => demo::run(&args),
        Command::Bench { which } => bench::run(&which),
        Command::Batch(args) => batch::run(&args),
        Command::ToySum(args) => toy_cmd::run(&args).map(|report| {
            eprintln!(
                "toy-sum {} of {} ({}): total {}, {} bytes sent, {} received, {:.2} s wall -> {}",
                report.me,
                report.parties,
                report.form,
                report.total,
                report.run.bytes_sent,
                report.run.bytes_received,
                report.run.wall_seconds,
                args.output.display()
            );
        }),
        Command::MpsiDeal(args) => mpsi_cmd::deal(&args),
        Command::Mpsi(args) => mpsi_cmd::run(&args).map(|report| {
            let learned = report
                .intersection_size
                .map_or("learns nothing".to_string(), |n| format!("intersection {n}"));
            eprintln!(
                "mpsi {} {} ({}): {learned}, {} bytes sent, {} received, {:.2} s wall -> {}",
                report.mpsi_protocol,
                report.name,
                report.role,
                report.run.bytes_sent,
                report.run.bytes_received,
                report.run.wall_seconds,
                args.output.display()
            );
        }),
    };
    if let Err(failure) = result {
        eprintln!("privset: {}", failure.message);
        std::process::exit(failure.exit_code());
    }
}
