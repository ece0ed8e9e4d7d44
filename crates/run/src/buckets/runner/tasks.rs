//! A bucketed job over mutual TLS for a distributed front end (`privset.ray` with
//! `listen` / `peer`): the driver agrees on the plan with the peer's driver over the
//! job's own link ([`Runner::plan_over_tcp`]), then each unit runs as a task wherever
//! the cluster puts it ([`Runner::bucket_over_tcp`]), meeting the peer's task for the
//! same unit through the [`rendezvous`]. Rounds repeat until a plan session finds
//! both parties holding every unit, as the CLI's connections do; a round in which a
//! unit could not run on one side is aborted at the rendezvous
//! ([`Runner::abort_round`]), and the next runs it again.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use privset_net::{ConnectOptions, Transport, TransportError, tls};
use privset_protocols::bucket_plan::Decision;

use super::{DriveFn, MAX_RECONNECTS, Runner};
use crate::buckets::rendezvous::{self, Answer, Reach, Side};
use crate::fail::{Failure, FailureKind};
use crate::link::{Endpoint, fresh_seed};

/// Longest a task tries to connect to the endpoint the rendezvous gave: one that
/// refuses for longer belongs to a task that died, and Ray's retry asks again.
const TASK_CONNECT: Duration = Duration::from_secs(30);

/// How often a listening task waiting for its peer asks the rendezvous whether the
/// peer's task has finished the unit or the round is aborted.
const CHECK_EVERY: Duration = Duration::from_secs(2);

/// A round's units in waves, each as (unit, runs recorded of it so far).
pub type Waves = Vec<Vec<(u32, u32)>>;

/// How a unit's task reaches the peer's task of the same unit.
#[derive(Clone, Debug)]
pub enum TaskLink {
    /// The listening organisation's task: binds the first free port of `ports`,
    /// registers `advertise:port` at `rendezvous` (its driver's) with `token`, and
    /// accepts the peer's task there.
    Listen {
        ports: (u16, u16),
        advertise: String,
        rendezvous: String,
        token: [u8; 32],
    },
    /// The connecting organisation's task: asks `rendezvous` (the peer's driver's)
    /// where the peer's task listens, and connects.
    Connect { rendezvous: String },
}

impl Runner<'_> {
    /// Steps 2 and 3 over the job's TCP link: a plan session (another after adopting a
    /// new plan). Returns the round's id and its units in waves, each with the runs
    /// recorded of it so far (a unit this party has and the peer lacks runs again);
    /// no units once both parties have every unit, the job then marked complete.
    pub fn plan_over_tcp(&mut self, drive: &DriveFn<'_>) -> Result<([u8; 32], Waves), Failure> {
        let (me, peer, _) = self.job.names();
        let started = Instant::now();
        let mut attempts = 0;
        loop {
            let decision = self.job.link.open(me, peer).and_then(|mut link| {
                let decision =
                    self.plan_session(link.transport.as_mut(), fresh_seed(), true, 0, drive);
                self.add(link.transport.counters());
                decision
            });
            attempts += 1;
            match decision {
                Ok(Decision::Keep { run, round, .. }) => return Ok((round, self.round(&run)?)),
                Ok(new) if attempts < MAX_RECONNECTS => self.adopt(&new)?,
                Err(e)
                    if e.kind == FailureKind::Transport
                        && attempts < MAX_RECONNECTS
                        && started.elapsed() < self.job.link.timeout =>
                {
                    std::thread::sleep(Duration::from_millis(500));
                }
                Ok(_) => {
                    return Err(Failure::peer(format!(
                        "the peer asked for a new bucket plan {MAX_RECONNECTS} times"
                    )));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The units of `run` under the recorded plan (see [`Runner::plan_over_tcp`]).
    fn round(&self, run: &[u32]) -> Result<Waves, Failure> {
        if run.is_empty() {
            self.dir.mark_complete()?;
            return Ok(Vec::new());
        }
        let plan = self
            .dir
            .plan()?
            .ok_or_else(|| Failure::other("the plan was not recorded"))?;
        self.in_waves(&plan, run.iter().copied())
            .into_iter()
            .map(|wave| {
                wave.into_iter()
                    .map(|b| Ok((b, self.dir.done(b)?.map_or(0, |d| d.runs))))
                    .collect()
            })
            .collect()
    }

    /// Step 4 for unit `b` of round `round` as a task: meets the peer's task through
    /// `link`, runs the unit and reports it finished. `runs`: the runs recorded of `b`
    /// when the round was planned (a retried task whose unit has since been recorded
    /// does nothing). `Ok(false)`: the unit did not run, because the peer's task had
    /// finished it (this task retried after dying between its session's end and its
    /// record) or the round is aborted; the driver then aborts the round.
    pub fn bucket_over_tcp(
        &self,
        (b, runs): (u32, u32),
        round: [u8; 32],
        link: &TaskLink,
        drive: &DriveFn<'_>,
    ) -> Result<bool, Failure> {
        if self.dir.done(b)?.is_some_and(|d| d.runs > runs) {
            return Ok(true);
        }
        let slot = (round, b);
        let files = self.task_files()?;
        let timeout = self.job.link.timeout;
        let opts = |server_name: String, connect: Duration| self.task_opts(server_name, connect);
        let (mut transport, to, side) = match link {
            TaskLink::Listen {
                ports,
                advertise,
                rendezvous,
                token,
            } => {
                let (listener, port) = bind_in(*ports)?;
                let to = Reach {
                    addr: rendezvous,
                    files,
                    opts: opts(tls::certificate_name(files)?, timeout),
                };
                let endpoint = format!("{advertise}:{port}");
                let Ok(held) = rendezvous::register(&to, slot, *token, &endpoint)? else {
                    return Ok(false);
                };
                let deadline = Instant::now() + timeout;
                let transport = loop {
                    let waiting = opts(String::new(), CHECK_EVERY);
                    match tls::accept_on(&listener, files, &waiting) {
                        Ok(t) => break t,
                        Err(TransportError::Timeout { .. }) if Instant::now() < deadline => {
                            if rendezvous::check(&to, slot)? != Answer::Ok(String::new()) {
                                return Ok(false);
                            }
                        }
                        Err(e) => return Err(e.into()),
                    }
                };
                drop(held);
                (transport, to, Side::Listening)
            }
            TaskLink::Connect { rendezvous } => {
                let name = self.peer_name()?;
                let to = Reach {
                    addr: rendezvous,
                    files,
                    opts: opts(name.clone(), timeout),
                };
                let Answer::Ok(endpoint) = rendezvous::find(&to, slot)? else {
                    return Ok(false);
                };
                let transport =
                    tls::connect(&endpoint, files, &opts(name, TASK_CONNECT.min(timeout)))?;
                (transport, to, Side::Connecting)
            }
        };
        // The CA vouches for the peer's tasks; the run's expected peer is checked too, on
        // the listening side as on the connecting one.
        self.job.link.check_peer_name(&transport)?;
        // Reported before the record: a task that dies after its session never leaves
        // the peer's retry waiting for it. If it dies before reporting, its retry meets
        // the peer's retry, or learns the peer finished; if it dies between the report
        // and the record, its retry learns the peer finished; either way a unit left
        // unrecorded on one side runs again in the next round.
        let ran = self.bucket_then(b, (&mut transport, fresh_seed(), drive), &|| {
            rendezvous::finished(&to, slot, side)
        });
        self.add(transport.counters());
        ran.map(|()| true)
    }

    /// Aborts round `round` at the peer's rendezvous `addr` (the connecting driver's
    /// part; the listening driver aborts its own in process): no unit not yet met runs
    /// in it on either side.
    pub fn abort_round(&self, round: [u8; 32], addr: &str) -> Result<(), Failure> {
        let to = Reach {
            addr,
            files: self.task_files()?,
            opts: self.task_opts(self.peer_name()?, self.job.link.timeout),
        };
        rendezvous::abort(&to, round)
    }

    /// The job's TLS files: a distributed job over TCP is mutual TLS only.
    fn task_files(&self) -> Result<&privset_net::TlsFiles, Failure> {
        self.job
            .link
            .tls
            .as_ref()
            .ok_or_else(|| Failure::config("bucket tasks over TCP run over mutual TLS only"))
    }

    /// A task's connection options: the job's timeout and cancel, `server_name` to
    /// verify, `connect` to wait for the connection.
    fn task_opts(&self, server_name: String, connect: Duration) -> ConnectOptions {
        let timeout = self.job.link.timeout;
        ConnectOptions {
            connect_timeout: connect,
            handshake_timeout: timeout,
            io_timeout: timeout,
            server_name: Some(server_name),
            cancel: self.job.link.cancel.clone(),
        }
    }

    /// The name the peer's certificate must hold: the link's server name, or the host
    /// of its address (its tasks listen on other hosts, under the same certificate).
    fn peer_name(&self) -> Result<String, Failure> {
        if let Some(name) = &self.job.link.server_name {
            return Ok(name.clone());
        }
        match &self.job.link.endpoint {
            Endpoint::Peer(addr) => Ok(privset_net::host_of(addr).to_string()),
            _ => Err(Failure::config(
                "the connecting organisation's tasks need the peer's address",
            )),
        }
    }
}

/// A listener on the first port of `ports` (inclusive) free on this host.
fn bind_in((first, last): (u16, u16)) -> Result<(TcpListener, u16), Failure> {
    if first == 0 || first > last {
        return Err(Failure::config(format!(
            "the port range {first}-{last} is empty or starts at 0"
        )));
    }
    for port in first..=last {
        if let Ok(listener) = TcpListener::bind(("0.0.0.0", port)) {
            return Ok((listener, port));
        }
    }
    Err(Failure::config(format!(
        "no port of {first}-{last} is free on this host: widen the range (a task \
         needs one while it waits for its peer)"
    )))
}
