//! The PI-Sum settings each party announces in its hello (after the salt, which the
//! engine adds): protocol, group, homomorphic scheme and parameters, Z encoding, variant flags,
//! set size, value columns and bounds, segment sizes. Mismatched settings end the run
//! with `ProtocolError::Incompatible` naming the setting, before any set element is
//! sent. The participant index (0 = P1, 1 = P2) gives the role.

use privset_crypto::ahe::HeId;
use privset_crypto::cwprf::CwPrfId;

use super::{PiSumConfig, PiSumProtocol, Role};
use crate::error::{PeerMisbehaved, ProtocolError};
use crate::input::Dataset;
use crate::set_encoding::SetEncoding;
use crate::wire::Reader;

pub const MAX_SEGMENTS: usize = 4096;
pub const MAX_COLUMNS: usize = 64;
/// Upper bound of the encoded settings (53 bytes and 8 per segment).
pub const MAX_LEN: usize = 64 + 8 * MAX_SEGMENTS;

const FLAG_REVERSE: u8 = 1;
const FLAG_SQUARES: u8 = 2;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub protocol: PiSumProtocol,
    pub flags: u8,
    pub group: CwPrfId,
    pub he: HeId,
    pub z: SetEncoding,
    /// Paillier modulus bits and Damgard-Jurik s (P2's key parameters; 0 for ElGamal).
    pub he_modulus_bits: u32,
    pub he_s: u32,
    pub items: u64,
    pub value_columns: u32,
    pub max_value: u64,
    pub max_sum: u128,
    /// P1: size of each segment (empty when unsegmented).
    pub segments: Vec<u64>,
}

impl Hello {
    pub fn new(role: Role, config: &PiSumConfig, input: &Dataset) -> Self {
        let mut flags = 0;
        if config.reverse {
            flags |= FLAG_REVERSE;
        }
        let is_p2 = role == Role::P2;
        if is_p2 && config.sum_of_squares {
            flags |= FLAG_SQUARES;
        }
        let (he_modulus_bits, he_s) = match config.he {
            HeId::Paillier => {
                let params = config.paillier_params();
                (params.modulus_bits, params.s)
            }
            HeId::ElGamal | HeId::Rlwe => (0, 0),
        };
        let mut segments = Vec::new();
        if let Some(seg_of) = &input.segment_of {
            segments = vec![0u64; input.segment_names.len()];
            for &s in seg_of {
                segments[s as usize] += 1;
            }
        }
        Hello {
            protocol: config.protocol,
            flags,
            group: config.group,
            he: config.he,
            z: config.z_encoding,
            he_modulus_bits,
            he_s,
            items: input.ids.len() as u64,
            value_columns: if is_p2 { input.columns.len() as u32 } else { 0 },
            max_value: if is_p2 { config.max_value } else { 0 },
            max_sum: if is_p2 {
                super::column_max_sum(config, input.ids.len())
            } else {
                0
            },
            segments,
        }
    }

    pub fn reverse(&self) -> bool {
        self.flags & FLAG_REVERSE != 0
    }

    pub fn sum_of_squares(&self) -> bool {
        self.flags & FLAG_SQUARES != 0
    }

    /// Number of segments of P1's input (1 when unsegmented).
    pub fn segment_count(&self) -> usize {
        self.segments.len().max(1)
    }

    /// Sizes of P1's segments (one segment of all items when unsegmented).
    pub fn segment_sizes(&self) -> Vec<u64> {
        if self.segments.is_empty() {
            vec![self.items]
        } else {
            self.segments.clone()
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(96 + 8 * self.segments.len());
        b.push(self.protocol.code());
        b.push(self.flags);
        b.push(self.group.code());
        b.push(self.he.code());
        b.push(self.z.code());
        b.extend_from_slice(&self.he_modulus_bits.to_be_bytes());
        b.extend_from_slice(&self.he_s.to_be_bytes());
        b.extend_from_slice(&self.items.to_be_bytes());
        b.extend_from_slice(&self.value_columns.to_be_bytes());
        b.extend_from_slice(&self.max_value.to_be_bytes());
        b.extend_from_slice(&self.max_sum.to_be_bytes());
        b.extend_from_slice(&(self.segments.len() as u32).to_be_bytes());
        for s in &self.segments {
            b.extend_from_slice(&s.to_be_bytes());
        }
        b
    }

    pub fn decode(body: &[u8]) -> Result<Self, ProtocolError> {
        let mut r = Reader::new(body, "hello");
        let protocol_code = r.u8()?;
        let protocol = PiSumProtocol::from_code(protocol_code).ok_or_else(|| {
            PeerMisbehaved::Malformed(format!("hello names unknown protocol {protocol_code}"))
        })?;
        let flags = r.u8()?;
        let group_code = r.u8()?;
        let group = CwPrfId::from_code(group_code).ok_or_else(|| {
            PeerMisbehaved::Malformed(format!("hello names unknown group {group_code}"))
        })?;
        let he_code = r.u8()?;
        let he = HeId::from_code(he_code).ok_or_else(|| {
            PeerMisbehaved::Malformed(format!("hello names unknown homomorphic scheme {he_code}"))
        })?;
        let z_code = r.u8()?;
        let z = SetEncoding::from_code(z_code).ok_or_else(|| {
            PeerMisbehaved::Malformed(format!("hello names unknown Z encoding {z_code}"))
        })?;
        let he_modulus_bits = r.u32()?;
        let he_s = r.u32()?;
        let items = r.u64()?;
        let value_columns = r.u32()?;
        let max_value = r.u64()?;
        let max_sum = r.u128()?;
        let nseg = r.u32()? as usize;
        if nseg > MAX_SEGMENTS {
            return Err(PeerMisbehaved::Malformed(format!(
                "hello announces {nseg} segments (max {MAX_SEGMENTS})"
            ))
            .into());
        }
        let mut segments = Vec::with_capacity(nseg);
        for _ in 0..nseg {
            segments.push(r.u64()?);
        }
        r.finish()?;
        if value_columns as usize > MAX_COLUMNS {
            return Err(PeerMisbehaved::Malformed(format!(
                "hello announces {value_columns} value columns"
            ))
            .into());
        }
        if !segments.is_empty()
            && segments.iter().try_fold(0u64, |a, &s| a.checked_add(s)) != Some(items)
        {
            return Err(PeerMisbehaved::Inconsistent(
                "segment sizes do not add up to the set size".into(),
            )
            .into());
        }
        Ok(Hello {
            protocol,
            flags,
            group,
            he,
            z,
            he_modulus_bits,
            he_s,
            items,
            value_columns,
            max_value,
            max_sum,
            segments,
        })
    }

    /// Checks that `peer`, playing `peer_role`, uses the same settings and announces at
    /// most `limit` items.
    pub fn check_peer(
        &self,
        peer: &Hello,
        peer_role: Role,
        limit: u64,
    ) -> Result<(), ProtocolError> {
        let mismatch = |what: &str, mine: String, theirs: String| {
            Err(ProtocolError::Incompatible(format!(
                "{what}: this party uses {mine}, the peer uses {theirs}"
            )))
        };
        if self.protocol != peer.protocol {
            return mismatch(
                "protocol",
                self.protocol.name().into(),
                peer.protocol.name().into(),
            );
        }
        if self.reverse() != peer.reverse() {
            return mismatch(
                "reverse variant",
                self.reverse().to_string(),
                peer.reverse().to_string(),
            );
        }
        if self.group != peer.group {
            return mismatch("group", self.group.name().into(), peer.group.name().into());
        }
        if self.he != peer.he {
            return mismatch(
                "homomorphic scheme",
                self.he.name().into(),
                peer.he.name().into(),
            );
        }
        if (self.he_modulus_bits, self.he_s) != (peer.he_modulus_bits, peer.he_s) {
            return mismatch(
                "Paillier parameters",
                format!("{} bits, s = {}", self.he_modulus_bits, self.he_s),
                format!("{} bits, s = {}", peer.he_modulus_bits, peer.he_s),
            );
        }
        if self.z != peer.z {
            return mismatch("Z encoding", self.z.name().into(), peer.z.name().into());
        }
        if peer.items > limit {
            return Err(PeerMisbehaved::TooLarge {
                got: peer.items,
                limit,
            }
            .into());
        }
        if let SetEncoding::Filter(kind) = self.z {
            // Every Z filter is sized for all of P1's look-ups, one per item of P2 and
            // segment ([`z_lookups`]); the filters' maths stops at 2^32.
            let (p1, p2) = match peer_role {
                Role::P2 => (self, peer),
                Role::P1 => (peer, self),
            };
            let lookups = z_lookups(p1.segment_count(), p2.items);
            if lookups > privset_crypto::filter::MAX_COUNT {
                return Err(ProtocolError::Incompatible(format!(
                    "Z encoding: {} segments of P1 times {} items of P2 make {lookups} look-ups, \
                     more than a {} filter supports (2^32); use --z-encoding list or fewer segments",
                    p1.segment_count(),
                    p2.items,
                    kind.name()
                )));
            }
        }
        if peer_role == Role::P2 {
            if peer.value_columns == 0 {
                return Err(
                    PeerMisbehaved::Inconsistent("P2 announced no value columns".into()).into(),
                );
            }
            if peer.max_sum == 0 && peer.items > 0 && peer.max_value > 0 {
                return Err(
                    PeerMisbehaved::Inconsistent("P2 announced a zero sum bound".into()).into(),
                );
            }
            if !peer.segments.is_empty() {
                return Err(PeerMisbehaved::Inconsistent("P2 announced segments".into()).into());
            }
        }
        Ok(())
    }
}

/// The look-ups every Z filter is built for: P1 may test each of P2's `p2_items`
/// elements against every one of the `segments` filters, so each filter gets the
/// per-look-up false-positive budget `2^-40 / (segments · p2_items)` and a run's false
/// positives stay at most `2^-40` together (union bound; `privset_crypto::filter`).
/// Sized for `p2_items` alone, `S` segments would give `S · 2^-40`. Saturating: the
/// hellos refuse a filter run above `filter::MAX_COUNT` look-ups
/// ([`Hello::check_peer`]).
pub(crate) fn z_lookups(segments: usize, p2_items: u64) -> usize {
    (segments.max(1) as u64).saturating_mul(p2_items) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let h = Hello {
            protocol: PiSumProtocol::Ddh,
            flags: 3,
            group: CwPrfId::Group(privset_crypto::group::GroupId::P256),
            he: HeId::ElGamal,
            z: SetEncoding::List,
            he_modulus_bits: 0,
            he_s: 0,
            items: 10,
            value_columns: 0,
            max_value: 0,
            max_sum: 0,
            segments: vec![4, 6],
        };
        let b = h.encode();
        assert!(b.len() <= MAX_LEN);
        assert_eq!(Hello::decode(&b).unwrap(), h);
        for n in 0..b.len() {
            assert!(Hello::decode(&b[..n]).is_err());
        }
        let mut long = b.clone();
        long.push(0);
        assert!(Hello::decode(&long).is_err());
    }

    #[test]
    fn the_largest_settings_fit_the_announced_bound() {
        let h = Hello {
            protocol: PiSumProtocol::Ddh,
            flags: 0,
            group: CwPrfId::Group(privset_crypto::group::GroupId::Ristretto255),
            he: HeId::Paillier,
            z: SetEncoding::List,
            he_modulus_bits: 3072,
            he_s: 2,
            items: MAX_SEGMENTS as u64,
            value_columns: 0,
            max_value: 0,
            max_sum: 0,
            segments: vec![1; MAX_SEGMENTS],
        };
        let b = h.encode();
        assert!(b.len() <= MAX_LEN, "{} > {MAX_LEN}", b.len());
        assert_eq!(Hello::decode(&b).unwrap(), h);
    }
}
