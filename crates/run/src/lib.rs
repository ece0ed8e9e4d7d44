//! Running one privset party end to end, shared by every front end (the `privset`
//! command line and the Python package) so that both read input, open links, meter
//! runs, report results and classify failures identically:
//!
//! * [`source`]: an input file (CSV, gzip / zstd CSV, Parquet, Arrow IPC, detected by
//!   its first bytes) into a validated `Dataset`, errors naming the line or row;
//!   [`keys`]: identifiers from one or several columns, normalised, maybe hashed;
//!   [`output_rows`]: `--output-rows` as CSV or Parquet; [`csv_input`]: the old
//!   one-column interface;
//! * [`link`]: listen / connect (mutual TLS) / exchange directory, from a [`LinkSpec`];
//! * [`links`]: the n-party counterpart: a link to every peer (TCP or one directory);
//!   [`parties_file`]: the roster of an n-party session; [`mpsi`]: what both front ends
//!   of multi-party PSI share (role check, links from the roster, RESULT.json);
//! * [`drive`]: drive a party over a link and measure bytes, CPU, memory and cost;
//! * [`report`]: the RESULT.json structures;
//! * [`apsi`]: authorized PSI's key, signature and policy files, its reports, and the
//!   server's and judge's [`endpoint::Service`]s;
//! * [`upsi`]: unbalanced labeled PSI's database file, labels as columns, the
//!   server's hot-reloading [`endpoint::Service`] and the client's report;
//! * [`endpoint`]: a long-lived listener serving many sessions at once, each on its own
//!   thread with its own deadline, one log line per session;
//! * [`buckets`]: a set operation run as many bucket sessions in bounded memory,
//!   checkpointed so a killed party continues where it stopped;
//! * [`fail`]: why a run failed, as a kind (exit code, exception class) and a message.
//!
//! Front ends keep only their own surface: flags and progress bars for the CLI,
//! keyword arguments, data frames and cancellation for Python.

pub mod allow_clients;
pub mod apsi;
pub mod buckets;
pub mod csv_input;
pub mod csv_lines;
pub mod drive;
pub mod endpoint;
pub mod exec_policy;
pub mod fail;
pub mod keys;
pub mod link;
pub mod links;
pub mod metrics;
pub mod mpsi;
pub mod mpsi_keys;
pub mod output_rows;
pub mod parties_file;
pub mod report;
pub mod source;
pub mod upsi;

pub use drive::{Metered, SeedFile, drive_links_metered, drive_metered};
pub use endpoint::{Reporter, ServeOptions, ServeSummary, Service, SessionLog, serve};
pub use fail::{Failure, FailureKind};
pub use link::{Endpoint, Link, LinkSpec};
pub use links::{PartiesEndpoint, PartiesSpec, PartyLinks};
pub use metrics::{Prices, Stopwatch};
