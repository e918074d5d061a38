//! Elimination rounds: a choice with more options than a provider takes is narrowed in rounds of
//! near-equal groups, each no larger than the limit; each group's winner goes on, and the question
//! is asked once more over the finalists (docs/tools.md).

/// The options still in a question, as indices into its options, split into `ceil(n / max)`
/// groups in order: sizes differ by at most one, the larger groups first.
pub(super) fn groups(alive: &[usize], max: usize) -> Vec<&[usize]> {
    let n = alive.len();
    if n == 0 || max == 0 {
        return Vec::new();
    }
    let count = n.div_ceil(max);
    let (small, larger) = (n / count, n % count);
    let mut out = Vec::with_capacity(count);
    let mut start = 0;
    for g in 0..count {
        let size = small + usize::from(g < larger);
        out.push(&alive[start..start + size]);
        start += size;
    }
    out
}

/// One round as the attempt's detail tells it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Round {
    /// Options that went in.
    pub options: usize,
    pub groups: usize,
}

/// `200 options in 1 round (10 groups of 20), ...` for the attempt's detail.
pub(super) fn describe(options: usize, rounds: &[Round], finalists: &[&str], requests: usize) -> String {
    let each: Vec<String> = rounds
        .iter()
        .map(|r| {
            let (small, large) = (r.options / r.groups, r.options.div_ceil(r.groups));
            let sizes = if small == large { format!("{small}") } else { format!("{small} to {large}") };
            format!("{} options in {} groups of {sizes}", r.options, r.groups)
        })
        .collect();
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "elimination: {} in {} ({}); final over {}: {}; {} in all",
        plural(options, "option", "options"),
        plural(rounds.len(), "round", "rounds"),
        each.join(", then "),
        plural(finalists.len(), "finalist", "finalists"),
        finalists.join(", "),
        plural(requests, "engine request", "engine requests"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(n: usize, max: usize) -> Vec<usize> {
        let alive: Vec<usize> = (0..n).collect();
        groups(&alive, max).iter().map(|g| g.len()).collect()
    }

    #[test]
    fn near_equal_groups_no_larger_than_the_limit() {
        // 40 over 20: two of 20. 41: ceil(41/20) = 3 groups, 41 = 14 + 14 + 13.
        assert_eq!(sizes(40, 20), [20, 20]);
        assert_eq!(sizes(41, 20), [14, 14, 13]);
        // 200 over 20: ten of 20. 256 over 20: 13 groups, 256 = 13 * 19 + 9: nine of 20, four of 19.
        assert_eq!(sizes(200, 20), [20; 10]);
        assert_eq!(sizes(256, 20), [20, 20, 20, 20, 20, 20, 20, 20, 20, 19, 19, 19, 19]);
        // 21 over 20: 11 + 10. 3 over 2: 2 + 1 (the one goes on unasked).
        assert_eq!(sizes(21, 20), [11, 10]);
        assert_eq!(sizes(3, 2), [2, 1]);
        // At or under the limit: one group, the whole question.
        assert_eq!(sizes(20, 20), [20]);
        // Groups keep the options in order and cover each once.
        let alive = [3, 5, 7, 9, 11];
        assert_eq!(groups(&alive, 2), [&[3, 5][..], &[7, 9][..], &[11][..]]);
    }

    #[test]
    fn the_detail_names_rounds_groups_and_finalists() {
        let d = describe(200, &[Round { options: 200, groups: 10 }], &["o3", "o27"], 2);
        assert_eq!(
            d,
            "elimination: 200 options in 1 round (200 options in 10 groups of 20); final over 2 finalists: o3, o27; 2 engine requests in all"
        );
        // 256 over a limit of 10: 26 groups (256 = 26 * 9 + 22: 22 of 10, 4 of 9), then 26 in 3
        // groups (9, 9, 8), then the final over 3.
        let d =
            describe(256, &[Round { options: 256, groups: 26 }, Round { options: 26, groups: 3 }], &["a", "b", "c"], 3);
        assert_eq!(
            d,
            "elimination: 256 options in 2 rounds (256 options in 26 groups of 9 to 10, then 26 options in 3 groups of 8 to 9); final over 3 finalists: a, b, c; 3 engine requests in all"
        );
        assert_eq!(sizes(256, 10).iter().filter(|s| **s == 10).count(), 22);
        assert_eq!(sizes(26, 10), [9, 9, 8]);
    }
}
