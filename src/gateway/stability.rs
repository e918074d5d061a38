//! Option stability: the final question asked again with its options in other orders, in the same
//! engine request, and how far the reordered answers agree with the original (docs/tools.md).
//!
//! Decision heads favour some positions: an answer that changes when the options are shown in
//! another order says more about the slots than about the question, so below `[gateway]
//! min_stability` the gateway abstains. `fast` asks the options reversed; `full` also shuffled, with
//! a seed taken from the question and its options, so the same question is always shuffled the
//! same way (a decision can be replayed). An order equal to one already asked is not asked again:
//! two options have only the reversed one.

use super::Answer;
use crate::config::StabilityMode;

/// How the original answer held up against its reordered variants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stability {
    /// The share of variants that picked the original answer.
    pub stability: f64,
    /// The mean probability the variants gave the original answer; `None` when a variant reported
    /// neither probabilities nor enough to infer them.
    pub soft_stability: Option<f64>,
    /// How many variants were asked.
    pub variants: usize,
}

/// One reordering of a question's options: `order[s]` is the option shown in slot `s`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Variant {
    pub name: &'static str,
    pub order: Vec<usize>,
}

/// The variants `mode` asks of a question with these options, each different from the original
/// order and from every other.
pub(super) fn variants(mode: StabilityMode, text: &str, options: &[String]) -> Vec<Variant> {
    let n = options.len();
    let identity: Vec<usize> = (0..n).collect();
    let reversed: Vec<usize> = (0..n).rev().collect();
    let mut out = Vec::new();
    if mode == StabilityMode::Off || n < 2 {
        return out;
    }
    out.push(Variant { name: "reversed", order: reversed.clone() });
    if mode == StabilityMode::Full && n >= 3 {
        let mut rng = SplitMix(seed(text, options));
        // A few draws always suffice: with 3 options 4 of the 6 orders are new; more options, more.
        for _ in 0..64 {
            let order = shuffled(n, &mut rng);
            if order != identity && order != reversed {
                out.push(Variant { name: "shuffled", order });
                break;
            }
        }
    }
    out
}

/// The options in a variant's order.
pub(super) fn reorder(options: &[String], order: &[usize]) -> Vec<String> {
    order.iter().filter_map(|&i| options.get(i).cloned()).collect()
}

/// The figures for `decision` (the original answer, over `options` options) against the variants'
/// answers, already mapped back to the original order.
pub(super) fn measure(decision: &str, options: usize, variants: &[Answer]) -> Stability {
    let n = variants.len();
    let mut agree = 0;
    let mut soft = Some(0.0);
    for v in variants {
        let p = match v {
            Answer::Decided { decision: d, confidence, probabilities, .. } => {
                if d == decision {
                    agree += 1;
                }
                match probabilities {
                    Some(p) => p.get(decision),
                    // The confidence is the probability of the variant's own pick; with two options
                    // the other one has the rest.
                    None if d == decision => Some(*confidence),
                    None if options == 2 => Some(1.0 - confidence),
                    None => None,
                }
            }
            // An answer it would not give is no support for the original.
            Answer::Abstained { .. } | Answer::Passed { .. } => Some(0.0),
        };
        soft = soft.zip(p).map(|(s, p)| s + p);
    }
    let share = |x: f64| if n == 0 { 1.0 } else { x / n as f64 };
    Stability { stability: share(agree as f64), soft_stability: soft.map(share), variants: n }
}

/// Why an answer that changed with the order is not given: what each order picked.
pub(super) fn unstable_rationale(decision: &str, asked: &[(&str, &Answer)], s: &Stability, min: f64) -> String {
    let picks: Vec<String> = asked
        .iter()
        .map(|(name, a)| match a {
            Answer::Decided { decision, .. } => format!("{decision:?} with the options {name}"),
            Answer::Abstained { .. } | Answer::Passed { .. } => format!("no answer with the options {name}"),
        })
        .collect();
    format!(
        "the answer changed with the order of the options: {decision:?} as asked, {}; stability {:.2} is below the minimum {min:.2}",
        picks.join(", "),
        s.stability
    )
}

/// FNV-1a over the question and its options, each ended by a byte no UTF-8 text contains.
fn seed(text: &str, options: &[String]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in std::iter::once(text).chain(options.iter().map(String::as_str)) {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// SplitMix64: small, fast, and the same on every platform.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A Fisher-Yates shuffle of 0..n.
fn shuffled(n: usize, rng: &mut SplitMix) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::Probabilities;

    fn opts(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("o{i}")).collect()
    }

    fn decided(d: &str, confidence: f64, p: Option<&[(&str, f64)]>) -> Answer {
        Answer::Decided {
            decision: d.into(),
            confidence,
            probabilities: p.map(|p| p.iter().map(|(o, x)| (o.to_string(), *x)).collect::<Probabilities>()),
            calibrated: false,
            rationale: None,
            stability: None,
        }
    }

    #[test]
    fn fast_reverses_full_also_shuffles_and_no_order_is_asked_twice() {
        assert!(variants(StabilityMode::Off, "q", &opts(5)).is_empty());
        let fast = variants(StabilityMode::Fast, "q", &opts(4));
        assert_eq!(fast, [Variant { name: "reversed", order: vec![3, 2, 1, 0] }]);
        let full = variants(StabilityMode::Full, "q", &opts(4));
        assert_eq!(full.len(), 2);
        assert_eq!(full[0].order, [3, 2, 1, 0]);
        let mut sorted = full[1].order.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3], "a permutation");
        assert!(full[1].order != [0, 1, 2, 3] && full[1].order != [3, 2, 1, 0]);
        // Two options have one other order only.
        assert_eq!(variants(StabilityMode::Full, "q", &opts(2)), [Variant { name: "reversed", order: vec![1, 0] }]);
        // Three options: the shuffle is one of the four orders that are neither.
        for text in ["a", "b", "c", "d", "e"] {
            let v = variants(StabilityMode::Full, text, &opts(3));
            assert!(v[1].order != [0, 1, 2] && v[1].order != [2, 1, 0], "{text}: {:?}", v[1]);
        }
    }

    #[test]
    fn the_shuffle_is_seeded_by_the_question_and_its_options() {
        let a = variants(StabilityMode::Full, "Which team?", &opts(8));
        assert_eq!(a, variants(StabilityMode::Full, "Which team?", &opts(8)), "the same question, the same order");
        let others: Vec<Vec<usize>> = ["Which team owns it?", "Who?", "Which one?", "Pick"]
            .iter()
            .map(|t| variants(StabilityMode::Full, t, &opts(8))[1].order.clone())
            .collect();
        assert!(others.iter().any(|o| *o != a[1].order), "another question, another order");
        // The seed is FNV-1a 64 over the bytes, each part ended by 0xff: "" alone gives the offset
        // basis times the prime after one 0xff, by hand 0xcbf29ce484222325 ^ 0xff = 0xcbf29ce4842223da,
        // times 0x100000001b3 (mod 2^64).
        assert_eq!(seed("", &[]), 0xcbf2_9ce4_8422_23da_u64.wrapping_mul(0x0000_0100_0000_01b3));
        assert_ne!(seed("ab", &["c".into()]), seed("a", &["bc".into()]), "parts are delimited");
    }

    #[test]
    fn reorder_shows_each_option_in_its_slot() {
        assert_eq!(reorder(&opts(3), &[2, 0, 1]), ["o2", "o0", "o1"]);
    }

    #[test]
    fn stability_is_the_agreeing_share_and_soft_stability_the_mean_probability() {
        // Two variants, one agrees: 1/2. Soft: (0.7 + 0.2) / 2 = 0.45.
        let agree = decided("a", 0.7, Some(&[("a", 0.7), ("b", 0.1), ("c", 0.2)]));
        let flip = decided("b", 0.5, Some(&[("a", 0.2), ("b", 0.5), ("c", 0.3)]));
        let s = measure("a", 3, &[agree.clone(), flip]);
        assert_eq!(s.stability, 0.5);
        assert!((s.soft_stability.expect("soft") - 0.45).abs() < 1e-12, "{s:?}");
        assert_eq!(s.variants, 2);
        // One variant that agrees: 1, soft 0.7.
        assert_eq!(measure("a", 3, std::slice::from_ref(&agree)).soft_stability, Some(0.7));
        // An abstaining variant counts against, at probability 0: (1 + 0) / 2 agree; (0.7 + 0) / 2.
        let s = measure("a", 3, &[agree, Answer::Abstained { rationale: None, stability: None }]);
        assert_eq!((s.stability, s.soft_stability), (0.5, Some(0.35)));
        // No probabilities: the confidence of an agreeing pick, 1 - confidence of the other of two.
        assert_eq!(measure("yes", 2, &[decided("no", 0.8, None)]).soft_stability.map(|x| (x * 1e9).round()), Some(2e8));
        assert_eq!(measure("yes", 2, &[decided("yes", 0.8, None)]).soft_stability, Some(0.8));
        assert_eq!(measure("a", 3, &[decided("b", 0.8, None)]).soft_stability, None, "cannot be inferred");
    }

    #[test]
    fn the_rationale_says_what_each_order_picked() {
        let flip = decided("no", 0.9, None);
        let s = measure("yes", 2, std::slice::from_ref(&flip));
        assert_eq!(
            unstable_rationale("yes", &[("reversed", &flip)], &s, 1.0),
            "the answer changed with the order of the options: \"yes\" as asked, \"no\" with the options reversed; stability 0.00 is below the minimum 1.00"
        );
    }
}
