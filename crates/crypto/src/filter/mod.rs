//! Compact, order-hiding encodings of a set of group elements. TODO(helper).
