//! `privset demo`: both parties of PI-Sum on loopback over mutual TLS with generated
//! data, each in its own thread with its own socket, checked against the plaintext.

use std::path::PathBuf;

use clap::Args;
use privset_crypto::rng::SessionRng;

use crate::connect::{ConnectArgs, TlsArgs};
use crate::datagen;
use crate::fail::Failure;
use crate::input_args::InputArgs;
use crate::metrics::MB;
use crate::pi_sum_cmd::{self, HeArg, PiSumArgs, ProtocolArg, RoleArg, ZArg};
use crate::run::PriceArgs;
use crate::shared_args::{CwPrfArg, DupArg};

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Items per party.
    #[arg(long, default_value_t = 10_000)]
    pub items: usize,
    /// Working directory for data, certificates and results (default: a temporary one).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run(args: &DemoArgs) -> Result<(), Failure> {
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("privset-demo-{}", std::process::id()))
    });
    let mut rng = SessionRng::from_os();
    let n = args.items;
    let expected = datagen::write_pair(&dir, n, n, n / 2, 1000, datagen::email_id, &mut rng)?;
    let certs = dir.join("certs");
    privset_net::certs::generate(&certs, &["p1".to_string(), "p2".to_string()])?;
    let port = free_port()?;
    let party = |role: RoleArg, name: &str| {
        let mut connect = ConnectArgs {
            tls: TlsArgs {
                tls_ca: Some(certs.join("ca.pem")),
                tls_cert: Some(certs.join(format!("{name}.pem"))),
                tls_key: Some(certs.join(format!("{name}.key"))),
                timeout: 120,
                ..TlsArgs::default()
            },
            ..ConnectArgs::default()
        };
        if role == RoleArg::P1 {
            connect.listen = Some(format!("127.0.0.1:{port}"));
        } else {
            connect.peer = Some(format!("127.0.0.1:{port}"));
        }
        PiSumArgs {
            role,
            connect,
            source: InputArgs::plain(dir.join(format!("{name}.csv")), "id"),
            value_columns: if role == RoleArg::P2 {
                vec!["value".into()]
            } else {
                vec![]
            },
            protocol: ProtocolArg::Ddh,
            group: CwPrfArg::Ristretto255,
            values_he: HeArg::Paillier,
            he_modulus_bits: 3072,
            dj_s: 2,
            z_encoding: ZArg::Gcs,
            threshold: None,
            reverse: false,
            segment_column: None,
            sum_of_squares: false,
            duplicates: DupArg::Error,
            value_bound: u32::MAX as u64,
            sum_bound: None,
            max_peer_items: 1 << 26,
            buckets: None,
            concurrency: 1,
            output: dir.join(format!("{name}-result.json")),
            prices: PriceArgs {
                cpu_price: 0.01,
                network_price: 0.08,
            },
        }
    };
    let (a1, a2) = (party(RoleArg::P1, "p1"), party(RoleArg::P2, "p2"));
    println!(
        "privset demo: PI-Sum, {n} items a side, ristretto255 + Paillier (3072-bit, s = 2), over mutual TLS 1.3 on 127.0.0.1:{port}"
    );
    let t1 = std::thread::spawn(move || pi_sum_cmd::run(&a1));
    let r2 = pi_sum_cmd::run(&a2);
    let r1 = t1
        .join()
        .map_err(|_| Failure::other("P1's thread panicked"))?;
    let (r1, r2) = (r1?, r2?);
    let card = r2.output.cardinality.unwrap_or(0);
    let sum = r2.output.sums.as_ref().map_or(0, |s| s[0]);
    let ok =
        card == expected.cardinality && sum == expected.sum && r1.output.cardinality == Some(card);
    println!(
        "  P1 learned: cardinality {}",
        r1.output.cardinality.unwrap_or(0)
    );
    println!("  P2 learned: cardinality {card}, intersection sum {sum}");
    println!(
        "  plaintext check: cardinality {}, sum {} -> {}",
        expected.cardinality,
        expected.sum,
        if ok { "MATCH" } else { "MISMATCH" }
    );
    println!(
        "  bytes: P1 sent {} ({:.2} MB), P2 sent {} ({:.2} MB)",
        r1.run.bytes_sent,
        r1.run.bytes_sent as f64 / MB,
        r2.run.bytes_sent,
        r2.run.bytes_sent as f64 / MB
    );
    println!(
        "  time: {:.2} s wall; CPU (both parties share this process) {:.2} s",
        r1.run.wall_seconds.max(r2.run.wall_seconds),
        r1.run.cpu_seconds.max(r2.run.cpu_seconds)
    );
    println!(
        "  cost: {:.5} cents for both parties (the process's CPU once, both directions' bytes; Ion et al. 2020, Table 1 GCP prices)",
        crate::metrics::Prices::default().cents(
            r1.run.cpu_seconds.max(r2.run.cpu_seconds),
            r1.run.bytes_sent + r2.run.bytes_sent
        )
    );
    println!("  files: {}", dir.display());
    if ok {
        Ok(())
    } else {
        Err(Failure::other(
            "demo result does not match the plaintext answer",
        ))
    }
}

/// A port the OS reports free on loopback.
pub fn free_port() -> Result<u16, Failure> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}
