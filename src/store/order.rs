//! Sorting records without a sort routine per record type.
//!
//! Every `slice::sort_by` is compiled again for each element type and
//! comparator (about 2.5 KB of WASM each, a dozen in this module's callers).
//! The lists sorted here are small (a session's artifacts, a project's
//! sections) and never in a hot loop, so they share one routine over indices.

use std::cmp::Ordering;

/// Sorts `items` by `cmp`, keeping the order of equal items.
pub(crate) fn sort_by<T>(items: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    if items.len() < 2 {
        return;
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    sort_indices(&mut order, &|a, b| cmp(&items[a], &items[b]));
    let mut slots: Vec<Option<T>> = std::mem::take(items).into_iter().map(Some).collect();
    items.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

#[inline(never)]
fn sort_indices(order: &mut [usize], cmp: &dyn Fn(usize, usize) -> Ordering) {
    order.sort_by(|&a, &b| cmp(a, b));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_and_keeps_equal_items_in_order() {
        let mut items = vec![(3, 'a'), (1, 'b'), (3, 'c'), (2, 'd'), (1, 'e')];
        sort_by(&mut items, |a, b| a.0.cmp(&b.0));
        assert_eq!(items, vec![(1, 'b'), (1, 'e'), (2, 'd'), (3, 'a'), (3, 'c')]);
        let mut empty: Vec<u8> = Vec::new();
        sort_by(&mut empty, |a, b| a.cmp(b));
        assert!(empty.is_empty());
    }
}
