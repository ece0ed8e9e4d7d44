//! Unbalanced labeled PSI from homomorphic encryption (Cong, Moreno, Botelho da Gama,
//! Dai, Iliashenko, Laine, Rosenberg, "Labeled PSI from Homomorphic Encryption with
//! Reduced Computation and Communication", CCS 2021; the design behind Microsoft
//! APSI): a client with a small set learns which of its items are in a server's large
//! set, and their labels; the server learns nothing about the client's items.
//!
//! * [`preset`]: parameters as data, checked when loaded;
//! * [`item`]: the OPRF (X25519 or ristretto255) and its output split into the item's
//!   hash and label key; labels encrypted under the label key;
//! * [`db`]: the server's database (bins, bundles, precomputed polynomials; inserts and
//!   removals without a rebuild);
//! * [`query`]: the client's encrypted query and the server's answer;
//! * [`store`]: the database file.

pub mod db;
pub mod item;
pub mod party;
pub mod preset;
pub mod query;
mod records;
pub mod store;

pub use db::Database;
pub use item::{LabelLayout, Oprf};
pub use party::{Client, ClientOutput, Server, ServerOutput};
pub use preset::Preset;
