//! Exponential ElGamal. TODO(helper).
