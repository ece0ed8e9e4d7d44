//! `privset psi | psi-card | psi-card-sum | psu | psi-share | private-id`: one party of a
//! set operation of Chen et al. 2024.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use privset_crypto::filter::FilterKind;
use privset_protocols::input::DuplicatePolicy;
use privset_protocols::pso::{
    self, Construction, LastMessage, Operation, PsoChoices, PsoConfig, PsoOutput, PsoRole, Rows,
};
use privset_protocols::set_encoding::SetEncoding;
use privset_run::keys::Keys;
use privset_run::output_rows;
use privset_run::report::{self, BucketedReport, PsoReport};
use privset_run::{Failure, Stopwatch};

use crate::connect::ConnectArgs;
use crate::input_args::InputArgs;
use crate::run::{self, PriceArgs, write_json};
use crate::shared_args::{BucketCount, CwPrfArg, DupArg, parse_buckets, parse_concurrency};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsoRoleArg {
    /// Holds Y; learns the output (plays the mqRPMT server, Fig. 7's P1).
    Receiver,
    /// Holds X (and values for psi-card-sum); Fig. 7's P2.
    Sender,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MqrpmtArg {
    /// From a commutative weak PRF (Chen et al. 2024, Fig. 3).
    Cwprf,
    /// From a permuted OPRF (Chen et al. 2024, Figs. 5-6); list only, not x25519.
    Poprf,
    /// psi only: silent VOLE and an OKVS (Raghuraman-Rindal 2022, Fig. 4), symmetric-key
    /// work only; --group and --last-message are unused.
    Vole,
}

impl MqrpmtArg {
    pub fn construction(self) -> Construction {
        match self {
            MqrpmtArg::Cwprf => Construction::Cwprf,
            MqrpmtArg::Poprf => Construction::Poprf,
            MqrpmtArg::Vole => Construction::Vole,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LastMessageArg {
    /// The shuffled list of elements.
    List,
    /// Order-hiding Bloom filter (Chen et al. 2024, Sec. 4.3), 2^-40 false positives per run.
    Bloom,
    /// Golomb-compressed set: order-hiding too, and smaller than Bloom.
    Gcs,
    /// psi only: a short tag per receiver item in the receiver's order (DH-PSI; no OT,
    /// fewer bytes, same leakage).
    Ordered,
}

impl LastMessageArg {
    pub fn last_message(self) -> LastMessage {
        match self {
            LastMessageArg::List => LastMessage::LIST,
            LastMessageArg::Bloom => LastMessage::Set(SetEncoding::Filter(FilterKind::Bloom)),
            LastMessageArg::Gcs => LastMessage::Set(SetEncoding::Filter(FilterKind::Gcs)),
            LastMessageArg::Ordered => LastMessage::Ordered,
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct PsoArgs {
    #[arg(long, value_enum)]
    pub role: PsoRoleArg,
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(flatten)]
    pub source: InputArgs,
    /// psi-card-sum sender: the value column to sum.
    #[arg(long, value_name = "NAME")]
    pub value_column: Option<String>,
    /// The Diffie-Hellman constructions' group [default: ristretto255].
    #[arg(long, value_enum)]
    pub group: Option<CwPrfArg>,
    /// The construction [default: vole for psi, unless --group or --last-message asks
    /// for a Diffie-Hellman one; cwprf for the others].
    #[arg(long, value_enum)]
    pub mqrpmt: Option<MqrpmtArg>,
    /// How the sender of a Diffie-Hellman construction returns the receiver's
    /// re-evaluated set [default: bloom].
    #[arg(long, value_enum)]
    pub last_message: Option<LastMessageArg>,
    /// What to do with repeated identifiers.
    #[arg(long, value_enum, default_value = "error")]
    pub duplicates: DupArg,
    /// psi-card-sum sender: largest allowed value.
    #[arg(long, value_name = "N", default_value_t = u32::MAX as u64)]
    pub value_bound: u64,
    /// Run in buckets of bounded memory that survive a killed party: `auto` (about
    /// 2^20 items of the larger set per bucket) or a count both parties agree on
    /// (psi: buckets of identifiers; psi-card, psi-card-sum, psu, private-id: parts of
    /// PRF values).
    /// Staged rows and finished buckets are kept in --state-dir until the result is
    /// written; start a killed party again with the same command to continue.
    /// docs/scale.md.
    #[arg(long, value_name = "auto|N", value_parser = parse_buckets)]
    pub buckets: Option<BucketCount>,
    /// With --buckets: run up to N buckets at once (over TCP on N connections, the
    /// smaller of the two parties' N; over an exchange directory on N threads). Each
    /// holds one bucket in memory (docs/scale.md: when more lanes help).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_concurrency, requires = "buckets")]
    pub concurrency: u32,
    /// Largest set size accepted from the peer.
    #[arg(long, value_name = "N", default_value_t = 1 << 26)]
    pub max_peer_items: u64,
    /// Where to write the result (JSON: counts, bytes, time, cost).
    #[arg(long, value_name = "RESULT.json")]
    pub output: PathBuf,
    /// Where to write rows (Parquet if the name ends in .parquet, else CSV): the
    /// intersection (psi), the union (psu), this party's shares (psi-share) or the
    /// private-ID table (private-id).
    #[arg(long, value_name = "FILE.csv|FILE.parquet")]
    pub output_rows: Option<PathBuf>,
    #[command(flatten)]
    pub prices: PriceArgs,
}

impl PsoArgs {
    /// The settings these flags ask for, with the defaults and rules of
    /// [`PsoChoices::resolve`].
    pub fn config(&self, operation: Operation) -> Result<PsoConfig, Failure> {
        let choices = PsoChoices {
            construction: self.mqrpmt.map(MqrpmtArg::construction),
            cwprf: self.group.map(CwPrfArg::id),
            last_message: self.last_message.map(LastMessageArg::last_message),
            max_value: Some(self.value_bound),
            max_peer_items: Some(self.max_peer_items),
        };
        Ok(choices.resolve(operation)?)
    }

    fn role(&self) -> PsoRole {
        match self.role {
            PsoRoleArg::Receiver => PsoRole::Receiver,
            PsoRoleArg::Sender => PsoRole::Sender,
        }
    }

    fn check_flags(&self, operation: Operation) -> Result<(), Failure> {
        let wants_value = operation == Operation::PsiCardSum && self.role == PsoRoleArg::Sender;
        match (&self.value_column, wants_value) {
            (None, true) => Err(Failure::config(
                "psi-card-sum --role sender needs --value-column",
            )),
            (Some(_), false) => Err(Failure::config(format!(
                "--value-column is only for psi-card-sum --role sender, not {} --role {}",
                operation.name(),
                self.role().name()
            ))),
            _ => Ok(()),
        }
    }
}

/// Runs one party end to end, writes RESULT.json (and the rows). Returns the report.
pub fn run(operation: Operation, args: &PsoArgs) -> Result<PsoReport, Failure> {
    args.check_flags(operation)?;
    if let Some(count) = args.buckets {
        return run_bucketed(operation, args, count);
    }
    let config = args.config(operation)?;
    let role = args.role();
    let stopwatch = Stopwatch::start();
    let values: Vec<String> = args.value_column.iter().cloned().collect();
    let policy = DuplicatePolicy::from(args.duplicates);
    let (keys, dataset) = args.source.read(&values, None, policy, args.value_bound)?;
    let items = dataset.ids.len();
    // Kept for the private-ID table, which lists own items in input order.
    let own_ids = (operation == Operation::PrivateId).then(|| dataset.ids.clone());
    pso::validate(role, &config, &dataset)?;
    let (me, peer) = match role {
        PsoRole::Receiver => ("receiver", "sender"),
        PsoRole::Sender => ("sender", "receiver"),
    };
    let link = args.connect.open(me, peer, &args.output)?;
    let mut party = pso::new_party(role, &config, dataset, link.seed)?;
    party.agree(keys.agreed())?;
    let (run, seed_file) = run::drive_metered(
        party.as_mut(),
        link,
        &format!("{} {me}", operation.name()),
        &stopwatch,
        args.prices.prices(),
    )?;
    let output = party
        .into_output()
        .ok_or_else(|| Failure::other("the run ended without an output"))?;
    let rows = match &args.output_rows {
        Some(path) => write_rows(path, &keys, &output, own_ids.as_deref())?,
        None => None,
    };
    let report = PsoReport::new(
        &config,
        role,
        &output,
        items,
        rows,
        rows.and(args.output_rows.clone()),
        run,
    );
    write_json(&args.output, &report)?;
    seed_file.remove();
    Ok(report)
}

/// The bucketed run of `privset_run::buckets::runner`.
fn run_bucketed(
    operation: Operation,
    args: &PsoArgs,
    count: BucketCount,
) -> Result<PsoReport, Failure> {
    use privset_run::buckets;
    buckets::operation::check_operation(operation)?;
    let config = args.config(operation)?;
    let keys = args.source.keys()?;
    let values: Vec<String> = args.value_column.iter().cloned().collect();
    let link = args.connect.spec(&args.output)?;
    let state_dir = args.connect.state_dir_for(&args.output);
    let job = buckets::runner::Job {
        config: buckets::operation::JobConfig::Pso(&config),
        role: args.role(),
        input: &args.source.input,
        keys: &keys,
        values: &values,
        policy: DuplicatePolicy::from(args.duplicates),
        settings: format!(
            "{:?} {:?} {:?}",
            args.source, args.duplicates, args.value_bound
        ),
        link: &link,
        buckets: count.fixed(),
        concurrency: args.concurrency,
        target: buckets::DEFAULT_TARGET,
        state_dir: &state_dir,
        output: &args.output,
        rows_path: args.output_rows.as_deref(),
        prices: args.prices.prices(),
    };
    match run::run_job(&job)? {
        BucketedReport::Pso(report) => Ok(report),
        BucketedReport::PiSum(_) => Err(Failure::other("a set operation reported as pi-sum")),
    }
}

/// Writes the operation's rows; `None` when the party has no rows to write.
fn write_rows(
    path: &Path,
    keys: &Keys,
    output: &PsoOutput,
    own_ids: Option<&[Vec<u8>]>,
) -> Result<Option<usize>, Failure> {
    // Identifiers are written as their exact bytes (a CSV field of arbitrary bytes,
    // quoted where needed), never re-encoded: they must match the input byte for byte.
    // A multi-column identifier is written back as its columns.
    let id_header = keys.output_columns();
    let (header, records): (Vec<String>, Vec<Vec<Vec<u8>>>) = match (output.rows(), own_ids) {
        (Some(Rows::Items(items)), _) => (id_header, items.iter().map(|i| keys.split(i)).collect()),
        (Some(Rows::Shares(shares)), _) => (
            vec!["index".into(), "share".into()],
            shares
                .iter()
                .map(|s| vec![s.index.to_string().into(), hex::encode(&s.share).into()])
                .collect(),
        ),
        // Both parties' files have the same rows in the same order: join on private_id.
        (Some(Rows::PrivateId(table)), Some(ids)) => {
            let blank = vec![Vec::new(); id_header.len()];
            (
                std::iter::once("private_id".to_string())
                    .chain(id_header.iter().cloned())
                    .collect(),
                report::private_id_rows(table)
                    .into_iter()
                    .map(|(id, own)| {
                        let mut r = vec![hex::encode(id).into_bytes()];
                        r.extend(
                            own.map(|i| keys.split(&ids[i]))
                                .unwrap_or_else(|| blank.clone()),
                        );
                        r
                    })
                    .collect(),
            )
        }
        (Some(Rows::PrivateId(_)), None) | (None, _) => return Ok(None),
    };
    output_rows::write_rows(path, &header, &records)?;
    Ok(Some(records.len()))
}
