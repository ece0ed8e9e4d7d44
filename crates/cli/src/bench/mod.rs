//! `privset bench`: each protocol family's parties as separate processes, printed
//! beside its paper's tables (and, for some, beside the peers measured in the same run).

mod apsi;
mod mpsi;
mod pairs;
mod pi_sum;
mod pso;
mod upsi;

use std::path::PathBuf;

use clap::Subcommand;

use crate::fail::Failure;
use pi_sum::PiSumGrid;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// The set operations of Chen et al. 2024 (Tables 1-7), optionally beside OpenMined PSI and
    /// SecretFlow's ECDH-PSI.
    Pso(pso::PsoBenchArgs),
    /// APSI and Partial-APSI (Falzon and Markatou, Table 3): judge, client and server per phase,
    /// and each party's CPU per item against the measured floor.
    Apsi(apsi::ApsiBenchArgs),
    /// Multi-party PSI (de Jong, Table 7.4's tests): every participant its own process;
    /// CPU, bytes, wall, memory and cost per role, and Table 7.5's comparison.
    Mpsi(mpsi::MpsiBenchArgs),
    /// Unbalanced labeled PSI (Cong et al. 2021): database build, query time, bytes each
    /// way and memory, beside Microsoft APSI's figures on this machine kind.
    Upsi(upsi::UpsiBenchArgs),
    /// PI-Sum (Ion et al. 2020): CPU per party, wall, bytes each way, peak memory, cost,
    /// with Tables 5 and 6's row of the same protocol and size beside ours.
    PiSum {
        /// Items per party, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "4096,65536,100000")]
        sizes: Vec<usize>,
        /// Protocols to run: ddh (Fig. 2), rot (Fig. 3), bloom (Fig. 4).
        #[arg(long, value_delimiter = ',', default_value = "ddh")]
        protocol: Vec<String>,
        /// Homomorphic schemes to run.
        #[arg(long, value_delimiter = ',', default_value = "paillier,elgamal")]
        he: Vec<String>,
        /// Z encodings to run.
        #[arg(long, value_delimiter = ',', default_value = "list,gcs,bloom")]
        z: Vec<String>,
        /// Parameter sets: `default` (128-bit: 3072-bit modulus, s = 2, values < 2^32)
        /// and `seed` (as deployed: 1536-bit modulus, s = 3, values and sums < 2^32).
        #[arg(long, value_delimiter = ',', default_value = "seed,default")]
        params: Vec<String>,
        /// Group.
        #[arg(long, default_value = "ristretto255")]
        group: String,
        /// The reverse variant (Ion et al. 2020, App. G, Fig. 6; DDH only): P1 learns
        /// the sum, and masks and re-randomizes every item of P2's.
        #[arg(long)]
        reverse: bool,
        /// Working directory (default: a temporary one).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

pub fn run(cmd: &BenchCommand) -> Result<(), Failure> {
    let temp = || std::env::temp_dir().join(format!("privset-bench-{}", std::process::id()));
    match cmd {
        BenchCommand::Pso(args) => pso::run(args, &args.dir.clone().unwrap_or_else(temp)),
        BenchCommand::Mpsi(args) => mpsi::run(args, &args.dir.clone().unwrap_or_else(temp)),
        BenchCommand::Upsi(args) => upsi::run(args, &args.dir.clone().unwrap_or_else(temp)),
        BenchCommand::Apsi(args) => apsi::run(args, &args.dir.clone().unwrap_or_else(temp)),
        BenchCommand::PiSum {
            sizes,
            protocol,
            he,
            z,
            params,
            group,
            reverse,
            dir,
        } => {
            let dir = dir.clone().unwrap_or_else(temp);
            let grid = PiSumGrid {
                sizes,
                protocols: protocol,
                hes: he,
                zs: z,
                params,
                group,
                reverse: *reverse,
            };
            pi_sum::bench_pi_sum(&dir, &grid)
        }
    }
}
