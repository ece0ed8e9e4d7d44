//! `privset mpsi`: one participant of a multi-party PSI session (Bay et al.,
//! Miyaji-Nishida or Hazay-Venkitasubramaniam, as in de Jong's thesis), its own process,
//! over mutual TLS to every participant it talks to or over one exchange directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use privset_net::Cancel;
use privset_protocols::agreed::AgreedSettings;
use privset_protocols::input::DuplicatePolicy;
use privset_protocols::mpsi::{self, MpsiConfig, MpsiKey, MpsiProtocol, Role};
use privset_run::keys::Keys;
use privset_run::mpsi::{self as mpsi_run, LinkSettings, MpsiReport};
use privset_run::output_rows;
use privset_run::parties_file::Participants;
use privset_run::{Failure, PartiesSpec, Stopwatch};

use crate::connect::TlsArgs;
use crate::input_args::{InputArgs, KeyArgs};
use crate::progress::Progress;
use crate::run::PriceArgs;
use crate::run::write_json;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolArg {
    /// Bay et al. (thesis Ch. 3): encrypted inverted Bloom filters; the server learns the
    /// intersection.
    Bay,
    /// Miyaji-Nishida (thesis Ch. 4): encrypted Bloom filters through a dealer; every party
    /// learns the intersection.
    MiyajiNishida,
    /// Hazay-Venkitasubramaniam (thesis Ch. 5): encrypted polynomials per bin; the server
    /// learns the intersection.
    Hazay,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemeArg {
    /// Threshold exponential ElGamal on ristretto255; the set holders agree the key in
    /// the session (no dealer).
    Elgamal,
    /// Threshold Paillier (3,072-bit modulus by default) from `privset mpsi-deal`: the
    /// dealer must be trusted to erase the factorisation.
    Paillier,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleArg {
    Server,
    Client,
    Dealer,
    Party,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpsiDupArg {
    /// A repeated identifier is an error naming both lines.
    Error,
    /// Keep the first occurrence.
    First,
}

#[derive(Args, Debug, Clone)]
pub struct MpsiArgs {
    #[arg(long, value_enum)]
    pub protocol: ProtocolArg,
    /// This participant's role: the first participant of the parties file is the server
    /// (bay, hazay) or the dealer (miyaji-nishida), every other a client or a party.
    #[arg(long, value_enum)]
    pub role: RoleArg,
    /// This participant's name in the parties file.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// Every participant in session order, with its address and certificate (TOML).
    #[arg(long, value_name = "parties.toml")]
    pub parties: PathBuf,
    /// The set (not for the dealer): CSV, compressed CSV, Parquet or Arrow IPC
    /// (docs/inputs.md).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Column(s) holding the identifier (several, comma-separated, form one key).
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    pub id_column: Vec<String>,
    #[command(flatten)]
    pub key: KeyArgs,
    /// What to do with repeated identifiers.
    #[arg(long, value_enum, default_value = "error")]
    pub duplicates: MpsiDupArg,
    /// Miyaji-Nishida: a public bound on every party's set size, the same at every party
    /// (the session uses the largest announced). Default: this party's size rounded up to
    /// a power of two, which the others then learn.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_items: u64,
    /// Largest set size (or bound) accepted from a peer.
    #[arg(long, value_name = "N", default_value_t = 1 << 24)]
    pub max_peer_items: u64,
    /// The threshold scheme; every participant must give the same.
    #[arg(long, value_enum, default_value = "elgamal")]
    pub scheme: SchemeArg,
    /// --scheme paillier: this participant's file from `privset mpsi-deal` (a set
    /// holder's `NAME.key`; the server's or dealer's `public.key`).
    #[arg(long, value_name = "FILE")]
    pub paillier_key: Option<PathBuf>,
    /// Exchange messages as files in DIR (shared storage, one directory per session)
    /// instead of TCP to the addresses of the parties file.
    #[arg(long, value_name = "DIR")]
    pub exchange_dir: Option<PathBuf>,
    /// Listen on HOST:PORT instead of this participant's own address.
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// A label every participant of this session shares, so that sessions at the same
    /// addresses never link up.
    #[arg(long, value_name = "LABEL", default_value = "")]
    pub session: String,
    /// TLS: --tls-key is this participant's private key; --tls-cert and --tls-ca default
    /// to its certificate and the CA in the parties file.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Exchange directory: milliseconds between looks for a peer's next file.
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub poll_interval_ms: u64,
    /// Exchange directory: where this participant keeps its private resume state.
    /// Default: a `.privset-state` folder next to --output.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Where to write the result (JSON: intersection size, bytes, time, cost).
    #[arg(long, value_name = "RESULT.json")]
    pub output: PathBuf,
    /// Where to write the intersection (CSV, or Parquet for a `.parquet` name), for the
    /// participants that learn it.
    #[arg(long, value_name = "FILE.csv")]
    pub output_rows: Option<PathBuf>,
    #[command(flatten)]
    pub prices: PriceArgs,
}

impl MpsiArgs {
    fn protocol(&self) -> MpsiProtocol {
        match self.protocol {
            ProtocolArg::Bay => MpsiProtocol::Bay,
            ProtocolArg::MiyajiNishida => MpsiProtocol::MiyajiNishida,
            ProtocolArg::Hazay => MpsiProtocol::Hazay,
        }
    }

    /// The threshold key as --scheme and --paillier-key say.
    fn threshold_key(&self) -> Result<MpsiKey, Failure> {
        match (self.scheme, &self.paillier_key) {
            (SchemeArg::Elgamal, None) => Ok(MpsiKey::Joint),
            (SchemeArg::Elgamal, Some(_)) => {
                Err(Failure::config("--paillier-key is for --scheme paillier"))
            }
            (SchemeArg::Paillier, Some(path)) => privset_run::mpsi_keys::read_key(path),
            (SchemeArg::Paillier, None) => Err(Failure::config(
                "--scheme paillier needs --paillier-key FILE (from privset mpsi-deal)",
            )),
        }
    }

    fn role(&self) -> Role {
        match self.role {
            RoleArg::Server => Role::Server,
            RoleArg::Client => Role::Client,
            RoleArg::Dealer => Role::Dealer,
            RoleArg::Party => Role::Party,
        }
    }

    fn link_settings(&self) -> LinkSettings {
        LinkSettings {
            exchange_dir: self.exchange_dir.clone(),
            listen: self.listen.clone(),
            state_dir: self.state_dir.clone(),
            state_near: self
                .output
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            poll_interval: Duration::from_millis(self.poll_interval_ms),
            tls_ca: self.tls.tls_ca.clone(),
            tls_cert: self.tls.tls_cert.clone(),
            tls_key: self.tls.tls_key.clone(),
            timeout: Duration::from_secs(self.tls.timeout),
            server_name: self.tls.tls_server_name.clone(),
            session: self.session.clone(),
        }
    }

    fn spec(&self, roster: &Participants, me: u8) -> Result<PartiesSpec, Failure> {
        let settings = self.link_settings();
        let tls = match self.exchange_dir {
            Some(_) => None,
            None => {
                let (tls_ca, tls_cert, tls_key) = settings.tls_paths(roster, me);
                TlsArgs {
                    tls_ca,
                    tls_cert,
                    tls_key,
                    ..self.tls.clone()
                }
                .tls_files()?
            }
        };
        settings.spec(self.protocol(), roster, me, tls, Cancel::default())
    }

    /// The participant's items (none for the dealer) and how its identifiers are made.
    fn items(&self, role: Role) -> Result<(Vec<Vec<u8>>, Option<Keys>), Failure> {
        let source = self.input.as_ref().map(|input| InputArgs {
            input: input.clone(),
            id_column: self.id_column.clone(),
            key: self.key.clone(),
        });
        // The dealer may give neither; a set holder must give both.
        let given = match role {
            Role::Dealer => source.is_some() || !self.id_column.is_empty(),
            _ => source.is_some() && !self.id_column.is_empty(),
        };
        mpsi_run::check_holds_set(role, given, "--input and --id-column")?;
        match source {
            None => Ok((Vec::new(), None)),
            Some(source) => {
                let policy = match self.duplicates {
                    MpsiDupArg::Error => DuplicatePolicy::Error,
                    MpsiDupArg::First => DuplicatePolicy::First,
                };
                let (keys, dataset) = source.read(&[], None, policy, u64::MAX)?;
                Ok((dataset.ids, Some(keys)))
            }
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct DealArgs {
    /// The session's participants (the first is the server or the Miyaji-Nishida
    /// dealer, who gets the public key only; every other gets a share).
    #[arg(long, value_name = "parties.toml")]
    pub parties: PathBuf,
    /// Where to write public.key and one NAME.key per set holder.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Bits of the Paillier modulus: 3,072 for 128-bit security; smaller only for tests.
    #[arg(long, value_name = "BITS", default_value_t = privset_run::mpsi_keys::SECURE_MODULUS_BITS)]
    pub modulus_bits: u32,
}

/// `privset mpsi-deal`: one key for the parties file's set holders.
pub fn deal(args: &DealArgs) -> Result<(), Failure> {
    let roster = Participants::read(&args.parties)?;
    let holders: Vec<String> = roster.names().into_iter().skip(1).collect();
    if args.modulus_bits < privset_run::mpsi_keys::SECURE_MODULUS_BITS {
        eprintln!(
            "mpsi-deal: a {}-bit modulus is below 128-bit security (3072): for tests only",
            args.modulus_bits
        );
    }
    eprintln!(
        "mpsi-deal: generating two safe primes of {} bits (minutes at 3072-bit keys)",
        args.modulus_bits / 2
    );
    let dealt = privset_run::mpsi_keys::deal(&holders, args.modulus_bits, &args.out)?;
    println!("{}", dealt.public_file.display());
    for (_, path) in &dealt.holder_files {
        println!("{}", path.display());
    }
    eprintln!(
        "mpsi-deal: key {} for {} holders; give each holder its NAME.key privately, the first participant public.key; nothing of the factorisation was kept",
        dealt.fingerprint,
        holders.len()
    );
    Ok(())
}

/// Runs one participant end to end and writes RESULT.json (and the rows). Returns the
/// report.
pub fn run(args: &MpsiArgs) -> Result<MpsiReport, Failure> {
    let stopwatch = Stopwatch::start();
    let protocol = args.protocol();
    let roster = Participants::read(&args.parties)?;
    let role = args.role();
    let me = mpsi_run::participant(&roster, &args.name, protocol, role)?;
    let (items, keys) = args.items(role)?;
    let config = MpsiConfig {
        protocol,
        names: roster.names(),
        me,
        items,
        max_items: args.max_items,
        max_peer_items: args.max_peer_items,
        key: args.threshold_key()?,
    };
    let item_count = config.items.len();
    let config_scheme = config.key.scheme_name();
    // Refuse a bad roster or input before opening any link.
    mpsi::new_party(config.clone(), [0; 32])?;
    let links = args.spec(&roster, me)?.open()?;
    if let Some(notice) = &links.notice {
        eprintln!("note: {notice}");
    }
    let mut party = mpsi::new_party(config, links.seed)?;
    let stated = match &keys {
        Some(keys) => keys.agreed(),
        None => AgreedSettings::no_input(),
    };
    party.agree(stated.with("roster", roster.digest()?))?;
    let label = format!("mpsi {} {}", protocol.name(), args.name);
    let mut progress = Progress::new(&label, party.meter());
    let result = privset_run::drive_links_metered(
        party.as_mut(),
        links,
        &mut |s| progress.status(s),
        &stopwatch,
        args.prices.prices(),
    );
    progress.finish();
    let (run, seed_file) = result?;
    let output = party
        .into_output()
        .ok_or_else(|| Failure::other("the run ended without an output"))?;
    let rows = match (&output.intersection, &args.output_rows, &keys) {
        (Some(items), Some(path), Some(keys)) => {
            let records: Vec<Vec<Vec<u8>>> = items.iter().map(|i| keys.split(i)).collect();
            output_rows::write_rows(path, &keys.output_columns(), &records)?;
            Some(items.len())
        }
        (None, Some(_), _) => {
            return Err(Failure::config(format!(
                "the {} of {} learns no intersection: leave out --output-rows",
                role.name(),
                protocol.name()
            )));
        }
        _ => None,
    };
    let report = MpsiReport::new(
        protocol,
        config_scheme,
        &args.name,
        roster.list.len(),
        item_count,
        &output,
        rows.and(args.output_rows.clone()),
        run,
    );
    write_json(&args.output, &report)?;
    seed_file.remove();
    Ok(report)
}
