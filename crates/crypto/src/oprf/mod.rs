//! Batched oblivious PRF from OT extension: the KKRT construction (Kolesnikov,
//! Kumaresan, Rosulek, Trieu 2016, "Efficient Batched Oblivious PRF with Applications
//! to Private Set Intersection"), semi-honest.
//!
//! Sans-IO: every step takes and returns byte messages; moving them is the caller's job.
//! The receiver has one input `r_i` per bin `i < m` (a cuckoo table's bins, a dummy in
//! an empty one); at the end it holds `F(i, r_i)` for every bin, and the sender holds a
//! key with which it can evaluate `F(i, x)` for *any* bin `i` and *any* input `x`
//! ([`OprfSenderKey::eval`], and batched on every core [`OprfSenderKey::eval_many`],
//! [`OprfSenderKey::eval_in_bins`]). The receiver learns nothing about `F(i, x)` for
//! `x ≠ r_i`; the sender learns nothing about the `r_i`. This is the "Random OT" of the
//! intersection-sum protocol of Ion et al. 2020 (Fig. 3): P1 (cuckoo bins) is the
//! receiver, P2 the sender, who evaluates each of its items in the three bins it can
//! hash to.
//!
//! # Construction
//!
//! Let `w` be the code width ([`CodeWidth`]: 448 or 512 bits) and `m` the number of
//! bins.
//!
//! **Base OTs.** `w` Chou-Orlandi OTs over ristretto255, exactly those of [`crate::ot`]
//! (one `A = a·G` from the base-OT sender, one `B_j` per OT back), under this module's
//! own context tag, so they share no key with an OT extension run under the same
//! context. As in OT extension the roles swap: the OPRF **receiver** is the base-OT
//! *sender* and holds both seeds `k_j^0, k_j^1`; the OPRF **sender** is the base-OT
//! *receiver* with `w` random choice bits `s` and holds `k_j^{s_j}`. Running `w` base OTs
//! directly (rather than 128, extended to `w`) costs `32·w` bytes and `w` more scalar
//! multiplications a side, and saves a round trip: three messages in all.
//!
//! **Pseudorandom code.** `C(x)` is the first `w` bits of
//! `SHA-256(P_0 || x) || SHA-256(P_1 || x)`, where the 64-byte prefix block `P_h` is a tag,
//! `h` and a code key `SHA-256(tag || ctx || A || B_0 .. B_{w-1})`. Both parties know the
//! key once message 2 is sent; it is fresh in every session, with randomness from
//! both, so no input can have been chosen against the code. The code is a random
//! function (in the random-oracle model), not a linear code: the property needed is
//! only that two distinct inputs' codewords are far apart (see "Code width").
//!
//! **Extension.** Let `G(k)` be the `m`-bit AES-128-CTR stream of a seed
//! ([`crate::ot`]'s PRG), and read the `w` streams `G(k_j^b)` as the columns of an
//! `m x w` bit matrix `G^b`, with rows `G^b_i`. The receiver's rows are
//! `t_i = G^0_i`, and it sends
//!
//! `u_i = t_i ⊕ G^1_i ⊕ C(r_i)`.
//!
//! The sender computes `q_i = G^{s}_i ⊕ (u_i ∧ s)`, where `G^s` has columns
//! `G(k_j^{s_j})`: in a column with `s_j = 0` that is `t_i`, with `s_j = 1` it is
//! `G^1_i ⊕ t_i ⊕ G^1_i ⊕ C(r_i)`, so `q_i = t_i ⊕ (C(r_i) ∧ s)`. This is Kolesnikov
//! et al.'s column correction `u_j = t_j ⊕ G(k_j^1) ⊕ c_j` (column `j` of the matrix
//! whose rows are `C(r_i)`), sent as rows instead of columns: the same bits, since
//! transposition is linear, but rows carry no per-column padding and every block of
//! 4096 rows can be produced and consumed on its own. So both parties stream the
//! matrix in parallel through bounded buffers (each 128 x 128 block transposed with
//! [`crate::ot`]'s transposition) and the receiver never holds `t` whole.
//!
//! **Outputs.** `F(i, x) = H(i, q_i ⊕ (C(x) ∧ s))`, which for `x = r_i` is `H(i, t_i)`,
//! the receiver's output `i`. `H(i, y)` is SHA-256 with a tag, the context and the
//! 8-byte bin index before the `w / 8` bytes of `y` (the OT extension's row hash on a
//! wider row), cut to the caller's output length `L` (1 to 32 bytes, 16 by default).
//!
//! # Messages
//!
//! | step | direction | bytes (w = 448 / 512) | function |
//! |------|-----------|-----------------------|----------|
//! | 1 | receiver → sender | [`BASE_FIRST_LEN`] = 32 (`A`) | [`OprfReceiver::new`] |
//! | 2 | sender → receiver | [`CodeWidth::base_reply_len`] = `32·w` = 14336 / 16384 (`B_0..B_{w-1}`) | [`OprfSender::respond`] |
//! | 3 | receiver → sender | [`CodeWidth::message_len`]`(m)` = `m·w/8` = `56·m` / `64·m` (`u_0..u_{m-1}`) | [`OprfReceiver::finish`] |
//!
//! then the sender finishes with [`OprfSender::finish`]; nothing goes back. Row `u_i` is
//! `w / 8` bytes, its 128-bit words little-endian (bit `j` of the row is bit `j mod 8`
//! of byte `j / 8`). Steps 1 and 2 depend neither on the inputs nor on `m`, so they can
//! run ahead. The sender must be told `m` by the protocol (for cuckoo bins both parties
//! derive it from the announced set size). Both `finish` methods consume their state:
//! one set of base OTs serves exactly one batch, since two batches from the same seeds
//! would hand the sender `u_i ⊕ u'_i = C(r_i) ⊕ C(r'_i)`, enough to test guesses of
//! the inputs.
//!
//! # Code width
//!
//! Write `d = C(x) ⊕ C(r_i)` for an evaluation at `x ≠ r_i`. Then
//! `F(i, x) = H(i, t_i ⊕ (d ∧ s))`: the receiver, who knows `t_i` but nothing of `s`,
//! must guess the bits of `s` where `d` is 1. Kolesnikov et al. 2016 ask for at least
//! `κ = 128` of them in every evaluation that occurs, except with probability `2^-σ`,
//! `σ = 40`. For a random code and a fixed pair, `|d|` is Binomial(`w`, 1/2), and,
//! summed exactly,
//!
//! | `w` | `Pr[|d| < 128]` | evaluations `E` with `E·Pr ≤ 2^-40` |
//! |-----|-----------------|-------------------------------------|
//! | 448 | `2^-66.5` | `2^26.5` (≈ 9·10^7) |
//! | 512 | `2^-102.3` | `2^62.3` |
//!
//! The union bound is over the sender's evaluations at points that are not its bin's
//! input (whatever the bin holds, the inputs are fixed before the session's code key
//! exists). In the Random-OT protocol of Ion et al. 2020 P2 evaluates `E = 3·n2`
//! points: `2^21.6` for `n2 = 2^20`, where `w = 448` (their choice) gives `2^-44.9`
//! and `w = 512` gives `2^-80.7`. [`CodeWidth::max_evaluations`] states the cap
//! (`2^26` and `2^62`) and [`CodeWidth::for_evaluations`] picks the narrower width
//! that covers a run; the default is 512, which no run of this library can exceed
//! (`MAX_COUNT` bins, a few evaluations each). Beyond the evaluations that occur, the
//! receiver could look offline for a candidate `y` whose codeword lies close to some
//! `C(r_i)` and then guess `F(i, y)` to test it against the sender's values: a pair at
//! distance `d` costs `2^d` guesses and occurs with probability `Pr[|d| ≤ d]`, so each
//! success costs at least `2^{min_d (d − log2 Pr[|d| ≤ d])}` / (pairs tried) work,
//! `2^190.6` for `w = 448` and `2^217.2` for `w = 512`: above `2^128` for up to `2^62`
//! candidate-bin pairs. And since the code key is fresh per session, none of that
//! search can start before the session does.
//!
//! # Output length
//!
//! Two different points' outputs are independent pseudorandom `8·L`-bit strings, so a
//! comparison is a false match with probability `2^-8L`. A protocol making `N`
//! comparisons needs `8·L ≥ 40 + log2 N` for `2^-40` ([`min_output_len`]). In the
//! Random-OT protocol each of P2's `3·n2` values is compared with P1's `m` outputs (the
//! dummy bins' included, to be safe): `N = 3·n2·m`, `2^42` for `n2 = 2^20`,
//! `m = 1.27·2^20`, so `L ≥ 11` bytes; the default 16 bytes covers `N ≤ 2^88`.
//!
//! # Security (semi-honest only)
//!
//! Both parties are assumed to follow the protocol; nothing checks that they do (a
//! malicious receiver could use different inputs in different columns; Kolesnikov et
//! al.'s construction is semi-honest too). Under that assumption:
//!
//! * the **sender** learns nothing about the inputs: column `j` of the `u` matrix is
//!   `G(k_j^0) ⊕ G(k_j^1) ⊕ c_j`, and of the two seeds the sender holds only
//!   `k_j^{s_j}`, so the stream of the other masks the column (the other seed needs
//!   CDH, and `A` is independent of everything);
//! * the **receiver** learns `F(i, r_i)` and nothing about `F(i, x)` for `x ≠ r_i`:
//!   each `B_j` is a uniformly random element whatever `s_j` is, so `s` is hidden, and
//!   every other evaluation needs at least 128 unknown bits of `s` ("Code width"), with
//!   `H` modelled as a random oracle, as in Kolesnikov et al. 2016. The bin index in
//!   `H` keeps the bins' functions apart, although they share `s` (Kolesnikov et al.'s
//!   "relaxed" PRF: related keys, independent outputs).
//!
//! What the messages reveal is `m` and `w`, nothing else.
//!
//! Everything is bound to the caller's `ctx` (the session transcript id): parties with
//! different contexts get unrelated outputs. Secrets (the base-OT secrets, `s`, the
//! seeds, the sender's rows `q_i`, the receiver's rows `t_i` and codewords in its
//! working buffers, and the receiver's outputs) are zeroized when dropped or when no
//! longer needed, as far as the libraries allow (aws-lc-rs wipes its AES key schedules
//! itself; the code key is not secret).

mod kkrt;

pub use self::kkrt::{
    CodeWidth, DEFAULT_OUTPUT_LEN, MAX_CODE_BITS, MAX_COUNT, MAX_OUTPUT_LEN, OprfReceiver,
    OprfSender, OprfSenderKey, ReceiverOutputs, min_output_len,
};
pub use crate::ot::BASE_FIRST_LEN;
use crate::ot::OtError;

/// Why an OPRF message was refused. Every received message is fully checked (length,
/// then every point) before it is used, and none can make these functions panic.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OprfError {
    #[error("{what} is {got} bytes, expected {expected}")]
    WrongLength {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// Point `index` of a base-OT message (0 for `A`, `j` for `B_j`) is not the canonical
    /// encoding of a non-identity ristretto255 element.
    #[error(
        "point {index} of the base-OT message is not a canonical encoding of a \
         non-identity ristretto255 element"
    )]
    InvalidPoint { index: usize },
    /// More inputs (bins) than [`MAX_COUNT`].
    #[error("{count} OPRF instances requested, more than the supported {max}")]
    TooMany { count: usize, max: usize },
}

impl From<OtError> for OprfError {
    fn from(e: OtError) -> Self {
        match e {
            OtError::WrongLength {
                what,
                expected,
                got,
            } => Self::WrongLength {
                what,
                expected,
                got,
            },
            OtError::InvalidPoint { index } => Self::InvalidPoint { index },
            OtError::TooMany { count, max } => Self::TooMany { count, max },
        }
    }
}
