//! Collecting parallel work that can fail, so that the error reported is the first in
//! order: rayon's own collect into a `Result` stops at whichever error a thread meets
//! first, and a caller naming "the first bad ciphertext" would name a different one
//! from run to run.

use rayon::prelude::*;

/// The items in order, or the first error in order.
pub(crate) fn collect_in_order<T: Send, E: Send>(
    items: impl IndexedParallelIterator<Item = Result<T, E>>,
) -> Result<Vec<T>, E> {
    let all: Vec<Result<T, E>> = items.collect();
    all.into_iter().collect()
}
