//! ristretto255 (RFC 9496). TODO(helper): implement.
