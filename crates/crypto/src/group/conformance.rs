//! Conformance suite every PrimeGroup runs. TODO(helper): implement.
