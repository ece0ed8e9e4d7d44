//! A bucketed job (see [`super`]): psi as one session per identifier bucket; psi-card,
//! psi-card-sum and pi-sum as the value-partitioned units of [`super::value`]. Both keep the same state directory, plan and records (a "bucket" of
//! the records is a unit of a value-partitioned job).
//!
//! Over TCP every connection starts with the plan session, which also tells each party
//! what the other has finished; a connection that breaks (a party killed, a network
//! cut) is opened again and the job continues with the buckets not yet finished by
//! both. Over an exchange directory the plan and each bucket have a subdirectory of
//! their own, and a restarted party replays its messages there from its private seed.

use std::path::Path;
use std::time::Duration;

use privset_net::{ByteCounters, Transport};
use privset_protocols::Party;
use privset_protocols::bucket_plan::{self, Decision, PlanRequest};
use privset_protocols::input::DuplicatePolicy;
use privset_protocols::partition_unit::{self, TransferInput, UnitId};
use privset_protocols::pi_sum;
use privset_protocols::pso::{self, Operation, PsoOutput, PsoRole};
use sha2::{Digest, Sha256};

use super::job::{BucketFigures, Fingerprint, JobDir, Plan};
use super::lanes;
use super::operation::JobConfig;
use super::value::{self, Layout, Shape, Step};
use crate::drive::Metered;
use crate::fail::{Failure, FailureKind};
use crate::keys::Keys;
use crate::link::{Endpoint, LinkSpec, fresh_seed};
use crate::metrics::{Prices, Stopwatch};
use crate::output_rows::RowWriter;
use crate::report::{BucketedReport, BucketsSection, PiSumReport, PsoReport};
use crate::source::{InputSpec, RowStream};

mod faults;
mod tasks;
pub use tasks::{TaskLink, Waves};

/// Connections opened again after a break before the job gives up.
const MAX_RECONNECTS: u32 = 100;

/// Most sessions one bucket may run for a peer that keeps losing it (each restart of a
/// party killed during a bucket asks for it again).
const MAX_RUNS: u32 = 8;

/// How long a party that finds its job complete on start waits for its peer to confirm.
const CONFIRM_WAIT: Duration = Duration::from_secs(15);

/// Drives one party over one transport, showing its progress under a label: the front
/// end's part (a progress bar for the CLI, callbacks for Python). Called from several
/// threads at once when buckets run concurrently.
pub type DriveFn<'a> =
    dyn Fn(&mut dyn Party, &mut (dyn Transport + Send), &str) -> Result<(), Failure> + Sync + 'a;

/// Everything a bucketed party needs.
pub struct Job<'a> {
    pub config: JobConfig<'a>,
    /// pi-sum: P1 plays the receiver, P2 the sender.
    pub role: PsoRole,
    pub input: &'a Path,
    pub keys: &'a Keys,
    pub values: &'a [String],
    pub policy: DuplicatePolicy,
    /// Key, value and duplicate settings as the front end spells them (a changed
    /// setting makes the staged rows stale).
    pub settings: String,
    pub link: &'a LinkSpec,
    /// `None` = auto.
    pub buckets: Option<u32>,
    /// Buckets (units) run at once: over TCP on that many connections (the smaller of
    /// the two parties' values), over an exchange directory on that many threads.
    pub concurrency: u32,
    pub target: u64,
    pub state_dir: &'a Path,
    /// RESULT.json: names the job's state.
    pub output: &'a Path,
    pub rows_path: Option<&'a Path>,
    pub prices: Prices,
}

impl Job<'_> {
    /// This party's name, the peer's, and this party's participant index.
    fn names(&self) -> (&'static str, &'static str, u8) {
        let (me, peer, index) = match self.role {
            PsoRole::Receiver => (PsoRole::Receiver, PsoRole::Sender, 0),
            PsoRole::Sender => (PsoRole::Sender, PsoRole::Receiver, 1),
        };
        (
            self.config.role_name(me),
            self.config.role_name(peer),
            index,
        )
    }
}

/// Runs the job to the end (continuing an earlier attempt's state), writes the rows
/// and returns the report with the job's state, which the caller removes once it has
/// written the report (a party killed before that writes it again on its next start).
pub fn run(job: &Job<'_>, drive: &DriveFn<'_>) -> Result<(BucketedReport, JobDir), Failure> {
    let mut runner = Runner::open(job)?;
    match (&job.link.endpoint, runner.dir.is_complete()) {
        (Endpoint::ExchangeDir { .. }, false) => {
            let waves = runner.plan_over_exchange_dir(drive)?;
            runner.waves_over_exchange_dir(&waves, drive)?;
        }
        (Endpoint::ExchangeDir { .. }, true) => {}
        (_, false) => runner.over_tcp(drive)?,
        // Finished earlier while the peer was away (its state kept for this): run the
        // plan sessions again, and any bucket the peer still lacks, as a fresh start.
        (_, true) if runner.dir.peer_unconfirmed() => runner.over_tcp(drive)?,
        // Killed after the last plan session: the peer may have lost that session's
        // last message with the connection and be waiting to hear that the job is
        // done. Tell it if it is there; finish regardless.
        (_, true) => runner.confirm_over_tcp(drive),
    }
    runner.finish(false)
}

/// One party's bucketed job on its state directory, staged (step 1) when opened. [`run`]
/// takes it to the end in this process; a distributed front end (Ray) calls
/// [`Runner::plan_over_exchange_dir`] once, [`Runner::bucket_over_exchange_dir`] per
/// bucket wherever it likes (each on its own `Runner` of the same job), one wave after
/// another, then [`Runner::finish`].
pub struct Runner<'a> {
    job: &'a Job<'a>,
    dir: JobDir,
    staged: super::Staged,
    /// Bytes moved by this process over every connection.
    counters: std::sync::Mutex<ByteCounters>,
    kind: &'static str,
    stopwatch: Stopwatch,
    /// The value layout's keys under the current plan, made once.
    value_keys: std::sync::Mutex<Option<std::sync::Arc<value::Keys>>>,
}

impl<'a> Runner<'a> {
    /// Opens the job: checks the settings, then stages the input unless an earlier
    /// attempt staged this very input (before any traffic: bad input stops here).
    pub fn open(job: &'a Job<'a>) -> Result<Self, Failure> {
        Self::open_with(job, true)
    }

    /// Opens a job whose input is already staged (a bucket task or the last step of a
    /// distributed job): never stages, and never removes what it finds.
    pub fn open_staged(job: &'a Job<'a>) -> Result<Self, Failure> {
        Self::open_with(job, false)
    }

    fn open_with(job: &'a Job<'a>, may_stage: bool) -> Result<Self, Failure> {
        job.config.check(job.role, job.values.len())?;
        let stopwatch = Stopwatch::start();
        let (me, _, _) = job.names();
        let op = job.config.name();
        // The staged rows are this party's identifiers in the clear: never where the
        // other party can read them.
        let (kind, peer) = match &job.link.endpoint {
            Endpoint::ExchangeDir { dir: xdir, .. } => {
                crate::link::refuse_shared_state_dir(job.state_dir, xdir)?;
                let x = std::path::absolute(xdir).unwrap_or_else(|_| xdir.clone());
                ("exchange-dir", x.display().to_string())
            }
            Endpoint::Listen(a) | Endpoint::Peer(a) if job.link.tls.is_some() => {
                ("tcp+mtls", a.clone())
            }
            Endpoint::Listen(a) | Endpoint::Peer(a) => ("tcp-plaintext", a.clone()),
        };
        let rows = job
            .rows_path
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let dir = JobDir::new(
            job.state_dir,
            op,
            me,
            job.output,
            &format!("{peer}\0{rows}"),
        );
        let fingerprint = Fingerprint::of_input(op, me, job.input, job.settings.clone())?;
        let staged = match (may_stage, dir.staged_already(&fingerprint)) {
            (_, Ok(s)) => s,
            (false, Err(e)) => return Err(e),
            (true, Err(_)) => match dir.staged(&fingerprint)? {
                Some(s) => s,
                None => Self::stage(job, &dir, &fingerprint)?,
            },
        };
        // psu transfers the sender's identifiers (before any traffic, as unbucketed);
        // private-id keeps each party's in fixed slots beside its private identifiers.
        let slotted = match Shape::of(job.config) {
            Some(Shape::Union) => job.role == PsoRole::Sender,
            Some(Shape::PrivateId) => true,
            _ => false,
        };
        if slotted && staged.max_id_len > pso::MAX_ITEM_LEN {
            return Err(Failure::input(format!(
                "an identifier of {} bytes is longer than the {} bytes bucketed {} holds",
                staged.max_id_len,
                pso::MAX_ITEM_LEN,
                job.config.name()
            )));
        }
        Ok(Self {
            job,
            dir,
            staged,
            counters: std::sync::Mutex::new(ByteCounters::default()),
            value_keys: std::sync::Mutex::new(None),
            kind,
            stopwatch,
        })
    }

    /// Step 1 into a fresh job directory.
    fn stage(
        job: &Job<'_>,
        dir: &JobDir,
        fingerprint: &Fingerprint,
    ) -> Result<super::Staged, Failure> {
        dir.begin_staging()?;
        dir.clear_plan()?;
        let spec = InputSpec {
            keys: job.keys,
            values: job.values,
            segment: None,
        };
        let bytes = fingerprint.input_bytes;
        let staged = RowStream::open(job.input, &spec).and_then(|rows| {
            super::stage(
                rows,
                job.values,
                job.policy,
                job.config.max_value(),
                &dir.dir,
                super::spill_count(bytes),
            )
        });
        // Bad input leaves nothing worth resuming.
        let staged = staged.inspect_err(|_| dir.remove())?;
        dir.save_staged(fingerprint, &staged)?;
        Ok(staged)
    }

    /// The link to the exchange subdirectory `name` (the plan's, or a bucket's).
    fn sub_link(&self, name: &str) -> Result<LinkSpec, Failure> {
        let mut spec = self.job.link.clone();
        match &mut spec.endpoint {
            Endpoint::ExchangeDir { dir, .. } => *dir = dir.join(name),
            _ => return Err(Failure::config("this step runs over an exchange directory")),
        }
        Ok(spec)
    }

    /// Steps 2 and 3 over an exchange directory (its `plan/` subdirectory), unless an
    /// earlier attempt recorded the plan; returns the buckets (or units) not yet
    /// finished, in waves: a wave's buckets may run in any order or at once, but only
    /// once every earlier wave has finished on this side. psi's buckets are one wave;
    /// a value-partitioned job has a wave per step ([`Layout::wave`]).
    pub fn plan_over_exchange_dir(
        &mut self,
        drive: &DriveFn<'_>,
    ) -> Result<Vec<Vec<u32>>, Failure> {
        let (me, peer, _) = self.job.names();
        let plan = match self.dir.plan()? {
            Some(plan) => plan,
            None => {
                let mut link = self.sub_link("plan")?.open(me, peer)?;
                let decision =
                    self.plan_session(link.transport.as_mut(), link.seed, false, 0, drive)?;
                self.add(link.transport.counters());
                self.adopt(&decision)?;
                remove_seed(link.seed_file);
                self.dir
                    .plan()?
                    .ok_or_else(|| Failure::other("the plan was not recorded"))?
            }
        };
        let units = self.units(&plan);
        let done = self.dir.done_bitmap(units)?;
        Ok(self.in_waves(&plan, (0..units).filter(|&b| !done[b as usize])))
    }

    /// `units` of `plan` grouped by wave, in wave order (no empty wave).
    fn in_waves(&self, plan: &Plan, units: impl IntoIterator<Item = u32>) -> Vec<Vec<u32>> {
        let mut waves: Vec<Vec<u32>> = Vec::new();
        for b in units {
            let w = self.wave_of(plan, b);
            if waves.len() <= w {
                waves.resize(w + 1, Vec::new());
            }
            waves[w].push(b);
        }
        waves.retain(|w| !w.is_empty());
        waves
    }

    /// Step 4 for bucket `b` over its exchange subdirectory (a restarted attempt replays
    /// its messages there from its private seed); nothing if `b` is already recorded.
    pub fn bucket_over_exchange_dir(&self, b: u32, drive: &DriveFn<'_>) -> Result<(), Failure> {
        if self.dir.done(b)?.is_some() {
            return Ok(());
        }
        let (me, peer, _) = self.job.names();
        let mut link = self.sub_link(&format!("bucket-{b:07}"))?.open(me, peer)?;
        self.bucket(b, link.transport.as_mut(), link.seed, drive)?;
        self.add(link.transport.counters());
        remove_seed(link.seed_file);
        Ok(())
    }
}

impl Runner<'_> {
    /// Every bucket of `waves` (from [`Runner::plan_over_exchange_dir`]) over the
    /// exchange directory, `--concurrency` at a time ([`lanes`]).
    fn waves_over_exchange_dir(
        &self,
        waves: &[Vec<u32>],
        drive: &DriveFn<'_>,
    ) -> Result<(), Failure> {
        let run: Vec<(u32, usize)> = waves
            .iter()
            .enumerate()
            .flat_map(|(w, wave)| wave.iter().map(move |&b| (b, w)))
            .collect();
        let count = self.job.concurrency.clamp(1, bucket_plan::MAX_LANES) as usize;
        let lanes = vec![(); count.min(run.len()).max(1)];
        lanes::run(&run, lanes, |_, b| self.bucket_over_exchange_dir(b, drive)).1
    }

    /// The wave of bucket `b` under `plan`: psi's buckets are one wave, a
    /// value-partitioned job's units one per step ([`Layout::wave`]).
    fn wave_of(&self, plan: &Plan, b: u32) -> usize {
        match self.by_value() {
            true => self.layout(plan).wave(b) as usize,
            false => 0,
        }
    }

    /// True for the value-partitioned layout of [`super::value`].
    fn by_value(&self) -> bool {
        Shape::of(self.job.config).is_some()
    }

    /// The value layout's shape (callers check [`Runner::by_value`]).
    fn shape(&self) -> Shape {
        Shape::of(self.job.config).unwrap_or(Shape::Card)
    }

    fn layout(&self, plan: &Plan) -> Layout {
        Layout::of(plan, self.job.role, self.shape())
    }

    /// The value layout's keys under `plan`, made once per plan in this process (they
    /// hold pi-sum P2's key pair once made).
    fn value_keys(&self, plan: &Plan) -> Result<std::sync::Arc<value::Keys>, Failure> {
        let mut slot = self
            .value_keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(keys) = slot.as_ref().filter(|k| k.belong_to(plan)) {
            return Ok(keys.clone());
        }
        let keys = std::sync::Arc::new(value::Keys::of(plan, self.job.config)?);
        *slot = Some(keys.clone());
        Ok(keys)
    }

    /// What a unit of the value layout needs, under `plan` and its `keys`.
    fn unit_context<'b>(&'b self, plan: &'b Plan, keys: &'b value::Keys) -> value::UnitContext<'b> {
        value::UnitContext {
            dir: &self.dir.dir,
            role: self.job.role,
            job: self.job.config,
            columns: self.job.values.len(),
            id_slot: value::id_slot(self.shape(), self.staged.max_id_len),
            plan,
            layout: self.layout(plan),
            keys,
        }
    }

    /// Sessions a job under `plan` runs (each recorded when finished): its buckets, or
    /// its value-partitioned units.
    fn units(&self, plan: &Plan) -> u32 {
        if self.by_value() {
            self.layout(plan).units()
        } else {
            plan.buckets
        }
    }

    /// This party's plan request on connection `lane` (with what it has finished of its
    /// recorded plan when `prior`).
    fn request(&self, prior: bool, lane: u32) -> Result<PlanRequest, Failure> {
        let prior = match (prior, self.dir.plan()?) {
            (true, Some(plan)) => Some((plan.id_bytes(), self.dir.done_bitmap(self.units(&plan))?)),
            _ => None,
        };
        Ok(PlanRequest {
            operation: self.job.config.protocol(),
            items: self.staged.items,
            buckets: self.job.buckets,
            target: self.job.target,
            lanes: self.job.concurrency,
            lane,
            prior,
        })
    }

    fn plan_session(
        &self,
        transport: &mut (dyn Transport + Send),
        seed: [u8; 32],
        prior: bool,
        lane: u32,
        drive: &DriveFn<'_>,
    ) -> Result<Decision, Failure> {
        let (_, _, index) = self.job.names();
        let mut party = bucket_plan::new_party(NAMES, index, self.request(prior, lane)?, seed)?;
        // The plan session comes first: both parties' key settings are checked there,
        // before any bucket's set-dependent message.
        party.agree(self.job.keys.agreed())?;
        drive(&mut party, transport, "agreeing on the bucket plan")?;
        match party.into_output() {
            // A connection of a lane the peer no longer has: a broken link, reopened.
            Some(Decision::OtherLanes { lane, peer_lane }) => Err(Failure::new(
                FailureKind::Transport,
                format!(
                    "this connection is lane {lane} here and lane {peer_lane} at the peer \
                     (one of the two restarted): reconnecting"
                ),
            )),
            Some(decision) => Ok(decision),
            None => Err(Failure::other("the bucket plan ended without a decision")),
        }
    }

    /// Step 3 under a new plan.
    fn adopt(&self, decision: &Decision) -> Result<(), Failure> {
        let Decision::New {
            id,
            key,
            buckets,
            peer_items,
        } = decision
        else {
            return Err(Failure::other(
                "the peer keeps a bucket plan this party has no record of; remove both \
                 parties' state directories to start over",
            ));
        };
        if *peer_items > self.job.config.max_peer_items() {
            return Err(Failure::config(format!(
                "the peer announces {peer_items} items, more than --max-peer-items {}",
                self.job.config.max_peer_items()
            )));
        }
        self.dir.clear_plan()?;
        if self.by_value() {
            let (r, s) = match self.job.role {
                PsoRole::Receiver => (self.staged.items, *peer_items),
                PsoRole::Sender => (*peer_items, self.staged.items),
            };

            value::prepare(
                &self.dir.dir,
                Layout::new(r, s, *buckets, self.shape()).chunk,
                &self.staged,
                self.job.values,
                self.job.policy,
                self.job.config.max_value(),
            )?;
            return self.dir.save_plan(&Plan {
                id: hex::encode(id),
                key: hex::encode(key),
                buckets: *buckets,
                items: self.staged.items,
                peer_items: *peer_items,
                padded: 0,
                secret: hex::encode(fresh_seed()),
            });
        }
        let largest = super::route(
            &self.dir.dir,
            &self.staged,
            self.job.values,
            self.job.policy,
            self.job.config.max_value(),
            key,
            *buckets,
        )?;
        let padded = super::padded_size(self.staged.items, *buckets);
        if largest > padded {
            // No plan is recorded: the next start agrees on a new key with the peer.
            self.dir.clear_plan()?;
            return Err(Failure::other(format!(
                "a bucket holds {largest} items, more than the public bucket size {padded} \
                 (probability below 2^-40); start the run again for a new partition key"
            )));
        }
        self.dir.save_plan(&Plan {
            id: hex::encode(id),
            key: hex::encode(key),
            buckets: *buckets,
            items: self.staged.items,
            peer_items: *peer_items,
            padded,
            secret: String::new(),
        })
    }

    fn over_tcp(&mut self, drive: &DriveFn<'_>) -> Result<(), Failure> {
        let (me, peer, _) = self.job.names();
        let mut reconnects = 0;
        // When the link last broke (or the job started).
        let mut broke = std::time::Instant::now();
        loop {
            // Opening waits up to --timeout for the peer. A handshake cut short (the peer
            // killed in it) is tried again, but a peer not back within --timeout of the
            // break ends the job (its state kept for a later start).
            let mut link = match self.job.link.open(me, peer) {
                Ok(link) => link,
                Err(e)
                    if e.kind == FailureKind::Transport
                        && reconnects < MAX_RECONNECTS
                        && broke.elapsed() < self.job.link.timeout =>
                {
                    reconnects += 1;
                    std::thread::sleep(Duration::from_millis(500));
                    continue;
                }
                // The peer is gone. If this party recorded every bucket, its answer is
                // whole, but the peer may lack some (killed during the last ones): keep
                // the state so the same command can serve them later.
                Err(_) if self.every_bucket_recorded()? => {
                    self.dir.mark_peer_unconfirmed()?;
                    self.dir.mark_complete()?;
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            let mut progressed = false;
            let attempt = self.tcp_connection(link.transport.as_mut(), drive, &mut progressed);
            self.add(link.transport.counters());
            if progressed {
                // Only breaks without progress in between add up.
                reconnects = 0;
            }
            match attempt {
                Ok(true) => return Ok(()),
                // A new plan was adopted: connect again to run under it (a peer that
                // keeps asking for new plans is cut off like a flapping link).
                Ok(false) if reconnects < MAX_RECONNECTS => reconnects += 1,
                Ok(false) => {
                    return Err(Failure::peer(format!(
                        "the peer asked for a new bucket plan {MAX_RECONNECTS} times without progress"
                    )));
                }
                // The connection broke (the peer killed, the network cut): connect again.
                Err(e) if e.kind == FailureKind::Transport && reconnects < MAX_RECONNECTS => {
                    reconnects += 1;
                    broke = std::time::Instant::now();
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// True when a plan is recorded and every one of its buckets is.
    fn every_bucket_recorded(&self) -> Result<bool, Failure> {
        Ok(match self.dir.plan()? {
            Some(plan) => self.dir.done_bitmap(self.units(&plan))?.iter().all(|&d| d),
            None => false,
        })
    }

    /// One best-effort plan session, waiting at most [`CONFIRM_WAIT`] for the peer, to
    /// tell a peer still waiting that every bucket is done.
    fn confirm_over_tcp(&mut self, drive: &DriveFn<'_>) {
        let (me, peer, _) = self.job.names();
        let mut spec = self.job.link.clone();
        spec.timeout = spec.timeout.min(CONFIRM_WAIT);
        if let Ok(mut link) = spec.open(me, peer) {
            let mut progressed = false;
            let _ = self.tcp_connection(link.transport.as_mut(), drive, &mut progressed);
            self.add(link.transport.counters());
        }
    }

    /// One connection: plan sessions and buckets until both parties have every bucket
    /// (`true`) or a new plan needs a new connection (`false`).
    fn tcp_connection(
        &self,
        transport: &mut (dyn Transport + Send),
        drive: &DriveFn<'_>,
        progressed: &mut bool,
    ) -> Result<bool, Failure> {
        loop {
            let decision = self.plan_session(transport, fresh_seed(), true, 0, drive)?;
            let (run, lanes) = match decision {
                Decision::Keep { run, lanes, .. } => (run, lanes),
                new => {
                    self.adopt(&new)?;
                    return Ok(false);
                }
            };
            if run.is_empty() {
                self.dir.mark_complete()?;
                self.dir.mark_peer_confirmed()?;
                return Ok(true);
            }
            let lanes = (lanes as usize).min(run.len()) as u32;
            let (finished, result) = self.run_in_lanes(transport, &run, lanes, drive);
            *progressed |= finished > 0;
            result?;
        }
    }

    /// Runs the buckets of `run` on `lanes` connections at once ([`lanes`]): this one
    /// (lane 0) and `lanes - 1` more, each opened with a plan session naming its lane
    /// that must keep the same run. Returns how many finished and the first failure.
    fn run_in_lanes(
        &self,
        transport: &mut (dyn Transport + Send),
        run: &[u32],
        lanes: u32,
        drive: &DriveFn<'_>,
    ) -> (usize, Result<(), Failure>) {
        let plan = match self.dir.plan() {
            Ok(Some(plan)) => plan,
            Ok(None) => {
                return (
                    0,
                    Err(Failure::other("buckets were asked for before the plan")),
                );
            }
            Err(e) => return (0, Err(e)),
        };
        let (me, peer, _) = self.job.names();
        let mut links = Vec::new();
        let mut opened = Ok(());
        for lane in 1..lanes {
            let link = self.job.link.open(me, peer).and_then(|mut link| {
                let decision =
                    self.plan_session(link.transport.as_mut(), fresh_seed(), true, lane, drive);
                self.add(link.transport.counters());
                match decision? {
                    Decision::Keep { run: same, .. } if same == run => Ok(link),
                    _ => Err(Failure::peer(format!(
                        "connection lane {lane} opened under another plan or run than lane 0"
                    ))),
                }
            });
            match link {
                Ok(link) => links.push(link),
                Err(e) => {
                    opened = Err(e);
                    break;
                }
            }
        }
        if let Err(e) = opened {
            return (0, Err(e));
        }
        let before: Vec<ByteCounters> = links.iter().map(|l| l.transport.counters()).collect();
        let mut transports: Vec<&mut (dyn Transport + Send)> = vec![transport];
        for link in &mut links {
            transports.push(link.transport.as_mut());
        }
        let run: Vec<(u32, usize)> = run.iter().map(|&b| (b, self.wave_of(&plan, b))).collect();
        let outcome = lanes::run(&run, transports, |t, b| {
            self.bucket(b, &mut **t, fresh_seed(), drive)
        });
        for (link, before) in links.iter().zip(before) {
            let after = link.transport.counters();
            self.add(ByteCounters {
                sent: after.sent - before.sent,
                received: after.received - before.received,
            });
        }
        outcome
    }

    fn add(&self, c: ByteCounters) {
        let mut counters = self
            .counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        counters.sent += c.sent;
        counters.received += c.received;
    }

    /// Runs bucket (or unit) `b` as one session and records it.
    fn bucket(
        &self,
        b: u32,
        transport: &mut (dyn Transport + Send),
        seed: [u8; 32],
        drive: &DriveFn<'_>,
    ) -> Result<(), Failure> {
        self.bucket_then(b, (transport, seed, drive), &|| Ok(()))
    }

    /// [`Runner::bucket`], calling `before_record` between the session's end and the
    /// record (a distributed task reports its session ended there).
    fn bucket_then(
        &self,
        b: u32,
        (transport, seed, drive): (&mut (dyn Transport + Send), [u8; 32], &DriveFn<'_>),
        before_record: &dyn Fn() -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let plan = self
            .dir
            .plan()?
            .ok_or_else(|| Failure::other("a bucket was asked for before the plan"))?;
        // A bucket this party has already recorded runs again only if the peer lacks
        // it (killed before recording it), and a bounded number of times: each run is a
        // fresh query of this party's bucket.
        let runs = match self.dir.done(b)? {
            Some(earlier) if earlier.runs >= MAX_RUNS => {
                return Err(Failure::peer(format!(
                    "the peer asks for bucket {b} again after {MAX_RUNS} runs; a bucket runs at most {MAX_RUNS} times"
                )));
            }
            Some(earlier) => earlier.runs + 1,
            None => 1,
        };
        let mut held;
        let transport: &mut (dyn Transport + Send) =
            match faults::hold_asked(self.job.names().0, b, &self.dir.dir) {
                Some(announce) => {
                    held = faults::HoldAfterSend {
                        inner: transport,
                        announce: Some(announce),
                    };
                    &mut held
                }
                None => transport,
            };
        let stopwatch = Stopwatch::start();
        let before = transport.counters();
        let ran = if self.by_value() {
            self.value_unit(&plan, b, transport, seed, drive)?
        } else {
            self.psi_bucket(&plan, b, transport, seed, drive)?
        };
        let after = transport.counters();
        let (cpu_seconds, wall_seconds) = stopwatch.elapsed();
        let figures = BucketFigures {
            bucket: b,
            items: ran.items,
            padded: plan.padded,
            peer_padded: ran.peer_padded,
            rows: ran.count,
            bytes_sent: after.sent - before.sent,
            bytes_received: after.received - before.received,
            cpu_seconds,
            wall_seconds,
            runs,
        };
        faults::die_if_asked(self.job.names().0, b, &self.dir.dir);
        before_record()?;
        self.dir.save_done(&figures, ran.rows.as_deref())
    }

    /// One psi session on bucket `b`, padded to the public size.
    fn psi_bucket(
        &self,
        plan: &Plan,
        b: u32,
        transport: &mut (dyn Transport + Send),
        seed: [u8; 32],
        drive: &DriveFn<'_>,
    ) -> Result<Ran, Failure> {
        // The peer's bucket must have its public padded size, no more (no less).
        let peer_padded = super::padded_size(plan.peer_items, plan.buckets);
        let JobConfig::Pso(config) = self.job.config else {
            return Err(Failure::other("identifier buckets run set operations only"));
        };
        let mut config = config.clone();
        config.max_peer_items = peer_padded;
        // Dummies from the session seed: an exchange-directory replay rebuilds the
        // same padded set, and so the same messages.
        let dummies = derive(&seed, b"privset/v1/bucket-dummies");
        let (dataset, real) =
            super::load_bucket(&self.dir.dir, b, self.job.values, plan.padded, dummies)?;
        let own_dummies: std::collections::HashSet<Vec<u8>> =
            dataset.ids[real..].iter().cloned().collect();
        let mut party = pso::new_party(self.job.role, &config, dataset, seed)?;
        let label = self.label(&format!("bucket {} of {}", b + 1, plan.buckets));
        drive(party.as_mut(), transport, &label)?;
        let output = party
            .into_output()
            .ok_or_else(|| Failure::other("a bucket ended without an output"))?;
        if output.peer_items() != peer_padded {
            return Err(Failure::peer(format!(
                "the peer's bucket {b} has {} items, not the public bucket size {peer_padded}",
                output.peer_items()
            )));
        }
        let rows: Option<Vec<Vec<u8>>> = match output {
            PsoOutput::Intersection { ref items, .. } => Some(
                items
                    .iter()
                    .filter(|i| !own_dummies.contains(*i))
                    .cloned()
                    .collect(),
            ),
            _ => None,
        };
        Ok(Ran {
            items: real as u64,
            peer_padded: output.peer_items(),
            count: rows.as_ref().map(|r| r.len() as u64),
            rows,
        })
    }

    /// Unit `u` of a value-partitioned job: this party sends its payload or receives and
    /// processes the peer's.
    fn value_unit(
        &self,
        plan: &Plan,
        u: u32,
        transport: &mut (dyn Transport + Send),
        seed: [u8; 32],
        drive: &DriveFn<'_>,
    ) -> Result<Ran, Failure> {
        let layout = self.layout(plan);
        let keys = self.value_keys(plan)?;
        let ctx = self.unit_context(plan, &keys);
        let id = UnitId {
            operation: self.job.config.protocol(),
            plan: plan.id_bytes(),
            unit: u,
            producer: layout.producer(u),
        };
        let step = layout.step(u);
        let label = self.label(&format!(
            "unit {} of {} ({})",
            u + 1,
            layout.units(),
            step.name()
        ));
        if let Step::Transfer(j) = step {
            return self.transfer_unit(&ctx, id, j, (transport, seed, drive), &label);
        }
        let (_, _, me) = self.job.names();
        let width = self.job.config.cwprf().element_len() as u64;
        // Elements in a payload (a compare unit's may be a filter, the total's none).
        let elements = |payload: &[u8]| match step {
            // pi-sum's send units start with their count (encrypted values follow).
            Step::Send(_) if layout.shape == Shape::PiSum => payload
                .first_chunk::<8>()
                .map_or(0, |n| u64::from_be_bytes(*n)),
            Step::Evaluate(_) | Step::Send(_) | Step::Reply(_) | Step::Return(_) => {
                payload.len() as u64 / width
            }
            Step::Union(_) => (payload.len() / pso::private_id::ID_LEN) as u64,
            _ => 0,
        };
        if id.producer == me {
            let payload = ctx.produce(u)?;
            let items = elements(&payload);
            let mut party = partition_unit::producer(NAMES, id, payload, seed)?;
            drive(&mut party, transport, &label)?;
            return Ok(Ran {
                items,
                peer_padded: 0,
                count: None,
                rows: None,
            });
        }
        let mut party = partition_unit::consumer(NAMES, id, ctx.max_payload(u)?, seed)?;
        drive(&mut party, transport, &label)?;
        let payload = party
            .into_output()
            .flatten()
            .ok_or_else(|| Failure::other("a unit ended without its payload"))?;
        let consumed = ctx.consume(u, &payload)?;
        Ok(Ran {
            items: 0,
            peer_padded: elements(&payload),
            count: consumed.count,
            rows: None,
        })
    }

    /// Transfer unit `j` of psi-card-sum: the oblivious transfer on part `j`.
    fn transfer_unit(
        &self,
        ctx: &value::UnitContext<'_>,
        id: UnitId,
        j: u32,
        (transport, seed, drive): (&mut (dyn Transport + Send), [u8; 32], &DriveFn<'_>),
        label: &str,
    ) -> Result<Ran, Failure> {
        let input = ctx.transfer_input(j)?;
        let elements = match &input {
            TransferInput::Choices(c) => c.len(),
            TransferInput::Values { values, .. } => values.len(),
            TransferInput::Items { slots, width } => slots.len() / width.max(&1),
        } as u64;
        let sender_items = match self.job.role {
            PsoRole::Sender => ctx.plan.items,
            PsoRole::Receiver => ctx.plan.peer_items,
        };
        let mut party =
            partition_unit::transfer_party(NAMES, id, sender_items, input, ctx.ot_seed(j), seed)?;
        drive(&mut party, transport, label)?;
        let out = party
            .into_output()
            .ok_or_else(|| Failure::other("a transfer unit ended without an output"))?;
        ctx.record_transfer(j, out)?;
        Ok(Ran {
            items: elements,
            peer_padded: elements,
            count: None,
            rows: None,
        })
    }

    fn label(&self, what: &str) -> String {
        let (me, _, _) = self.job.names();
        format!("{} {me}, {what}", self.job.config.name())
    }

    /// Once every bucket is recorded: writes the merged rows and returns RESULT.json
    /// with the job's state (for the caller to remove once the report is written).
    /// `distributed`: the buckets ran in other processes (Ray tasks), so their CPU and
    /// bytes are added from their records to this process's own.
    pub fn finish(self, distributed: bool) -> Result<(BucketedReport, JobDir), Failure> {
        let plan = self
            .dir
            .plan()?
            .ok_or_else(|| Failure::other("the job has no plan yet: nothing ran"))?;
        let units = self.units(&plan);
        let figures = (0..units)
            .map(|b| {
                self.dir.done(b)?.ok_or_else(|| {
                    Failure::other(format!("bucket {b} of {units} has not finished"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.dir.mark_complete()?;
        // psi's rows, the compare units' counts (psi-card's, P1's), the total's count
        // (the psi-card-sum sender's, P2's).
        let total_rows: u64 = figures.iter().filter_map(|f| f.rows).sum();
        let counters = *self
            .counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut run = Metered::measure(self.kind, counters, &self.stopwatch, self.job.prices);
        if distributed {
            run.bytes_sent += figures.iter().map(|f| f.bytes_sent).sum::<u64>();
            run.bytes_received += figures.iter().map(|f| f.bytes_received).sum::<u64>();
            run.cpu_seconds += figures.iter().map(|f| f.cpu_seconds).sum::<f64>();
            run.cost_cents = self.job.prices.cents(run.cpu_seconds, run.bytes_sent);
        }
        let buckets = BucketsSection {
            count: plan.buckets,
            padded: plan.padded,
            per_bucket: figures,
            kept_state: self.dir.peer_unconfirmed().then(|| self.dir.dir.clone()),
        };
        let report = match self.job.config {
            JobConfig::Pso(config) => {
                BucketedReport::Pso(self.pso_report(config, &plan, total_rows, run, buckets)?)
            }
            JobConfig::PiSum(config) => {
                let keys = self.value_keys(&plan)?;
                let output = self.unit_context(&plan, &keys).pi_sum_output(total_rows)?;
                let role = match self.job.role {
                    PsoRole::Receiver => pi_sum::Role::P1,
                    PsoRole::Sender => pi_sum::Role::P2,
                };
                let mut report = PiSumReport::new(config, role, &output, plan.items as usize, run);
                report.buckets = Some(buckets);
                BucketedReport::PiSum(report)
            }
        };
        Ok((report, self.dir))
    }

    /// A set operation's RESULT.json, writing the merged rows (psi).
    fn pso_report(
        &self,
        config: &pso::PsoConfig,
        plan: &Plan,
        total_rows: u64,
        run: Metered,
        buckets: BucketsSection,
    ) -> Result<PsoReport, Failure> {
        let operation = config.operation;
        let learns = self.job.role == PsoRole::Receiver || operation == Operation::PsiCardSum;
        // The value layout's context (psi's identifier buckets have none).
        let keys = match self.by_value() {
            true => Some(self.value_keys(plan)?),
            false => None,
        };
        let ctx = keys.as_deref().map(|k| self.unit_context(plan, k));
        let sum = match (&ctx, operation, self.job.role) {
            (Some(ctx), Operation::PsiCardSum, PsoRole::Sender) => Some(ctx.total()?.1),
            _ => None,
        };
        // psi's rows are its buckets' matches; psu's its own items and the sender's it
        // lacked (RowWriter needs each column's type first: two passes).
        let rows = match (self.job.rows_path, learns, operation) {
            (Some(path), true, Operation::Psi) => Some(self.write_ids(path, &|row| {
                for b in 0..plan.buckets {
                    for r in self.dir.rows(b)? {
                        row(&r?.id)?;
                    }
                }
                Ok(())
            })?),
            (Some(path), true, Operation::Psu) => ctx
                .as_ref()
                .map(|ctx| self.write_ids(path, &|row| ctx.union_rows(row)))
                .transpose()?,
            // Both private-id tables: a row per union identifier, with this party's item.
            (Some(path), _, Operation::PrivateId) => ctx
                .as_ref()
                .map(|ctx| self.write_private_ids(path, ctx))
                .transpose()?,
            _ => None,
        };
        Ok(PsoReport {
            protocol: operation.name(),
            role: self.job.role.name(),
            items: plan.items as usize,
            peer_items: plan.peer_items,
            // The compare units' matches; psu's and private-id's receiver learns the union
            // instead (as unbucketed, no cardinality field).
            cardinality: (learns && !matches!(operation, Operation::Psu | Operation::PrivateId))
                .then_some(total_rows),
            sum,
            rows,
            rows_file: rows.and(self.job.rows_path.map(Path::to_path_buf)),
            group: config.cwprf.name(),
            mqrpmt: config.construction.name(),
            last_message: config.last_message.name(),
            buckets: Some(buckets),
            run,
        })
    }

    /// Writes the identifiers `each` lists, one row each; returns how many.
    fn write_ids(&self, path: &Path, each: &RowLister<'_, [u8]>) -> Result<usize, Failure> {
        let header = self.job.keys.output_columns();
        self.write_rows(path, &header, &|row| {
            each(&mut |id| row(&self.job.keys.split(id)))
        })
    }

    /// Writes private-id's table as the unbucketed run does: `private_id` (hex), then
    /// this party's item's columns, empty where it has none.
    fn write_private_ids(
        &self,
        path: &Path,
        ctx: &value::UnitContext<'_>,
    ) -> Result<usize, Failure> {
        let columns = self.job.keys.output_columns();
        let blank = vec![Vec::new(); columns.len()];
        let header: Vec<String> = std::iter::once("private_id".to_string())
            .chain(columns)
            .collect();
        self.write_rows(path, &header, &|row| {
            ctx.private_id_table(|id, item| {
                let mut cells = vec![hex::encode(id).into_bytes()];
                match item {
                    Some(item) => cells.extend(self.job.keys.split(item)),
                    None => cells.extend(blank.iter().cloned()),
                }
                row(&cells)
            })
        })
    }

    /// Writes the rows `each` lists (twice: the first pass finds whether each column is
    /// UTF-8, which Parquet needs before the first row); returns how many.
    fn write_rows(
        &self,
        path: &Path,
        header: &[String],
        each: &RowLister<'_, [Vec<u8>]>,
    ) -> Result<usize, Failure> {
        let mut utf8 = vec![true; header.len()];
        each(&mut |cells| {
            for (u, cell) in utf8.iter_mut().zip(cells) {
                *u &= std::str::from_utf8(cell).is_ok();
            }
            Ok(())
        })?;
        let mut w = RowWriter::create(path, header, &utf8)?;
        let mut count = 0;
        each(&mut |cells| {
            count += 1;
            w.write(cells)
        })?;
        w.finish()?;
        Ok(count)
    }
}

/// Calls its argument with every row of a row file, in order (an identifier, or a
/// row's cells).
type RowLister<'a, T> =
    dyn Fn(&mut dyn FnMut(&T) -> Result<(), Failure>) -> Result<(), Failure> + 'a;

/// What one bucket or unit session gave this party.
struct Ran {
    /// This party's elements in it (real items of a bucket; a unit's payload elements).
    items: u64,
    /// The peer's elements in it.
    peer_padded: u64,
    /// Output count: a bucket's matches, a compare unit's count.
    count: Option<u64>,
    rows: Option<Vec<Vec<u8>>>,
}

/// Participant names of every bucketed session: the receiver is participant 0.
const NAMES: [&str; 2] = ["receiver", "sender"];

fn derive(seed: &[u8; 32], label: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(label);
    h.update(seed);
    h.finalize().into()
}

fn remove_seed(file: Option<std::path::PathBuf>) {
    if let Some(f) = file {
        let _ = std::fs::remove_file(f);
    }
}
