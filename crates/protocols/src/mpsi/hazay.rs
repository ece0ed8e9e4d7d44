//! Hazay and Venkitasubramaniam's protocol (de Jong, Ch. 5): encrypted polynomials
//! evaluated by the server, with bins (see [`super::bins`]); a star around the server.
//!
//! ```text
//!   client i (1..=t)                                  server (participant 0)
//!     key contribution -------------------------------->
//!                     <------------------------------- every contribution (relayed)
//!     per bin b: Enc(coefficients of Π_{x in bin b} (X − H(x))), padded to degree D_i,
//!     in chunks of whole bins ------------------------->  for every item y_j:
//!                                                          s_j = Σ_i Q_{i, bin_i(y_j)}(H(y_j))
//!                     <------------------------------- ReRand(r_j s_j), r_j fresh
//!     decryption shares (one proof) ------------------>  y_j in the intersection iff
//!                                                          r_j s_j decrypts to zero
//! ```
//!
//! Items become plaintexts through a hash keyed by the session (`H`), so a sum of
//! polynomials that are not all zero at `H(y)` is zero only with probability about
//! `2^-252`. The thesis adds the clients' polynomials coefficient by coefficient; with bins
//! of different sizes per client the server evaluates each client's polynomial and adds
//! the values, which is the same sum.

use std::sync::Arc;

use privset_crypto::filter::bloom::element_words;
use privset_crypto::tahe::elgamal::joint::CONTRIBUTION_LEN;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::bins::BinParams;
use super::decrypt::{ServerDecryption, accumulate, on_shares, send_shares};
use super::scheme::Scheme;
use super::setup::{Expected, JointKey, Setup, blame};
use super::{
    HUB, KIND_COMBINED, KIND_KEY, KIND_KEYS, KIND_POLYNOMIALS, MpsiConfig, MpsiOutput, Role,
};
use crate::engine::{Message, Protocol, Session};
use crate::error::ProtocolError;
use crate::session::SessionContext;
use crate::wire::PartyId;

/// The items as plaintexts: `H(x)`, SHA-256 keyed by the session, as a 256-bit integer
/// (reduced mod `ℓ` for ElGamal). Distinct items give distinct plaintexts barring a
/// collision, and the difference of two is below either Paillier prime, so a polynomial
/// vanishes only at its roots; Paillier's Horner steps are then 256-bit exponentiations
/// (a full-size plaintext would make them 3,072-bit ones).
fn item_scalars<S: Scheme>(
    pk: &S::PublicKey,
    ctx: &SessionContext,
    items: &[Vec<u8>],
) -> Vec<S::Scalar> {
    let key = ctx.derive_key("mpsi/hazay/items");
    items
        .par_iter()
        .map(|x| {
            let mut h = Sha256::new();
            h.update(key);
            h.update(x);
            let mut wide = [0u8; 64];
            wide[32..].copy_from_slice(&h.finalize());
            S::scalar_from_wide(pk, &wide)
        })
        .collect()
}

/// The items' bin words (one 64-bit hash word each, keyed by the session).
fn bin_words(ctx: &SessionContext, items: &[Vec<u8>]) -> Vec<u64> {
    let slices: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
    element_words(1, &ctx.derive_key("mpsi/hazay/bins"), &slices)
}

fn client_bins(setup: &Setup, client: PartyId) -> BinParams {
    BinParams::new(setup.size_of(client), setup.size_of(HUB), setup.holders())
}

/// `Π (X − r)` over `roots`, lowest degree first, padded with zeros to `width`
/// coefficients.
fn polynomial<S: Scheme>(pk: &S::PublicKey, roots: &[S::Scalar], width: usize) -> Vec<S::Scalar> {
    let zero = S::scalar_from_u64(pk, 0);
    let mut p = vec![zero.clone(); width];
    p[0] = S::scalar_from_u64(pk, 1);
    for (deg, r) in roots.iter().enumerate() {
        let minus_r = S::scalar_neg(pk, r);
        // p <- p * (X - r): from the top down.
        for i in (0..=deg + 1).rev() {
            let product = S::scalar_mul(pk, &p[i], &minus_r);
            p[i] = if i > 0 {
                S::scalar_add(pk, &p[i - 1], &product)
            } else {
                S::scalar_add(pk, &zero, &product)
            };
        }
    }
    p
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ServerPhase {
    Keys,
    Polynomials,
    Shares,
    Done,
}

/// One client's polynomials as they stream in: the server's items by bin.
struct Intake {
    client: PartyId,
    bins: BinParams,
    /// (bin, item) in bin order.
    pairs: Vec<(u64, u32)>,
    cursor: usize,
    chunk: usize,
}

pub(super) struct Server<S: Scheme> {
    setup: Setup,
    expected: Expected,
    phase: ServerPhase,
    keys: Option<JointKey>,
    pk: Option<S::PublicKey>,
    scalars: Vec<S::Scalar>,
    words: Vec<u64>,
    acc: Vec<Option<S::Ciphertext>>,
    intake: Option<Intake>,
    decryption: Option<ServerDecryption<S>>,
    output: Option<Vec<Vec<u8>>>,
}

impl<S: Scheme> Server<S> {
    pub fn new(config: MpsiConfig) -> Self {
        Self {
            setup: Setup::new(config),
            expected: Expected::default(),
            phase: ServerPhase::Keys,
            keys: None,
            pk: None,
            scalars: Vec::new(),
            words: Vec::new(),
            acc: Vec::new(),
            intake: None,
            decryption: None,
            output: None,
        }
    }

    /// The joint key round is over: every client gets every contribution.
    fn on_keys_complete(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let keys = self.keys.take().expect("keys");
        let pk = S::joint_public(&keys)?;
        let all = keys.encode_all();
        for c in 1..=self.setup.holders() as PartyId {
            session.send(c, KIND_KEYS, &all);
        }
        self.on_key(pk, session)
    }

    /// The key is known (agreed or dealt): expect the clients' polynomials.
    fn on_key(&mut self, pk: S::PublicKey, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.scalars = item_scalars::<S>(&pk, session.ctx, &self.setup.config.items);
        self.words = bin_words(session.ctx, &self.setup.config.items);
        let ct_len = S::ciphertext_len(&pk);
        for c in 1..=self.setup.holders() as PartyId {
            let bins = client_bins(&self.setup, c);
            for i in 0..bins.chunks() {
                let n = bins.chunk_bins(i).1 * bins.width();
                self.expected.push(c, KIND_POLYNOMIALS, n * ct_len);
            }
        }
        self.pk = Some(pk);
        self.phase = ServerPhase::Polynomials;
        let coefficients: usize = (1..=self.setup.holders() as PartyId)
            .map(|c| {
                let bins = client_bins(&self.setup, c);
                bins.bins as usize * bins.width()
            })
            .sum();
        session.meter.begin(
            "evaluating the clients' encrypted polynomials",
            coefficients,
        );
        Ok(())
    }

    fn on_chunk(&mut self, from: PartyId, body: &[u8]) -> Result<(), ProtocolError> {
        if self.intake.as_ref().is_none_or(|i| i.client != from) {
            let bins = client_bins(&self.setup, from);
            let mut pairs: Vec<(u64, u32)> = self
                .words
                .iter()
                .enumerate()
                .map(|(j, &w)| (bins.bin_of(w), j as u32))
                .collect();
            pairs.par_sort_unstable();
            self.intake = Some(Intake {
                client: from,
                bins,
                pairs,
                cursor: 0,
                chunk: 0,
            });
        }
        let pk = self.pk.clone().expect("key");
        let name = self.setup.name(from);
        let intake = self.intake.as_mut().expect("intake");
        let coefficients =
            S::decode_ciphertexts(&pk, body).map_err(blame(name, "encrypted polynomials"))?;
        let (first, count) = intake.bins.chunk_bins(intake.chunk);
        let width = intake.bins.width();
        let end = (first + count) as u64;
        let start = intake.cursor;
        while intake.cursor < intake.pairs.len() && intake.pairs[intake.cursor].0 < end {
            intake.cursor += 1;
        }
        let scalars = &self.scalars;
        let pairs = &intake.pairs[start..intake.cursor];
        let jobs: Vec<(&[S::Ciphertext], &S::Scalar)> = pairs
            .iter()
            .map(|&(bin, item)| {
                let at = (bin as usize - first) * width;
                (&coefficients[at..at + width], &scalars[item as usize])
            })
            .collect();
        let values = S::eval_polynomials(&pk, &jobs);
        for (&(_, item), v) in pairs.iter().zip(values) {
            accumulate::<S>(&mut self.acc[item as usize], &v.expect("width >= 1"), &pk);
        }
        intake.chunk += 1;
        if intake.chunk == intake.bins.chunks() {
            self.intake = None;
        }
        Ok(())
    }
}

impl<S: Scheme> Protocol for Server<S> {
    type Output = MpsiOutput;
    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        self.acc = vec![None; self.setup.config.items.len()];
        if let Some((pk, _)) = S::given(&self.setup.config) {
            return self.on_key(pk, session);
        }
        self.keys = Some(JointKey::new(self.setup.holders(), session.ctx));
        for c in 1..=self.setup.holders() as PartyId {
            self.expected.push(c, KIND_KEY, CONTRIBUTION_LEN);
        }
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        let (e, body) = self.expected.take(&message)?;
        let name = self.setup.name(e.from);
        match self.phase {
            ServerPhase::Keys => {
                let keys = self.keys.as_mut().expect("keys");
                keys.accept(e.from, body, &name)?;
                if keys.complete() {
                    self.on_keys_complete(session)?;
                }
            }
            ServerPhase::Polynomials => {
                self.on_chunk(e.from, body)?;
                session
                    .meter
                    .add(body.len() / S::ciphertext_len(self.pk.as_ref().expect("key")));
                if self.expected.is_empty() {
                    let sums: Vec<S::Ciphertext> = self
                        .acc
                        .drain(..)
                        .map(|a| a.expect("every client evaluated"))
                        .collect();
                    let clients = 1..=self.setup.holders() as PartyId;
                    self.decryption = Some(ServerDecryption::start(
                        self.pk.as_ref().expect("key"),
                        &sums,
                        clients,
                        &mut self.expected,
                        session,
                    ));
                    self.phase = ServerPhase::Shares;
                }
            }
            ServerPhase::Shares => {
                let items = &self.setup.config.items;
                let found = on_shares(
                    &mut self.decryption,
                    &self.expected,
                    e.from,
                    name,
                    body,
                    items,
                )?;
                if let Some(found) = found {
                    self.output = Some(found);
                    self.phase = ServerPhase::Done;
                }
            }
            ServerPhase::Done => return Err(ProtocolError::ApiMisuse("message after the end")),
        }
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        self.expected.awaiting()
    }

    fn max_message_len(&self) -> usize {
        self.expected.max_len()
    }

    fn is_done(&self) -> bool {
        self.phase == ServerPhase::Done
    }

    fn status(&self) -> String {
        let waiting = self
            .expected
            .awaiting()
            .map(|p| self.setup.name(p))
            .unwrap_or_default();
        match self.phase {
            ServerPhase::Keys => format!("agreeing the joint key (waiting for the {waiting})"),
            ServerPhase::Polynomials => {
                format!("evaluating encrypted polynomials (the {waiting}'s)")
            }
            ServerPhase::Shares => format!("collecting decryption shares (the {waiting}'s)"),
            ServerPhase::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<MpsiOutput> {
        Some(MpsiOutput {
            role: Role::Server,
            intersection: Some(self.output?),
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ClientPhase {
    Keys,
    Polynomials,
    Evaluations,
    Done,
}

pub(super) struct Client<S: Scheme> {
    setup: Setup,
    expected: Expected,
    phase: ClientPhase,
    keys: Option<JointKey>,
    key: Option<Arc<S::KeyShare>>,
    bins: BinParams,
    /// Each bin's roots.
    roots: Vec<Vec<S::Scalar>>,
    next_chunk: usize,
}

impl<S: Scheme> Client<S> {
    pub fn new(config: MpsiConfig) -> Self {
        Self {
            setup: Setup::new(config),
            expected: Expected::default(),
            phase: ClientPhase::Keys,
            keys: None,
            key: None,
            bins: BinParams { bins: 1, degree: 0 },
            roots: Vec::new(),
            next_chunk: 0,
        }
    }

    fn pk(&self) -> &S::PublicKey {
        S::share_public_key(self.key.as_ref().expect("key"))
    }

    fn expect_evaluations(&mut self) {
        self.phase = ClientPhase::Evaluations;
        let n = self.setup.size_of(HUB) as usize;
        let len = n * S::ciphertext_len(self.pk());
        self.expected.push(HUB, KIND_COMBINED, len);
    }

    /// The key is known (agreed or dealt): the items into their bins, each bin's
    /// polynomial then sent as deferred work.
    fn on_key(
        &mut self,
        key: Arc<S::KeyShare>,
        session: &mut Session<'_>,
    ) -> Result<(), ProtocolError> {
        let items = &self.setup.config.items;
        self.bins = client_bins(&self.setup, session.me());
        let scalars = item_scalars::<S>(S::share_public_key(&key), session.ctx, items);
        let words = bin_words(session.ctx, items);
        self.roots = vec![Vec::new(); self.bins.bins as usize];
        for (s, w) in scalars.into_iter().zip(words) {
            let bin = &mut self.roots[self.bins.bin_of(w) as usize];
            bin.push(s);
            if bin.len() > self.bins.degree {
                return Err(ProtocolError::Config(format!(
                    "a bin holds more than {} items (probability below 2^-40): run again",
                    self.bins.degree
                )));
            }
        }
        self.key = Some(key);
        self.phase = ClientPhase::Polynomials;
        Ok(())
    }
}

impl<S: Scheme> Protocol for Client<S> {
    type Output = MpsiOutput;
    type Handshake = Setup;

    fn handshake(&mut self) -> &mut Setup {
        &mut self.setup
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        if let Some((_, Some(share))) = S::given(&self.setup.config) {
            return self.on_key(share, session);
        }
        let mut keys = JointKey::new(self.setup.holders(), session.ctx);
        let mine = keys.contribute(session.me(), session.rng)?;
        session.send(HUB, KIND_KEY, &mine);
        self.keys = Some(keys);
        self.expected
            .push(HUB, KIND_KEYS, JointKey::all_len(self.setup.holders()));
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        let (_, body) = self.expected.take(&message)?;
        match self.phase {
            ClientPhase::Keys => {
                let mut keys = self.keys.take().expect("keys");
                keys.accept_all(body, &self.setup.config.names, session.me())?;
                let key = S::joint_share(&mut keys)?;
                self.on_key(key, session)?;
            }
            ClientPhase::Evaluations => {
                let server = self.setup.name(HUB);
                send_shares::<S>(self.key.as_ref().expect("key"), body, server, session)?;
                self.phase = ClientPhase::Done;
            }
            ClientPhase::Polynomials | ClientPhase::Done => {
                return Err(ProtocolError::ApiMisuse("message while none is expected"));
            }
        }
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        self.expected.awaiting()
    }

    fn max_message_len(&self) -> usize {
        self.expected.max_len()
    }

    fn has_deferred_work(&self) -> bool {
        self.phase == ClientPhase::Polynomials
    }

    /// One chunk of encrypted polynomials (while the previous one leaves).
    fn do_deferred_work(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let pk = self.pk().clone();
        let (first, count) = self.bins.chunk_bins(self.next_chunk);
        let width = self.bins.width();
        if self.next_chunk == 0 {
            session.meter.begin(
                "encrypting the bins' polynomials",
                self.bins.bins as usize * width,
            );
        }
        let coefficients: Vec<S::Scalar> = self.roots[first..first + count]
            .par_iter()
            .flat_map_iter(|roots| polynomial::<S>(&pk, roots, width))
            .collect();
        let encrypted = S::encrypt_encoded(&pk, &coefficients, session.rng);
        session.send(HUB, KIND_POLYNOMIALS, &encrypted);
        session.meter.add(count * width);
        self.next_chunk += 1;
        if self.next_chunk == self.bins.chunks() {
            self.roots = Vec::new();
            self.expect_evaluations();
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.phase == ClientPhase::Done
    }

    fn status(&self) -> String {
        match self.phase {
            ClientPhase::Keys => "agreeing the joint key".into(),
            ClientPhase::Polynomials => format!(
                "encrypting polynomials (chunk {} of {})",
                self.next_chunk + 1,
                self.bins.chunks()
            ),
            ClientPhase::Evaluations => "waiting for the server's evaluations".into(),
            ClientPhase::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<MpsiOutput> {
        (self.phase == ClientPhase::Done).then_some(MpsiOutput {
            role: Role::Client,
            intersection: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use privset_crypto::rng::SessionRng;
    use privset_crypto::tahe::ThresholdAhe;
    use privset_crypto::tahe::elgamal::{DkgParams, ThresholdElGamal as S, dkg_local};

    use super::*;

    #[test]
    fn polynomial_vanishes_exactly_at_its_roots() {
        let ks = dkg_local(
            &DkgParams {
                parties: 1,
                threshold: 1,
            },
            &mut SessionRng::from_seed([3; 32]),
        )
        .expect("key");
        let pk = ks[0].public_key();
        let u = |v: u64| S::scalar_from_u64(pk, v);
        let p = polynomial::<S>(pk, &[u(7), u(9)], 4);
        assert_eq!(p, vec![u(63), S::scalar_neg(pk, &u(16)), u(1), u(0)]);
        assert_eq!(polynomial::<S>(pk, &[], 3), vec![u(1), u(0), u(0)]);
    }
}
