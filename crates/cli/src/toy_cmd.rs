//! `privset toy-sum`: one participant of the toy sum, the n-party harness test. Every
//! participant holds a number and all learn the total (nothing is hidden: the numbers
//! travel in the clear, inside TLS). It exercises the n-party links end to end.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, ValueEnum};
use privset_net::Cancel;
use privset_protocols::Party;
use privset_protocols::toy::{self, Form, ToySumConfig};
use privset_run::{Failure, Metered, PartiesEndpoint, PartiesSpec, Stopwatch};

use crate::connect::TlsArgs;
use crate::progress::Progress;
use crate::run::PriceArgs;
use crate::run::write_json;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormArg {
    /// Participant 0 is the hub: the others send it their number, it returns the total.
    Star,
    /// Every participant sends its number to every other.
    Mesh,
}

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("link").required(true)))]
pub struct ToySumArgs {
    /// Number of participants (2 to 255).
    #[arg(long, value_name = "N")]
    pub parties: usize,
    /// This participant's index (0 to N-1; 0 is the hub of a star).
    #[arg(long, value_name = "I")]
    pub me: u8,
    /// This participant's number.
    #[arg(long, value_name = "V")]
    pub value: u64,
    #[arg(long, value_enum, default_value = "star")]
    pub form: FormArg,
    /// Every participant's HOST:PORT, in index order; this participant listens on its
    /// own when others connect to it (the hub of a star; in a mesh, the lower index of
    /// each pair).
    #[arg(long, value_name = "A0,A1,...", value_delimiter = ',', group = "link")]
    pub addresses: Vec<String>,
    /// Listen on HOST:PORT instead of this participant's own address (e.g. 0.0.0.0:PORT).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// Exchange messages as files in DIR (shared storage, one directory per session).
    #[arg(long, value_name = "DIR", group = "link")]
    pub exchange_dir: Option<PathBuf>,
    /// A label every participant of this session shares, so that sessions at the same
    /// addresses never link up.
    #[arg(long, value_name = "LABEL", default_value = "")]
    pub session: String,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Exchange directory: milliseconds between looks for a peer's next file.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    pub poll_interval_ms: u64,
    /// Exchange directory: where this participant keeps its private resume state.
    /// Default: a `.privset-state` folder next to --output.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Where to write the result (JSON: total, bytes, time, cost).
    #[arg(long, value_name = "RESULT.json")]
    pub output: PathBuf,
    #[command(flatten)]
    pub prices: PriceArgs,
}

/// RESULT.json of toy-sum.
#[derive(serde::Serialize, Debug, Clone)]
pub struct ToySumReport {
    pub protocol: &'static str,
    pub form: &'static str,
    pub parties: usize,
    pub me: u8,
    pub total: u128,
    #[serde(flatten)]
    pub run: Metered,
}

impl ToySumArgs {
    fn form(&self) -> Form {
        match self.form {
            FormArg::Star => Form::Star,
            FormArg::Mesh => Form::Mesh,
        }
    }

    fn spec(&self) -> Result<PartiesSpec, Failure> {
        let endpoint = PartiesEndpoint::from_flags(
            self.exchange_dir.as_deref(),
            self.listen.as_deref(),
            || Ok(self.addresses.clone()),
            self.state_dir.as_deref(),
            &self.output,
            Duration::from_millis(self.poll_interval_ms),
        )?;
        let tls = if self.exchange_dir.is_some() {
            None
        } else {
            self.tls.tls_files()?
        };
        let session = if self.session.is_empty() {
            "toy-sum".to_string()
        } else {
            format!("toy-sum/{}", self.session)
        };
        Ok(PartiesSpec {
            endpoint,
            parties: self.parties,
            me: self.me,
            topology: self.form().topology(),
            session,
            tls,
            // The toy sum names its participants by index only: no roster to pin.
            identities: None,
            dir_signing_key: None,
            timeout: Duration::from_secs(self.tls.timeout),
            server_name: self.tls.tls_server_name.clone(),
            cancel: Cancel::default(),
        })
    }
}

/// Runs one participant end to end and writes RESULT.json. Returns the report.
pub fn run(args: &ToySumArgs) -> Result<ToySumReport, Failure> {
    let stopwatch = Stopwatch::start();
    let form = args.form();
    let config = ToySumConfig {
        parties: args.parties,
        me: args.me,
        form,
        value: args.value,
    };
    // Refuse a bad count or index before opening any link.
    toy::new_party(config, [0; 32])?;
    let links = args.spec()?.open()?;
    let mut party = toy::new_party(config, links.seed)?;
    let label = format!("toy-sum {} of {}", args.me, args.parties);
    let mut progress = Progress::new(&label, party.meter());
    let result = privset_run::drive_links_metered(
        &mut party,
        links,
        &mut |s| progress.status(s),
        &stopwatch,
        args.prices.prices(),
    );
    progress.finish();
    let (run, seed_file) = result?;
    let total = party
        .into_output()
        .ok_or_else(|| Failure::other("the run ended without an output"))?;
    let report = ToySumReport {
        protocol: "toy-sum",
        form: form.name(),
        parties: args.parties,
        me: args.me,
        total,
        run,
    };
    write_json(&args.output, &report)?;
    seed_file.remove();
    Ok(report)
}
