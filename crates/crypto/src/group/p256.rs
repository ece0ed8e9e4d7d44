//! NIST P-256 with RFC 9380 P256_XMD:SHA-256_SSWU_RO_. TODO(helper): implement.
