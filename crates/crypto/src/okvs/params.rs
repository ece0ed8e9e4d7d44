//! The shape of an OKVS for a number of keys (the argument is in the module docs of
//! [`super`]).

use super::OkvsError;

/// Most keys one OKVS holds (start positions and row indices are `u32`).
pub const MAX_ITEMS: usize = 1 << 28;

/// Widest band supported: four 64-bit words.
pub const MAX_BAND_WIDTH: usize = 256;

/// Expansion `columns / items` for large sizes, as the fraction `EXPANSION_NUM /
/// EXPANSION_DEN` (1.1: the `epsilon = 0.1` of Bienstock et al.).
const EXPANSION_NUM: usize = 11;
const EXPANSION_DEN: usize = 10;

/// Spare columns every OKVS has at least, so that small ones (whose band covers
/// everything) are dense random systems with `columns - items >= MIN_SLACK`.
pub const MIN_SLACK: usize = 48;

/// Shape of one OKVS: how many keys it holds, its length and band width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OkvsParams {
    pub items: usize,
    pub columns: usize,
    pub band_width: usize,
}

/// Statistical security the band width is chosen for: encoding fails with probability at
/// most `2^-SECURITY_BITS`.
pub const SECURITY_BITS: usize = 40;

/// Bits asked of the conservative model beyond [`SECURITY_BITS`] (module docs of
/// [`super`]).
const MARGIN_BITS: usize = 2;

/// Band width for `items` keys at `epsilon = 0.1`: the smallest multiple of 4 with
/// `0.25 w + 4 - log2(items) >= 40 + 2`, where `0.25 w + 4 - log2 n` lies below every
/// failure rate measured (module docs of [`super`]): `w = 4 (38 + ceil(log2 items))`,
/// 232 at `2^20`, capped at 256 from `2^27` on (where the model still gives 40).
fn band_width_for(items: usize) -> usize {
    // ceil(log2(items)); 0 for 0 and 1.
    let log_n = (usize::BITS - items.saturating_sub(1).leading_zeros()) as usize;
    (4 * (SECURITY_BITS + MARGIN_BITS - 4 + log_n)).min(MAX_BAND_WIDTH)
}

impl OkvsParams {
    /// Parameters for `items` keys with encoding failure probability at most 2^-40,
    /// smallest expansion the measured/argued bound allows. items may be 0 or 1.
    pub fn for_items(items: usize) -> Result<Self, OkvsError> {
        if items > MAX_ITEMS {
            return Err(OkvsError::TooMany {
                items,
                max: MAX_ITEMS,
            });
        }
        let columns = (items * EXPANSION_NUM)
            .div_ceil(EXPANSION_DEN)
            .max(items + MIN_SLACK);
        let band_width = band_width_for(items).min(columns);
        Ok(Self {
            items,
            columns,
            band_width,
        })
    }

    /// Bytes of an encoding (columns * 16).
    pub fn encoded_len(&self) -> usize {
        self.columns * 16
    }

    /// Panics unless the shape is one encode and decode support: a band of 1 to
    /// [`MAX_BAND_WIDTH`] bits that fits in the columns, and indices that fit in `u32`.
    pub(crate) fn check(&self) {
        assert!(
            self.band_width >= 1
                && self.band_width <= MAX_BAND_WIDTH
                && self.band_width <= self.columns
                && self.columns < u32::MAX as usize
                && self.items <= MAX_ITEMS,
            "unsupported OKVS shape {self:?}: take it from OkvsParams::for_items"
        );
    }
}
