//! The client and the server of one unbalanced-PSI session, on the [`Engine`].
//!
//! ```text
//! hello (client): version u8, role u8 (0), item count u32
//! hello (server): version u8, role u8 (1), OPRF group u8, label length u32,
//!                 label nonce length u8, preset TOML (u32 + bytes), bundle index
//!                 count u32, then bin bundles per index (u32 each)
//! oprf request (kind 1, client -> server): the blinded items, 32 bytes each
//! oprf answer  (kind 2, server -> client): each under the server's OPRF key
//! query        (kind 3, client -> server): see [`super::query`]
//! answer       (kind 4, server -> client): see [`super::query`]
//! ```
//! The server's hello carries its OPRF group and preset, so the client needs no
//! parameters of its own;
//! the client checks the preset as strictly as a file (128-bit security, a table that
//! takes its items) before it encrypts anything.

use std::sync::Arc;

use crate::engine::{Engine, Handshake, Message, Protocol, Roster, Session};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::party::Party;
use crate::wire::{self, PartyId, ProtocolId};

use super::db::Database;
use super::item::{self, Blinding, ELEMENT_LEN, LabelLayout, Oprf};
use super::preset::Preset;
use super::query::{self, ClientQuery};

const PROTOCOL: ProtocolId = ProtocolId::Upsi;
/// 2: queries at the preset's query level, results shortened (2026-11-27).
/// 3: the server's hello names the OPRF group (X25519 or ristretto255).
/// 4: the server's hello gives its labels' nonce length (sized to the label parts since
/// 2026-11-29, `item::nonce_len_for`).
/// 5: the server's hello gives its labels' layout (`item::LabelLayout`).
const VERSION: u8 = 5;
/// Participant indices and names.
pub const CLIENT: PartyId = 0;
pub const SERVER: PartyId = 1;
const NAMES: [&str; 2] = ["client", "server"];

/// Message kinds.
pub mod kind {
    pub const OPRF_REQUEST: u8 = 1;
    pub const OPRF_ANSWER: u8 = 2;
    pub const QUERY: u8 = 3;
    pub const ANSWER: u8 = 4;

    pub fn name(kind: u8) -> &'static str {
        match kind {
            OPRF_REQUEST => "OPRF request",
            OPRF_ANSWER => "OPRF answer",
            QUERY => "encrypted query",
            ANSWER => "encrypted answer",
            _ => "an unknown unbalanced-PSI message",
        }
    }
}

/// Most bin bundles per bundle index a client accepts (bounds the answer it waits for:
/// 2^16 bundles of 1,304 items is 2^26 items per bin, far past any real server).
const MAX_BUNDLES_PER_INDEX: u32 = 1 << 16;
/// Longest server hello.
const MAX_SERVER_HELLO: usize = 1 << 22;

/// What the client learns.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientOutput {
    /// Per client item (input order): `Some(label)` if it is in the server's set (an
    /// empty label when the database is unlabeled), `None` if not.
    pub matches: Vec<Option<Vec<u8>>>,
    /// The server's preset.
    pub preset: String,
    pub label_len: usize,
    /// How the labels hold the server's label columns (for the front end to decode).
    pub label_layout: LabelLayout,
    /// Bin bundles per bundle index: what the client learns of the server's set size.
    pub bundle_counts: Vec<u32>,
    /// log2 of the probability that some item matched by chance.
    pub false_positive_log2: f64,
}

/// What the server learns: the size of the client's set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerOutput {
    pub client_items: u64,
}

enum ClientState {
    Starting,
    AwaitOprf { blinding: Blinding },
    AwaitAnswer { query: Box<ClientQuery> },
    Done,
}

/// The client of one session.
pub struct Client {
    items: Vec<Vec<u8>>,
    /// Set from the server's hello.
    preset: Option<Preset>,
    oprf: Oprf,
    label_len: usize,
    nonce_len: usize,
    label_layout: LabelLayout,
    bundle_counts: Vec<u32>,
    state: ClientState,
    output: Option<ClientOutput>,
}

impl Client {
    /// The client party (participant 0) for `items`; its randomness all from `seed`.
    pub fn new(items: Vec<Vec<u8>>, seed: [u8; 32]) -> Result<Engine<Self>, ProtocolError> {
        if u32::try_from(items.len()).is_err() {
            return Err(ProtocolError::Config("too many client items".into()));
        }
        Engine::new(
            Self {
                items,
                preset: None,
                oprf: Oprf::X25519,
                label_len: 0,
                nonce_len: 0,
                label_layout: LabelLayout::default(),
                bundle_counts: Vec::new(),
                state: ClientState::Starting,
                output: None,
            },
            seed,
        )
    }

    fn preset(&self) -> Result<&Preset, ProtocolError> {
        self.preset
            .as_ref()
            .ok_or(ProtocolError::ApiMisuse("the server's hello was not read"))
    }
}

impl Handshake for Client {
    fn roster(&self) -> Roster {
        Roster::pair(PROTOCOL, NAMES, CLIENT)
    }

    fn kind_name(kind: u8) -> &'static str {
        kind::name(kind)
    }

    fn settings(&self) -> Vec<u8> {
        let mut out = vec![VERSION, 0];
        out.extend_from_slice(&(self.items.len() as u32).to_be_bytes());
        out
    }

    fn max_settings_len(&self) -> usize {
        MAX_SERVER_HELLO
    }

    fn check_settings(&mut self, _from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let mut r = wire::Reader::new(settings, "server hello");
        let (version, role) = (r.u8()?, r.u8()?);
        if version != VERSION || role != 1 {
            return Err(ProtocolError::Incompatible(format!(
                "the peer is not an unbalanced-PSI server of version {VERSION} (version {version}, role {role})"
            )));
        }
        let code = r.u8()?;
        let oprf = Oprf::from_code(code).ok_or_else(|| {
            ProtocolError::Incompatible(format!("the server's OPRF group ({code}) is unknown"))
        })?;
        let label_len = r.u32()? as usize;
        if label_len > item::MAX_LABEL_LEN {
            return Err(PeerMisbehaved::Malformed(format!("labels of {label_len} bytes")).into());
        }
        let nonce_len = usize::from(r.u8()?);
        item::check_nonce_len(nonce_len).map_err(PeerMisbehaved::Malformed)?;
        let code = r.u8()?;
        let label_layout = LabelLayout::from_code(code).ok_or_else(|| {
            PeerMisbehaved::Malformed(format!("the server's label layout ({code}) is unknown"))
        })?;
        let text = std::str::from_utf8(r.bytes(1 << 16)?)
            .map_err(|_| PeerMisbehaved::Malformed("the server's preset is not UTF-8".into()))?;
        let preset = Preset::parse(text).map_err(|e| {
            ProtocolError::Incompatible(format!("the server's preset is refused: {e}"))
        })?;
        let indices = r.u32()? as usize;
        if indices != preset.bundle_indices() {
            return Err(PeerMisbehaved::Malformed(format!(
                "{indices} bundle counts for a preset of {} bundle indices",
                preset.bundle_indices()
            ))
            .into());
        }
        let counts = (0..indices)
            .map(|_| r.u32())
            .collect::<Result<Vec<_>, _>>()?;
        r.finish()?;
        if let Some(c) = counts.iter().find(|&&c| c > MAX_BUNDLES_PER_INDEX) {
            return Err(PeerMisbehaved::Malformed(format!(
                "{c} bin bundles in one bundle index (at most {MAX_BUNDLES_PER_INDEX})"
            ))
            .into());
        }
        if self.items.len() > preset.max_client_items {
            return Err(ProtocolError::Incompatible(format!(
                "the client has {} items; the server's preset {} takes at most {}",
                self.items.len(),
                preset.name,
                preset.max_client_items
            )));
        }
        self.preset = Some(preset);
        self.oprf = oprf;
        self.label_len = label_len;
        self.nonce_len = nonce_len;
        self.label_layout = label_layout;
        self.bundle_counts = counts;
        Ok(())
    }
}

impl Protocol for Client {
    type Output = ClientOutput;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    fn start(&mut self, session: &mut Session<'_>) -> Result<(), ProtocolError> {
        let (blinding, request) = self.oprf.blind(&self.items, session.rng)?;
        session.send(SERVER, kind::OPRF_REQUEST, &request);
        self.state = ClientState::AwaitOprf { blinding };
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        match std::mem::replace(&mut self.state, ClientState::Done) {
            ClientState::AwaitOprf { blinding } => {
                let answer = message.expect(kind::OPRF_ANSWER)?;
                let hashed = blinding.finish(self.items.len(), answer)?;
                let (query, bytes) = ClientQuery::new(self.preset()?.clone(), hashed, session.rng)?;
                session.send(SERVER, kind::QUERY, &bytes);
                self.state = ClientState::AwaitAnswer {
                    query: Box::new(query),
                };
                Ok(())
            }
            ClientState::AwaitAnswer { query } => {
                let answer = message.expect(kind::ANSWER)?;
                let matches =
                    query.finish(answer, &self.bundle_counts, self.label_len, self.nonce_len)?;
                let preset = self.preset()?;
                let deepest = self.bundle_counts.iter().copied().max().unwrap_or(0) as usize;
                self.output = Some(ClientOutput {
                    matches,
                    preset: preset.name.clone(),
                    label_len: self.label_len,
                    label_layout: self.label_layout,
                    bundle_counts: self.bundle_counts.clone(),
                    false_positive_log2: preset.false_positive_log2(self.items.len(), deepest),
                });
                Ok(())
            }
            ClientState::Starting | ClientState::Done => Err(ProtocolError::ApiMisuse(
                "an unbalanced-PSI message the client did not await",
            )),
        }
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            ClientState::Done => None,
            _ => Some(SERVER),
        }
    }

    fn max_message_len(&self) -> usize {
        let Some(preset) = &self.preset else { return 0 };
        match self.state {
            ClientState::AwaitOprf { .. } => self.items.len() * ELEMENT_LEN,
            ClientState::AwaitAnswer { .. } => {
                let bundles: usize = self.bundle_counts.iter().map(|&c| c as usize).sum();
                let encrypted = item::encrypted_label_len(self.label_len, self.nonce_len);
                query::answer_len_bound(preset, bundles, item::label_parts(preset, encrypted))
            }
            ClientState::Starting | ClientState::Done => 0,
        }
    }

    fn is_done(&self) -> bool {
        self.output.is_some()
    }

    fn status(&self) -> String {
        match self.state {
            ClientState::Starting => "waiting for the server".into(),
            ClientState::AwaitOprf { .. } => {
                format!("waiting for the OPRF of {} items", self.items.len())
            }
            ClientState::AwaitAnswer { .. } => "waiting for the server's encrypted answer".into(),
            ClientState::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<ClientOutput> {
        self.output
    }
}

enum ServerState {
    AwaitRequest,
    AwaitQuery,
    Done,
}

/// The server of one session over a prepared database shared by every session.
pub struct Server {
    db: Arc<Database>,
    client_items: u64,
    state: ServerState,
    output: Option<ServerOutput>,
}

impl Server {
    /// The server party (participant 1); `db` must be prepared. It states the key
    /// settings recorded in the database ([`Database::key_settings`], none for a
    /// database without them): the items were made from rows when the database was
    /// built, so those settings, not the serving process's, are what a client's keys
    /// must match.
    pub fn new(db: Arc<Database>, seed: [u8; 32]) -> Result<Engine<Self>, ProtocolError> {
        for index in 0..db.preset().bundle_indices() {
            db.encoded(index)?;
        }
        let settings = db.key_settings().cloned().unwrap_or_default();
        let mut engine = Engine::new(
            Self {
                db,
                client_items: 0,
                state: ServerState::AwaitRequest,
                output: None,
            },
            seed,
        )?;
        engine.agree(settings)?;
        Ok(engine)
    }
}

impl Handshake for Server {
    fn roster(&self) -> Roster {
        Roster::pair(PROTOCOL, NAMES, SERVER)
    }

    fn kind_name(kind: u8) -> &'static str {
        kind::name(kind)
    }

    fn settings(&self) -> Vec<u8> {
        let mut out = vec![VERSION, 1, self.db.oprf().code()];
        out.extend_from_slice(&(self.db.label_len() as u32).to_be_bytes());
        out.push(self.db.nonce_len() as u8);
        out.push(self.db.label_layout().code());
        let preset = self.db.preset().to_toml();
        out.extend_from_slice(&(preset.len() as u32).to_be_bytes());
        out.extend_from_slice(preset.as_bytes());
        let counts = self.db.bundle_counts();
        out.extend_from_slice(&(counts.len() as u32).to_be_bytes());
        for c in counts {
            out.extend_from_slice(&c.to_be_bytes());
        }
        out
    }

    fn max_settings_len(&self) -> usize {
        6
    }

    fn check_settings(&mut self, _from: PartyId, settings: &[u8]) -> Result<(), ProtocolError> {
        let mut r = wire::Reader::new(settings, "client hello");
        let (version, role, count) = (r.u8()?, r.u8()?, r.u32()?);
        r.finish()?;
        if version != VERSION || role != 0 {
            return Err(ProtocolError::Incompatible(format!(
                "the peer is not an unbalanced-PSI client of version {VERSION} (version {version}, role {role})"
            )));
        }
        let preset = self.db.preset();
        if count as usize > preset.max_client_items {
            return Err(ProtocolError::Incompatible(format!(
                "the client has {count} items; this server's preset {} takes at most {}",
                preset.name, preset.max_client_items
            )));
        }
        self.client_items = count.into();
        Ok(())
    }
}

impl Protocol for Server {
    type Output = ServerOutput;
    type Handshake = Self;

    fn handshake(&mut self) -> &mut Self {
        self
    }

    fn start(&mut self, _session: &mut Session<'_>) -> Result<(), ProtocolError> {
        Ok(())
    }

    fn handle(
        &mut self,
        session: &mut Session<'_>,
        message: Message<'_>,
    ) -> Result<(), ProtocolError> {
        match self.state {
            ServerState::AwaitRequest => {
                let request = message.expect(kind::OPRF_REQUEST)?;
                wire::expect_len(
                    "OPRF request",
                    request,
                    self.client_items as usize * ELEMENT_LEN,
                )?;
                let answer = self.db.oprf_key().evaluate(request)?;
                session.send(CLIENT, kind::OPRF_ANSWER, &answer);
                self.state = ServerState::AwaitQuery;
            }
            ServerState::AwaitQuery => {
                let answer = query::answer(&self.db, message.expect(kind::QUERY)?, session.meter)?;
                session.send(CLIENT, kind::ANSWER, &answer);
                self.state = ServerState::Done;
                self.output = Some(ServerOutput {
                    client_items: self.client_items,
                });
            }
            ServerState::Done => {
                return Err(ProtocolError::ApiMisuse(
                    "an unbalanced-PSI message the server did not await",
                ));
            }
        }
        Ok(())
    }

    fn awaiting(&self) -> Option<PartyId> {
        match self.state {
            ServerState::Done => None,
            _ => Some(CLIENT),
        }
    }

    fn max_message_len(&self) -> usize {
        match self.state {
            ServerState::AwaitRequest => self.client_items as usize * ELEMENT_LEN,
            ServerState::AwaitQuery => query::query_len_bound(self.db.preset()),
            ServerState::Done => 0,
        }
    }

    fn is_done(&self) -> bool {
        self.output.is_some()
    }

    fn status(&self) -> String {
        match self.state {
            ServerState::AwaitRequest => "waiting for the client's OPRF request".into(),
            ServerState::AwaitQuery => "waiting for the client's encrypted query".into(),
            ServerState::Done => "done".into(),
        }
    }

    fn into_output(self) -> Option<ServerOutput> {
        self.output
    }
}
