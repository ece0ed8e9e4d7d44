//! The bucket plan: how two parties agree to run a large set operation as many small
//! sessions, one per bucket, and which buckets are still to run.
//!
//! Both parties announce their (de-duplicated) set size, the bucket count they ask for
//! (or `auto`), and what a previous attempt of the same job left them: the plan it ran
//! under and which buckets each has finished. The session carries no message beyond the
//! two hellos; the decision is a function of both hellos and the session transcript, so
//! both parties reach the same one:
//!
//! * both hold the same earlier plan: keep it; a bucket is run again unless both parties
//!   have it (a party killed after the peer recorded a bucket but before it did runs it
//!   again with the peer, and gets the same answer);
//! * otherwise a new plan: the bucket count from the requests, and the partition key
//!   from the transcript, which covers both parties' random salts. Neither party can
//!   choose the key alone.
//!
//! A kept plan also says how many connections (lanes) run its buckets at once: the
//! smaller of the two parties' `--concurrency`. Each lane opens with a plan session of
//! its own naming its lane number, so two parties never pair different lanes.
//!
//! ```text
//! hello settings: version u8 (2), operation u8 (the bucketed protocol's code),
//!                 items u64, requested u32 (0 = auto), target u64 (auto's items per bucket),
//!                 lanes u32 (1 to 64), lane u32 (below lanes),
//!                 prior plan [32] (zero = none), done: len u32 + bitmap bytes
//! ```

use sha2::{Digest, Sha256};

use crate::engine::{Engine, Handshake, Message, Protocol, Roster, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::wire::{self, PartyId, ProtocolId};

/// The most buckets a job may have.
pub const MAX_BUCKETS: u32 = 1 << 20;

const VERSION: u8 = 2;
/// Settings without the bitmap.
const FIXED_SETTINGS: usize = 1 + 1 + 8 + 4 + 8 + 4 + 4 + 32 + 4;

/// The most connections a job runs buckets on at once.
pub const MAX_LANES: u32 = 64;

/// What one party announces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanRequest {
    /// The protocol to run in buckets.
    pub operation: ProtocolId,
    /// This party's set size.
    pub items: u64,
    /// Bucket count asked for; `None` = auto.
    pub buckets: Option<u32>,
    /// Auto's items per bucket (of the larger set).
    pub target: u64,
    /// Connections this party would run buckets on at once (1 to [`MAX_LANES`]).
    pub lanes: u32,
    /// This connection's lane (below `lanes`): 0 for the connection that runs the plan.
    pub lane: u32,
    /// The plan an earlier attempt of this job ran under, with the buckets this party
    /// finished under it (`done.len()` = that plan's bucket count).
    pub prior: Option<(PlanId, Vec<bool>)>,
}

/// A plan's name: both parties derive it from the session that made the plan.
pub type PlanId = [u8; 32];

/// What both parties decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A new plan: partition with `key` into `buckets`.
    New {
        id: PlanId,
        key: [u8; 32],
        buckets: u32,
        peer_items: u64,
    },
    /// Keep the prior plan; run these buckets (possibly none: the job is complete) on
    /// `lanes` connections at once. `round` names this session's run (both parties
    /// derive it from the transcript): the bucket tasks of a distributed job meet
    /// under it.
    Keep {
        run: Vec<u32>,
        lanes: u32,
        round: [u8; 32],
    },
    /// The two ends of this connection were opened as different lanes (one party
    /// restarted while the other was opening a further lane): both drop every
    /// connection and start again from lane 0.
    OtherLanes { lane: u32, peer_lane: u32 },
}

/// The bucket count auto picks for sets of `items` (the larger) with `target` per bucket.
pub fn auto_buckets(items: u64, target: u64) -> u32 {
    let target = target.max(1);
    items.div_ceil(target).clamp(1, u64::from(MAX_BUCKETS)) as u32
}

/// The most buckets a job whose larger set has `items` items may have: 64, or one per
/// 1,024 items of the larger set, whichever is more.
pub fn max_buckets(items: u64) -> u32 {
    items.div_ceil(1024).clamp(64, u64::from(MAX_BUCKETS)) as u32
}

/// One party of the plan session.
pub struct BucketPlan {
    names: [String; 2],
    me: PartyId,
    request: PlanRequest,
    peer: Option<PlanRequest>,
    decision: Option<Decision>,
}

/// A plan party ready to run; `names[0]` plays the bucketed protocol's first role.
pub fn new_party(
    names: [&str; 2],
    me: PartyId,
    request: PlanRequest,
    seed: [u8; 32],
) -> Result<Engine<BucketPlan>, ProtocolError> {
    if let Some(b) = request.buckets
        && !(1..=MAX_BUCKETS).contains(&b)
    {
        return Err(ProtocolError::Config(format!(
            "a job has 1 to {MAX_BUCKETS} buckets, not {b}"
        )));
    }
    if !valid_lanes(request.lanes, request.lane) {
        return Err(ProtocolError::Config(format!(
            "--concurrency is 1 to {MAX_LANES}, not {} (lane {})",
            request.lanes, request.lane
        )));
    }
    Engine::new(
        BucketPlan {
            names: names.map(str::to_string),
            me,
            request,
            peer: None,
            decision: None,
        },
        seed,
    )
}

fn valid_lanes(lanes: u32, lane: u32) -> bool {
    (1..=MAX_LANES).contains(&lanes) && lane < lanes
}

fn encode(r: &PlanRequest) -> Vec<u8> {
    let mut out = vec![VERSION, r.operation.code()];
    out.extend_from_slice(&r.items.to_be_bytes());
    out.extend_from_slice(&r.buckets.unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&r.target.to_be_bytes());
    out.extend_from_slice(&r.lanes.to_be_bytes());
    out.extend_from_slice(&r.lane.to_be_bytes());
    match &r.prior {
        Some((id, done)) => {
            out.extend_from_slice(id);
            let bits = bitmap(done);
            out.extend_from_slice(&(bits.len() as u32).to_be_bytes());
            out.extend_from_slice(&bits);
        }
        None => {
            out.extend_from_slice(&[0u8; 32]);
            out.extend_from_slice(&0u32.to_be_bytes());
        }
    }
    out
}

fn bitmap(done: &[bool]) -> Vec<u8> {
    let mut bits = vec![0u8; done.len().div_ceil(8)];
    for (i, _) in done.iter().enumerate().filter(|(_, d)| **d) {
        bits[i / 8] |= 1 << (i % 8);
    }
    bits
}

impl BucketPlan {
    fn decide(&self, transcript: &[u8; 32]) -> Result<Decision, ProtocolError> {
        let (mine, theirs) = (
            &self.request,
            self.peer.as_ref().ok_or(ProtocolError::ApiMisuse(
                "the plan is decided after the peer's hello",
            ))?,
        );
        if mine.lane != theirs.lane {
            return Ok(Decision::OtherLanes {
                lane: mine.lane,
                peer_lane: theirs.lane,
            });
        }
        let derive = |label: &[u8]| -> [u8; 32] {
            let mut h = Sha256::new();
            h.update(label);
            h.update(transcript);
            h.finalize().into()
        };
        if let (Some((a, done_a)), Some((b, bits_b))) = (&mine.prior, &theirs.prior)
            && a == b
        {
            let count = done_a.len();
            // The peer's bitmap must be this plan's length (padded to whole bytes).
            let run = (0..count)
                .filter(|&i| !(done_a[i] && bits_b[i]))
                .map(|i| i as u32)
                .collect();
            let lanes = mine.lanes.min(theirs.lanes);
            return Ok(Decision::Keep {
                run,
                lanes,
                round: derive(b"privset/v1/bucket-plan/round"),
            });
        }
        let larger = mine.items.max(theirs.items);
        if mine.target != theirs.target {
            return Err(ProtocolError::Incompatible(format!(
                "items per bucket of auto: this party uses {}, the peer {}",
                mine.target, theirs.target
            )));
        }
        // Neither party may make the other pad and run far more sessions than the sets
        // need: a count is at most max(64, larger set / 1024).
        let most = max_buckets(larger);
        if let Some(b) = [mine.buckets, theirs.buckets]
            .into_iter()
            .flatten()
            .find(|&b| b > most)
        {
            return Err(ProtocolError::Incompatible(format!(
                "bucket count {b}: sets of at most {larger} items run in at most {most} buckets"
            )));
        }
        let buckets = match (mine.buckets, theirs.buckets) {
            (Some(a), Some(b)) if a != b => {
                return Err(ProtocolError::Incompatible(format!(
                    "bucket count: the {} asks for {a}, the {} for {b}",
                    self.names[self.me as usize],
                    self.names[1 - self.me as usize]
                )));
            }
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => auto_buckets(larger, mine.target),
        };
        Ok(Decision::New {
            id: derive(b"privset/v1/bucket-plan/id"),
            key: derive(b"privset/v1/bucket-plan/key"),
            buckets,
            peer_items: theirs.items,
        })
    }
}

impl Handshake for BucketPlan {
    fn roster(&self) -> Roster {
        Roster::pair(
            ProtocolId::BucketPlan,
            [&self.names[0], &self.names[1]],
            self.me,
        )
    }

    fn kind_name(_kind: u8) -> &'static str {
        "a bucket-plan message (the plan has none beyond the hellos)"
    }

    fn settings(&self) -> Vec<u8> {
        encode(&self.request)
    }

    fn max_settings_len(&self) -> usize {
        FIXED_SETTINGS + (MAX_BUCKETS as usize).div_ceil(8)
    }

    fn check_settings(&mut self, _from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let mut r = wire::Reader::new(settings, "bucket-plan hello");
        let version = r.u8()?;
        if version != VERSION {
            return Err(ProtocolError::Incompatible(format!(
                "bucket-plan version: this party speaks {VERSION}, the peer {version}"
            )));
        }
        let operation = r.u8()?;
        if operation != self.request.operation.code() {
            let theirs =
                ProtocolId::from_code(operation).map_or("an unknown protocol", |p| p.name());
            return Err(ProtocolError::Incompatible(format!(
                "bucketed operation: this party runs {}, the peer {theirs}",
                self.request.operation.name()
            )));
        }
        let items = r.u64()?;
        let buckets = match r.u32()? {
            0 => None,
            b if b <= MAX_BUCKETS => Some(b),
            b => {
                return Err(PeerMisbehaved::Malformed(format!(
                    "the peer asks for {b} buckets (at most {MAX_BUCKETS})"
                ))
                .into());
            }
        };
        let target = r.u64()?;
        let (lanes, lane) = (r.u32()?, r.u32()?);
        if !valid_lanes(lanes, lane) {
            return Err(PeerMisbehaved::Malformed(format!(
                "the peer runs lane {lane} of {lanes} (1 to {MAX_LANES} lanes)"
            ))
            .into());
        }
        let id: PlanId = r.array()?;
        let bits = r.bytes((MAX_BUCKETS as usize).div_ceil(8))?;
        let len = bits.len();
        r.finish()?;
        let prior = (id != [0u8; 32]).then(|| {
            // Compared with this party's own plan only when the ids match; a bitmap of
            // the wrong length for that plan is caught there.
            let done: Vec<bool> = (0..len * 8)
                .map(|i| bits[i / 8] >> (i % 8) & 1 == 1)
                .collect();
            (id, done)
        });
        if let (Some((a, own)), Some((b, peer))) = (&self.request.prior, &prior)
            && a == b
            && peer.len() != own.len().div_ceil(8) * 8
        {
            return Err(PeerMisbehaved::Malformed(format!(
                "the peer's record of plan {} covers {} buckets, this party's {}",
                hex_prefix(a),
                peer.len(),
                own.len()
            ))
            .into());
        }
        self.peer = Some(PlanRequest {
            operation: self.request.operation,
            items,
            buckets,
            target,
            lanes,
            lane,
            prior,
        });
        Ok(())
    }
}

fn hex_prefix(id: &PlanId) -> String {
    id[..4].iter().map(|b| format!("{b:02x}")).collect()
}

impl Protocol for BucketPlan {
    type Output = Decision;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.decision = Some(self.decide(&session.ctx.transcript)?);
        Ok(())
    }

    fn handle(
        &mut self,
        _session: &mut Session<'_>,
        _message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        Err(ProtocolError::ApiMisuse(
            "the bucket plan has no message after the hellos",
        ))
    }

    fn awaiting(&self) -> Option<PartyId> {
        None
    }

    fn max_message_len(&self) -> usize {
        0
    }

    fn is_done(&self) -> bool {
        self.decision.is_some()
    }

    fn status(&self) -> String {
        "agreeing on the bucket plan".into()
    }

    fn into_output(self) -> Option<Decision> {
        self.decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::party::Party;

    fn run(a: PlanRequest, b: PlanRequest) -> (Result<Decision, String>, Result<Decision, String>) {
        let mut pa = new_party(["receiver", "sender"], 0, a, [1; 32]).unwrap();
        let mut pb = new_party(["receiver", "sender"], 1, b, [2; 32]).unwrap();
        let (mut ea, mut eb) = (None, None);
        // Exchange hellos until neither has anything to send.
        for _ in 0..4 {
            while let Some(m) = pa.poll_outgoing() {
                if let Err(e) = pb.handle_message(0, &m.bytes) {
                    eb.get_or_insert(e.to_string());
                }
            }
            while let Some(m) = pb.poll_outgoing() {
                if let Err(e) = pa.handle_message(1, &m.bytes) {
                    ea.get_or_insert(e.to_string());
                }
            }
        }
        let out = |p: Engine<BucketPlan>, e: Option<String>| {
            p.into_output()
                .ok_or_else(|| e.unwrap_or_else(|| "no decision".into()))
        };
        (out(pa, ea), out(pb, eb))
    }

    fn request(items: u64, buckets: Option<u32>) -> PlanRequest {
        PlanRequest {
            operation: ProtocolId::Psi,
            items,
            buckets,
            target: 1 << 20,
            lanes: 1,
            lane: 0,
            prior: None,
        }
    }

    #[test]
    fn both_parties_reach_the_same_new_plan() {
        let (a, b) = run(request(5 << 20, None), request(1 << 20, None));
        let (a, b) = (a.unwrap(), b.unwrap());
        match (&a, &b) {
            (
                Decision::New {
                    id,
                    key,
                    buckets,
                    peer_items,
                },
                Decision::New {
                    id: id2,
                    key: key2,
                    buckets: buckets2,
                    peer_items: peer2,
                },
            ) => {
                assert_eq!((id, key, buckets), (id2, key2, buckets2));
                assert_eq!(*buckets, 5);
                assert_eq!((*peer_items, *peer2), (1 << 20, 5 << 20));
                assert_ne!(id, key);
            }
            _ => panic!("{a:?} {b:?}"),
        }
    }

    #[test]
    fn an_explicit_count_wins_over_auto_and_two_different_ones_are_refused() {
        let (a, _) = run(request(10, Some(7)), request(10, None));
        assert!(matches!(a.unwrap(), Decision::New { buckets: 7, .. }));
        let (a, b) = run(request(10, Some(7)), request(10, Some(8)));
        assert!(a.is_err() && b.is_err());
        // A peer cannot make a small job run in a huge number of buckets.
        let (a, _) = run(request(10, None), request(10, Some(65)));
        assert!(a.unwrap_err().contains("at most 64"));
        let (a, _) = run(request(1 << 20, None), request(10, Some(1024)));
        assert!(matches!(a.unwrap(), Decision::New { buckets: 1024, .. }));
        let mut odd = request(10, None);
        odd.target = 1;
        let (a, _) = run(request(10, None), odd);
        assert!(a.unwrap_err().contains("items per bucket"));
    }

    #[test]
    fn a_shared_prior_plan_is_kept_and_runs_what_either_party_lacks() {
        let id = [9u8; 32];
        let mut a = request(10, None);
        a.prior = Some((id, vec![true, true, false, true, false]));
        let mut b = request(10, None);
        b.prior = Some((id, vec![true, false, false, true, false]));
        let (x, y) = run(a.clone(), b.clone());
        let (x, y) = (x.unwrap(), y.unwrap());
        // Both name the same round (from the session's transcript).
        assert_eq!(x, y);
        let Decision::Keep {
            run: r,
            lanes,
            round,
        } = x
        else {
            panic!("not kept: {x:?}");
        };
        assert_eq!((r, lanes), (vec![1, 2, 4], 1));
        assert_ne!(round, [0; 32]);
        // The smaller concurrency wins; lanes of different numbers never pair.
        let (mut a3, mut b2) = (a.clone(), b.clone());
        (a3.lanes, b2.lanes) = (3, 2);
        let (x, y) = run(a3.clone(), b2.clone());
        assert!(matches!(x.unwrap(), Decision::Keep { lanes: 2, .. }));
        assert!(matches!(y.unwrap(), Decision::Keep { lanes: 2, .. }));
        (a3.lane, b2.lane) = (1, 0);
        let (x, y) = run(a3.clone(), b2.clone());
        let other = |lane, peer_lane| Decision::OtherLanes { lane, peer_lane };
        assert_eq!((x.unwrap(), y.unwrap()), (other(1, 0), other(0, 1)));
        // A hostile lane count is refused.
        let mut bad = b.clone();
        (bad.lanes, bad.lane) = (65, 0);
        assert!(new_party(["receiver", "sender"], 1, bad, [2; 32]).is_err());
        // Different prior plans: a new plan.
        b.prior = Some(([8u8; 32], vec![true; 5]));
        let (x, _) = run(a, b);
        assert!(matches!(x.unwrap(), Decision::New { .. }));
    }
}
