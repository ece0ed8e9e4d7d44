//! The two settings both APSI sub-protocols share: the mode and Partial-APSI's
//! fraction of opened items.

use crate::error::ProtocolError;

/// APSI (the judge sees every item) or Partial-APSI (the judge sees a random part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Full,
    Partial,
}

impl Mode {
    pub fn code(self) -> u8 {
        match self {
            Mode::Full => 1,
            Mode::Partial => 2,
        }
    }
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Mode::Full),
            2 => Some(Mode::Partial),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Mode::Full => "apsi",
            Mode::Partial => "partial-apsi",
        }
    }
}

/// The fraction `p` of a Partial-APSI set the judge opens, in parts per million.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PartialFraction(u32);

impl PartialFraction {
    const ONE: u32 = 1_000_000;

    /// `p` in (0, 1], to the nearest millionth.
    pub fn new(p: f64) -> Result<Self, ProtocolError> {
        if !(p > 0.0 && p <= 1.0) {
            return Err(ProtocolError::Config(format!(
                "the partial fraction must be in (0, 1], got {p}"
            )));
        }
        Ok(Self(((p * Self::ONE as f64).round() as u32).max(1)))
    }

    pub fn from_ppm(ppm: u32) -> Option<Self> {
        (1..=Self::ONE).contains(&ppm).then_some(Self(ppm))
    }

    pub fn ppm(self) -> u32 {
        self.0
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64 / Self::ONE as f64
    }

    /// `ceil(p n)`: how many of `n` items the judge opens.
    pub fn opened(self, n: usize) -> usize {
        (n as u128 * self.0 as u128).div_ceil(Self::ONE as u128) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions() {
        let p = PartialFraction::new(0.1).unwrap();
        assert_eq!(p.ppm(), 100_000);
        assert_eq!(p.opened(0), 0);
        assert_eq!(p.opened(1), 1);
        assert_eq!(p.opened(10), 1);
        assert_eq!(p.opened(11), 2);
        assert_eq!(PartialFraction::new(1.0).unwrap().opened(7), 7);
        assert!(PartialFraction::new(0.0).is_err());
        assert!(PartialFraction::new(1.5).is_err());
        assert!(PartialFraction::new(f64::NAN).is_err());
        assert_eq!(PartialFraction::from_ppm(0), None);
        assert_eq!(PartialFraction::from_ppm(1_000_001), None);
    }
}
