//! `privset pi-sum`: one party of the intersection-sum protocol.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use privset_crypto::ahe::HeId;
use privset_crypto::ahe::paillier;
use privset_protocols::input::DuplicatePolicy;
use privset_protocols::pi_sum::{self, PiSumConfig, Role};
use privset_protocols::pso::PsoRole;
use privset_protocols::set_encoding::SetEncoding;
use privset_run::report::BucketedReport;
pub use privset_run::report::PiSumReport;
use privset_run::{Failure, Stopwatch};

use crate::connect::ConnectArgs;
use crate::input_args::InputArgs;
use crate::run::{self, PriceArgs, write_json};
use crate::shared_args::{BucketCount, CwPrfArg, DupArg, parse_buckets, parse_concurrency};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleArg {
    P1,
    P2,
}

/// Which intersection-sum protocol of Ion et al. 2020.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolArg {
    /// The deployed DDH protocol (Fig. 2), with every variant.
    Ddh,
    /// The Random-OT protocol (Fig. 3): a batched OPRF from OT extension on P1's cuckoo
    /// bins; no reverse variant, no segments.
    Rot,
    /// The encrypted-Bloom-filter protocol (Fig. 4): P1's filter bits under exponential
    /// ElGamal; no reverse variant, no segments.
    Bloom,
}

impl ProtocolArg {
    pub fn id(self) -> pi_sum::PiSumProtocol {
        match self {
            ProtocolArg::Ddh => pi_sum::PiSumProtocol::Ddh,
            ProtocolArg::Rot => pi_sum::PiSumProtocol::Rot,
            ProtocolArg::Bloom => pi_sum::PiSumProtocol::Bloom,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum HeArg {
    Paillier,
    Elgamal,
    /// Ring-LWE, many values per ciphertext (Ion et al. 2020, App. B.3); not with
    /// --reverse.
    Rlwe,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ZArg {
    List,
    Gcs,
    Bloom,
}

#[derive(Args, Debug, Clone)]
pub struct PiSumArgs {
    /// p1 holds identifiers; p2 holds identifiers with values.
    #[arg(long, value_enum)]
    pub role: RoleArg,
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(flatten)]
    pub source: InputArgs,
    /// p2: value column(s) to sum (repeat for several).
    #[arg(long = "value-column", value_name = "NAME")]
    pub value_columns: Vec<String>,
    /// Which protocol of Ion et al. 2020 (both parties must agree).
    #[arg(long, value_enum, default_value = "ddh")]
    pub protocol: ProtocolArg,
    /// Group for the Diffie-Hellman exponentiations (x25519: the fast mode the set
    /// operations use, on Montgomery u-coordinates).
    #[arg(long, value_enum, default_value = "ristretto255")]
    pub group: CwPrfArg,
    /// Additively homomorphic scheme for the values.
    #[arg(long, value_enum, default_value = "paillier")]
    pub values_he: HeArg,
    /// Paillier modulus bits (3072 = 128-bit security; the seed's deployment used 1536).
    #[arg(long, value_name = "N", default_value_t = 3072)]
    pub he_modulus_bits: u32,
    /// Damgard-Jurik s (plaintexts mod n^s, for packing values; the seed's deployment
    /// used 3). The reverse variant packs nothing and always uses s = 1.
    #[arg(long, value_name = "S", default_value_t = 2)]
    pub dj_s: u32,
    /// How p2 returns the doubly-exponentiated set Z.
    #[arg(long, value_enum, default_value = "gcs")]
    pub z_encoding: ZArg,
    /// Abort without computing any sum if the intersection has fewer items (the party
    /// computing the intersection applies it: p1, or p2 with --reverse).
    #[arg(long, value_name = "N")]
    pub threshold: Option<u64>,
    /// Reverse variant: p1 learns the sum instead of p2.
    #[arg(long)]
    pub reverse: bool,
    /// p1: column naming each item's segment; one cardinality and sum per segment.
    #[arg(long, value_name = "NAME")]
    pub segment_column: Option<String>,
    /// p2: also sum the squares of the values, giving the variance.
    #[arg(long)]
    pub sum_of_squares: bool,
    /// What to do with repeated identifiers.
    #[arg(long, value_enum, default_value = "error")]
    pub duplicates: DupArg,
    /// p2: largest allowed value.
    #[arg(long, value_name = "N", default_value_t = u32::MAX as u64)]
    pub value_bound: u64,
    /// p2: bound on each column's total (default: value bound × items, which never
    /// wraps). A smaller public bound packs more values per ciphertext.
    #[arg(long, value_name = "N")]
    pub sum_bound: Option<u128>,
    /// Run past one machine's memory, surviving a killed party: the protocol's
    /// messages cut into units of bounded size and partitioned by PRF values, `auto`
    /// (about 2^20 items of the larger set per part) or a part count both parties
    /// agree on. Staged rows and finished units are kept in --state-dir until the
    /// result is written; start a killed party again with the same command to
    /// continue. ddh protocol, forward, paillier or elgamal, no segments.
    /// docs/scale.md.
    #[arg(long, value_name = "auto|N", value_parser = parse_buckets)]
    pub buckets: Option<BucketCount>,
    /// With --buckets: run up to N units at once (over TCP on N connections, the
    /// smaller of the two parties' N; over an exchange directory on N threads).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_concurrency, requires = "buckets")]
    pub concurrency: u32,
    /// Largest set size accepted from the peer.
    #[arg(long, value_name = "N", default_value_t = 1 << 26)]
    pub max_peer_items: u64,
    /// Where to write the result (JSON).
    #[arg(long, value_name = "RESULT.json")]
    pub output: PathBuf,
    #[command(flatten)]
    pub prices: PriceArgs,
}

impl PiSumArgs {
    pub fn config(&self) -> PiSumConfig {
        PiSumConfig {
            protocol: self.protocol.id(),
            group: self.group.id(),
            he: match self.values_he {
                HeArg::Paillier => HeId::Paillier,
                HeArg::Elgamal => HeId::ElGamal,
                HeArg::Rlwe => HeId::Rlwe,
            },
            paillier: paillier::Params {
                modulus_bits: self.he_modulus_bits,
                s: self.dj_s,
            },
            z_encoding: SetEncoding::from_name(match self.z_encoding {
                ZArg::List => "list",
                ZArg::Gcs => "gcs",
                ZArg::Bloom => "bloom",
            })
            .expect("every Z encoding has a name"),
            reverse: self.reverse,
            threshold: self.threshold,
            sum_of_squares: self.sum_of_squares,
            max_value: self.value_bound,
            max_sum: self.sum_bound,
            max_peer_items: self.max_peer_items,
            ..PiSumConfig::default()
        }
    }

    fn role(&self) -> Role {
        match self.role {
            RoleArg::P1 => Role::P1,
            RoleArg::P2 => Role::P2,
        }
    }

    fn check_flags(&self) -> Result<(), Failure> {
        let p2_only = |flag: &str| {
            Failure::config(format!(
                "{flag} is for --role p2 (the party holding values)"
            ))
        };
        match self.role {
            RoleArg::P1 => {
                if !self.value_columns.is_empty() {
                    return Err(p2_only("--value-column"));
                }
                if self.sum_of_squares {
                    return Err(p2_only("--sum-of-squares"));
                }
            }
            RoleArg::P2 => {
                if self.value_columns.is_empty() {
                    return Err(Failure::config(
                        "--role p2 needs at least one --value-column",
                    ));
                }
                if self.segment_column.is_some() {
                    return Err(Failure::config("--segment-column is for --role p1"));
                }
            }
        }
        Ok(())
    }
}

/// Runs one party end to end and writes RESULT.json. Returns the report.
pub fn run(args: &PiSumArgs) -> Result<PiSumReport, Failure> {
    args.check_flags()?;
    if let Some(count) = args.buckets {
        return run_bucketed(args, count);
    }
    let config = args.config();
    let policy = DuplicatePolicy::from(args.duplicates);
    let stopwatch = Stopwatch::start();
    let (keys, dataset) = args.source.read(
        &args.value_columns,
        args.segment_column.as_deref(),
        policy,
        args.value_bound,
    )?;
    let items = dataset.ids.len();
    let role = args.role();
    let (me, peer) = match role {
        Role::P1 => ("p1", "p2"),
        Role::P2 => ("p2", "p1"),
    };
    // Validate the input fully before opening any connection.
    pi_sum::validate(role, &config, &dataset)?;
    let link = args.connect.open(me, peer, &args.output)?;
    let mut party = pi_sum::new_party(role, &config, dataset, link.seed)?;
    party.agree(keys.agreed())?;
    let (run, seed_file) = run::drive_metered(
        party.as_mut(),
        link,
        &format!("pi-sum {me}"),
        &stopwatch,
        args.prices.prices(),
    )?;
    let output = party
        .into_output()
        .ok_or_else(|| Failure::other("the run ended without an output"))?;
    let report = PiSumReport::new(&config, role, &output, items, run);
    write_json(&args.output, &report)?;
    seed_file.remove();
    Ok(report)
}

/// The value-partitioned run of `privset_run::buckets::runner`.
fn run_bucketed(args: &PiSumArgs, count: BucketCount) -> Result<PiSumReport, Failure> {
    use privset_run::buckets;
    if args.segment_column.is_some() {
        return Err(Failure::config(
            "--buckets does not run segmented input yet: run it unbucketed",
        ));
    }
    let config = args.config();
    let keys = args.source.keys()?;
    let link = args.connect.spec(&args.output)?;
    let state_dir = args.connect.state_dir_for(&args.output);
    let job = buckets::runner::Job {
        config: buckets::operation::JobConfig::PiSum(&config),
        role: match args.role() {
            Role::P1 => PsoRole::Receiver,
            Role::P2 => PsoRole::Sender,
        },
        input: &args.source.input,
        keys: &keys,
        values: &args.value_columns,
        policy: DuplicatePolicy::from(args.duplicates),
        settings: format!(
            "{:?} {:?} {:?} {:?}",
            args.source, args.duplicates, args.value_bound, args.value_columns
        ),
        link: &link,
        buckets: count.fixed(),
        concurrency: args.concurrency,
        target: buckets::DEFAULT_TARGET,
        state_dir: &state_dir,
        output: &args.output,
        rows_path: None,
        prices: args.prices.prices(),
    };
    match run::run_job(&job)? {
        BucketedReport::PiSum(report) => Ok(report),
        BucketedReport::Pso(_) => Err(Failure::other("pi-sum reported as a set operation")),
    }
}
