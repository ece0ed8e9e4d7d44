//! AHE conformance suite. TODO(helper).
