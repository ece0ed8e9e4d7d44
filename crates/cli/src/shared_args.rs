//! Flags that several protocol commands share: the group of the Diffie-Hellman
//! protocols, what to do with repeated identifiers, and the bucket count and concurrency
//! of a bucketed run.

use clap::ValueEnum;
use privset_crypto::cwprf::CwPrfId;
use privset_crypto::group::GroupId;
use privset_protocols::input::DuplicatePolicy;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CwPrfArg {
    Ristretto255,
    /// P-256, 65-byte uncompressed points.
    P256,
    /// P-256, 33-byte compressed points.
    P256Compressed,
    /// X25519 on Montgomery u-coordinates (cwPRF only; Chen et al. 2024, Sec. 7.5).
    X25519,
}

impl CwPrfArg {
    pub fn id(self) -> CwPrfId {
        match self {
            CwPrfArg::Ristretto255 => CwPrfId::Group(GroupId::Ristretto255),
            CwPrfArg::P256 => CwPrfId::Group(GroupId::P256),
            CwPrfArg::P256Compressed => CwPrfId::Group(GroupId::P256Compressed),
            CwPrfArg::X25519 => CwPrfId::X25519,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum DupArg {
    Error,
    Sum,
    First,
}

impl From<DupArg> for DuplicatePolicy {
    fn from(arg: DupArg) -> Self {
        match arg {
            DupArg::Error => DuplicatePolicy::Error,
            DupArg::Sum => DuplicatePolicy::Sum,
            DupArg::First => DuplicatePolicy::First,
        }
    }
}

/// `--buckets`: `auto` or a count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketCount {
    Auto,
    Fixed(u32),
}

impl BucketCount {
    /// The count asked for; `None` = auto.
    pub fn fixed(self) -> Option<u32> {
        match self {
            BucketCount::Auto => None,
            BucketCount::Fixed(n) => Some(n),
        }
    }
}

/// `--concurrency`: 1 to the most lanes a job may run.
pub fn parse_concurrency(text: &str) -> Result<u32, String> {
    let max = privset_protocols::bucket_plan::MAX_LANES;
    match text.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("expected a count from 1 to {max}, not {text:?}")),
    }
}

pub fn parse_buckets(text: &str) -> Result<BucketCount, String> {
    let max = privset_protocols::bucket_plan::MAX_BUCKETS;
    match text {
        "auto" => Ok(BucketCount::Auto),
        n => match n.parse::<u32>() {
            Ok(b) if (1..=max).contains(&b) => Ok(BucketCount::Fixed(b)),
            _ => Err(format!(
                "expected auto or a count from 1 to {max}, not {n:?}"
            )),
        },
    }
}
