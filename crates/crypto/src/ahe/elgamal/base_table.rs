//! The fixed-base tables of one point (`G`, or a key `h`): curve25519-dalek's, for one
//! product at a time, and, on a CPU with AVX-512 IFMA, privset's eight-lane table
//! (`crate::curve25519x8`), for the bulk operations of [`super::bulk`]. The lane table
//! is built on first bulk use (512 multiples encoded and decoded), so keys that only ever
//! encrypt one value at a time never pay for it.

use std::sync::{Arc, OnceLock};

use curve25519_dalek::constants::{RISTRETTO_BASEPOINT_POINT, RISTRETTO_BASEPOINT_TABLE};
use curve25519_dalek::ristretto::{RistrettoBasepointTable, RistrettoPoint};

#[cfg(target_arch = "x86_64")]
use crate::curve25519x8::FixedBase;

/// The tables of one point (see the module docs). Cloning shares the lane table.
#[derive(Clone)]
pub struct BaseTable {
    point: RistrettoPoint,
    serial: RistrettoBasepointTable,
    #[cfg(target_arch = "x86_64")]
    lanes: Arc<OnceLock<Option<FixedBase>>>,
}

impl BaseTable {
    pub fn new(point: &RistrettoPoint) -> BaseTable {
        BaseTable {
            point: *point,
            serial: RistrettoBasepointTable::create(point),
            #[cfg(target_arch = "x86_64")]
            lanes: Arc::default(),
        }
    }

    /// The tables of ristretto255's generator `G`, built once per process.
    pub fn basepoint() -> &'static BaseTable {
        static G: OnceLock<BaseTable> = OnceLock::new();
        G.get_or_init(|| BaseTable {
            point: RISTRETTO_BASEPOINT_POINT,
            serial: RISTRETTO_BASEPOINT_TABLE.clone(),
            #[cfg(target_arch = "x86_64")]
            lanes: Arc::default(),
        })
    }

    /// curve25519-dalek's table, for one product at a time.
    pub fn serial(&self) -> &RistrettoBasepointTable {
        &self.serial
    }

    /// The eight-lane table, on a CPU with AVX-512 IFMA (whether its use is forced off
    /// is [`super::lanes::lanes_or`]'s decision); `None` otherwise.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn fixed_base(&self) -> Option<&FixedBase> {
        self.lanes
            .get_or_init(|| FixedBase::new(&self.point))
            .as_ref()
    }
}
