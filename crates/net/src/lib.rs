//! Drivers and transports. TODO
