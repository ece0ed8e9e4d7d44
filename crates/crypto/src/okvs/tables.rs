//! Subset-XOR tables ("four Russians"): for a group of consecutive columns, the XOR of
//! every subset of their values, indexed by the subset's bits. A band then selects its
//! columns group by group with one look-up each instead of one XOR per set bit.
//! Back-substitution uses groups of [`GROUP_BITS`] = 4 columns (its tables are built one
//! at a time as columns become final, so they must be cheap); decoding builds many
//! tables at once and reads each often, and uses groups of 8.

/// Columns per group: 16 entries per 4 columns build quickly (4 XORs a column) and a
/// band of 224 bits takes 56 look-ups.
pub(crate) const GROUP_BITS: usize = 4;

/// The table of one group.
pub(crate) type Table = [u128; 1 << GROUP_BITS];

/// Fills `table` for the group whose first column is `col` (columns past the end of
/// `store` count as zero).
#[inline]
pub(crate) fn build_table(table: &mut Table, store: &[u128], col: usize) {
    table[0] = 0;
    for k in 0..GROUP_BITS {
        let c = store.get(col + k).copied().unwrap_or(0);
        let bit = 1 << k;
        for x in 0..bit {
            table[bit + x] = table[x] ^ c;
        }
    }
}

/// XOR of the entries the 16 nibbles of `word` select, nibble `k` (bits `4k..4k+4`) in
/// `tables[k]`: the look-ups of 64 consecutive columns, unrolled with fixed offsets.
#[inline(always)]
pub(crate) fn lookup_word(tables: &[Table; 16], word: u64) -> u128 {
    const _: () = assert!(GROUP_BITS == 4);
    let mut acc = 0u128;
    for (k, table) in tables.iter().enumerate() {
        acc ^= table[((word >> (4 * k)) & 15) as usize];
    }
    acc
}

/// The table of a group of 8 columns: 256 entries.
pub(crate) type ByteTable = [u128; 256];

/// Fills `table` for the 8 columns from `col` (past the end of `store`: zero).
#[inline]
pub(crate) fn build_byte_table(table: &mut ByteTable, store: &[u128], col: usize) {
    table[0] = 0;
    for k in 0..8 {
        let c = store.get(col + k).copied().unwrap_or(0);
        let bit = 1 << k;
        let (low, high) = table.split_at_mut(bit);
        for (h, l) in high[..bit].iter_mut().zip(low.iter()) {
            *h = l ^ c;
        }
    }
}
