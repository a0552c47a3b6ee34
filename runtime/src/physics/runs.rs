//! Sorting lists that arrive as a few ascending runs.
//!
//! The step's key lists are made in table order: the broadphase pairs' constraints
//! in key order, then the terrain items' (in key order among themselves), then the
//! constraints of woken groups. Merging the runs sorts them in one or two linear
//! passes where `sort_unstable` partitions the whole list, and, unlike the standard
//! stable sort, it allocates nothing once its buffer is as long as the list.

/// Sorts `v` by merging its ascending runs, pairwise, pass after pass, through
/// `scratch` (whose contents are left unspecified): one pass over a sorted list,
/// `log2(runs)` merging passes otherwise. Equal values are indistinguishable in the
/// step's lists (keys, and key tuples with distinct indices), so the result equals
/// any other sort's.
pub(crate) fn sort_runs<T: Copy + Ord>(v: &mut Vec<T>, scratch: &mut Vec<T>) {
    let n = v.len();
    loop {
        // The end of the ascending run starting at `i`.
        let run_end = |v: &[T], i: usize| {
            let mut j = i + 1;
            while j < n && v[j - 1] <= v[j] {
                j += 1;
            }
            j
        };
        let first = if n == 0 { 0 } else { run_end(v, 0) };
        if first >= n {
            return;
        }
        // Merge runs two at a time into `scratch`, then swap the buffers.
        scratch.clear();
        scratch.reserve(n);
        let mut start = 0;
        let mut mid = first;
        while start < n {
            let end = if mid < n { run_end(v, mid) } else { n };
            merge_into(&v[start..mid], &v[mid..end], scratch);
            start = end;
            mid = if start < n { run_end(v, start) } else { n };
        }
        std::mem::swap(v, scratch);
    }
}

/// Appends the merge of the sorted `a` and `b` to `out` (`a`'s element first on a tie).
fn merge_into<T: Copy + Ord>(a: &[T], b: &[T], out: &mut Vec<T>) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if b[j] < a[i] {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift).
    fn values(seed: u64, n: usize, modulo: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % modulo
            })
            .collect()
    }

    /// Sorted lists, a few runs (the step's case), random lists with repeats, and
    /// descending ones all come out as `sort_unstable` leaves them.
    #[test]
    fn runs_merge_into_the_sorted_order() {
        let mut cases: Vec<Vec<u64>> = vec![Vec::new(), vec![7], vec![2, 1], vec![1, 1, 1], (0..1000).collect()];
        cases.push((0..1000).rev().collect());
        for seed in 1..20 {
            // Three sorted runs of random lengths, like pairs, terrain items and
            // woken constraints.
            let mut runs = Vec::new();
            for (k, part) in values(seed, 3, 500).into_iter().enumerate() {
                let mut r = values(seed * 7 + k as u64, part as usize, 1 << 40);
                r.sort_unstable();
                runs.extend(r);
            }
            cases.push(runs);
            cases.push(values(seed, 2000 + seed as usize, 50));
        }
        let mut scratch = Vec::new();
        for case in cases {
            let mut expected = case.clone();
            expected.sort_unstable();
            let mut v = case.clone();
            sort_runs(&mut v, &mut scratch);
            assert_eq!(v, expected, "input {:?}", &case[..case.len().min(16)]);
        }
    }

    /// Once both buffers are as long as the list, sorting allocates nothing: the
    /// buffers only swap.
    #[test]
    fn sorting_again_keeps_the_buffers() {
        let (mut v, mut scratch) = (values(3, 4096, 1 << 30), Vec::new());
        sort_runs(&mut v, &mut scratch);
        let capacities = |v: &Vec<u64>, s: &Vec<u64>| {
            let mut c = [v.capacity(), s.capacity()];
            c.sort_unstable();
            c
        };
        let before = capacities(&v, &scratch);
        for seed in 4..10 {
            let fresh = values(seed, 4096, 1 << 30);
            v.clear();
            v.extend_from_slice(&fresh);
            sort_runs(&mut v, &mut scratch);
            assert!(v.is_sorted());
            assert_eq!(capacities(&v, &scratch), before);
        }
    }
}
