//! Protocols. TODO
