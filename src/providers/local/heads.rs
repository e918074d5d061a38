//! Trained heads: one L2-regularised logistic regression per yes/no question over the sentence
//! embedding, with a temperature fitted on leave-one-out logits (so that the probability it
//! reports was measured on prompts the head was not trained on).
//!
//! File format (`calibration/local-heads.json`, shipped inside the binary, and
//! `<install dir>/local-heads.json`, fitted on this machine, which wins question by question):
//!
//! ```json
//! {"format": "system1-local-heads", "version": 1,
//!  "heads": [{"model": "all-MiniLM-L6-v2", "question": "read_only", "dims": 384, "lambda": 0.1,
//!             "temperature": 1.3, "bias": -0.2, "weights": [...], "n": 200, "positives": 91,
//!             "loo_accuracy": 0.81, "source": "calibration/routing.jsonl"}]}
//! ```
//! `question` is the key a question is asked under: a routing feature's name, or a
//! `system1_decide` question's text, matched case- and whitespace-insensitively. P(yes) =
//! sigmoid((w·e + bias) / temperature). A question with a fixed set of options has one head per
//! option (`"option": "<option>"`, that option against the rest); its answer is their P(yes),
//! normalised. `context` lists the context keys the examples carried (none: plain text).

use crate::text::round;
use serde::{Deserialize, Serialize};
// The fit itself is plain arithmetic, in crates/logistic (built optimised in the test profile).
use system1_logistic::fit_with_loo;
pub use system1_logistic::{fit_temperature, sigmoid};

pub const FORMAT: &str = "system1-local-heads";
pub const VERSION: u64 = 1;

/// The heads shipped with this build.
pub const SHIPPED: &str = include_str!("../../../calibration/local-heads.json");

/// The ridge penalty of every fitted head (on the weights, not the bias): the best leave-one-out
/// log loss on the seed sets among 0.003, 0.01, 0.03, 0.1, 0.3 and 1 (best or within 0.003 of it
/// for every question, with all-MiniLM-L6-v2).
pub const LAMBDA: f64 = 0.3;

/// Fitted temperatures are kept within this range: a tiny sample can fit a temperature that turns
/// any logit into certainty, and a huge one that says nothing.
pub const TEMPERATURE_RANGE: (f64, f64) = crate::calibration::TEMPERATURE_RANGE;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Head {
    pub model: String,
    pub question: String,
    pub dims: usize,
    pub lambda: f64,
    pub temperature: f64,
    /// The temperature before the clamp, when the clamp changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clamped: Option<f64>,
    pub bias: f64,
    pub weights: Vec<f64>,
    pub n: usize,
    pub positives: usize,
    pub loo_accuracy: f64,
    pub source: String,
    /// For a question with a fixed set of options: the option this head scores against the rest.
    /// None for a yes/no head (it scores "yes").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    /// The context keys its examples carried, which a request must carry too to be read the same
    /// way; empty when they were plain text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct File {
    pub format: String,
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub heads: Vec<Head>,
}

impl File {
    pub fn new(heads: Vec<Head>) -> File {
        File { format: FORMAT.to_string(), version: VERSION, note: None, heads }
    }

    pub fn parse(text: &str) -> Result<File, String> {
        crate::fsutil::parse_versioned(text)
    }
}

impl crate::fsutil::Versioned for File {
    const FORMAT: &'static str = FORMAT;
    const VERSION: u64 = VERSION;
    const WHAT: &'static str = "a heads file";
    /// A head is its model's dimension count of weights (768 for a base model, about 15 KB as
    /// JSON), one per question or option.
    const MAX_BYTES: u64 = 16 << 20;

    fn names(&self) -> (&str, u64) {
        (&self.format, self.version)
    }

    /// Compact, one head to a line: a head's weights are most of its bytes, and pretty-printed,
    /// one to a line, they took about twice the room.
    fn to_text(&self) -> serde_json::Result<String> {
        use serde_json::to_string;
        let mut out = format!("{{\"format\":{},\"version\":{}", to_string(&self.format)?, self.version);
        if let Some(note) = &self.note {
            out.push_str(&format!(",\"note\":{}", to_string(note)?));
        }
        out.push_str(",\"heads\":[");
        for (i, h) in self.heads.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(&to_string(h)?);
        }
        out.push_str("\n]}\n");
        Ok(out)
    }

    fn check(&self) -> Result<(), String> {
        for h in &self.heads {
            if h.weights.len() != h.dims || !(h.temperature.is_finite() && h.temperature > 0.0) {
                return Err(format!(
                    "head {:?}: {} weights for {} dims, temperature {}",
                    h.question,
                    h.weights.len(),
                    h.dims,
                    h.temperature
                ));
            }
        }
        Ok(())
    }
}

impl Head {
    /// The raw logit w·e + bias.
    pub fn logit(&self, embedding: &[f32]) -> f64 {
        self.bias + self.weights.iter().zip(embedding).map(|(w, e)| w * *e as f64).sum::<f64>()
    }

    /// P(yes) for an embedding, with the head's temperature.
    pub fn p_yes(&self, embedding: &[f32]) -> f64 {
        sigmoid(self.logit(embedding) / self.temperature)
    }

    /// Fits a head on labelled embeddings: the weights on all of them, the temperature on their
    /// leave-one-out logits. Returns the head and those logits.
    pub fn fit(
        model: &str,
        question: &str,
        xs: &[Vec<f32>],
        ys: &[bool],
        source: &str,
    ) -> Result<(Head, Vec<f64>), String> {
        let positives = ys.iter().filter(|y| **y).count();
        if xs.is_empty() || xs.len() != ys.len() || positives == 0 || positives == ys.len() {
            return Err(format!("{question}: needs examples of both answers ({positives} yes of {})", ys.len()));
        }
        let dims = xs[0].len();
        if xs.iter().any(|x| x.len() != dims) {
            return Err(format!("{question}: embeddings of different sizes"));
        }
        let (w, loo) = fit_with_loo(xs, ys, LAMBDA);
        let fitted = fit_temperature(&loo, ys);
        let temperature = fitted.clamp(TEMPERATURE_RANGE.0, TEMPERATURE_RANGE.1);
        let correct = loo.iter().zip(ys).filter(|(z, y)| (**z > 0.0) == **y).count();
        let head = Head {
            model: model.to_string(),
            question: question.to_string(),
            dims,
            lambda: LAMBDA,
            temperature: round(temperature, 4),
            clamped: (temperature != fitted).then(|| round(fitted, 4)),
            // Six decimals: far below what moves a probability, and the file reads back exactly.
            bias: round(w[dims], 6),
            weights: w[..dims].iter().map(|v| round(*v, 6)).collect(),
            n: xs.len(),
            positives,
            loo_accuracy: round(correct as f64 / xs.len() as f64, 4),
            source: source.to_string(),
            option: None,
            context: Vec::new(),
        };
        Ok((head, loo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two clusters in 3 dimensions: the head must separate them, its leave-one-out logits must
    /// be held out (a point on the wrong side of its cluster is misjudged), and the file round-trips.
    #[test]
    fn fits_separable_clusters_and_round_trips() {
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for i in 0..20 {
            let t = i as f32 / 20.0;
            xs.push(vec![0.9, 0.1 + 0.1 * t, 0.0]);
            ys.push(true);
            xs.push(vec![0.1, 0.9 - 0.1 * t, 0.1]);
            ys.push(false);
        }
        let (head, loo) = Head::fit("m", "q", &xs, &ys, "test").unwrap();
        assert_eq!(loo.len(), 40);
        assert_eq!(head.loo_accuracy, 1.0);
        assert!(head.p_yes(&[0.9, 0.15, 0.0]) > 0.9 && head.p_yes(&[0.1, 0.85, 0.1]) < 0.1);
        assert!((TEMPERATURE_RANGE.0..=TEMPERATURE_RANGE.1).contains(&head.temperature));
        let text = serde_json::to_string(&File::new(vec![head.clone()])).unwrap();
        assert_eq!(File::parse(&text).unwrap().heads, vec![head]);
        assert!(Head::fit("m", "q", &xs[..1], &ys[..1], "t").unwrap_err().contains("both answers"));
    }

    /// The heads file is written one head to a line, and reads back to the same heads: the shipped
    /// file written this way is a third smaller than pretty-printed (64%: its weights have many digits).
    #[test]
    fn a_heads_file_is_written_compactly_and_reads_back_the_same() {
        use crate::fsutil::Versioned;
        let shipped = File::parse(SHIPPED).unwrap();
        let text = shipped.to_text().unwrap();
        assert_eq!(text.lines().count(), shipped.heads.len() + 2, "one head to a line");
        assert!(text.starts_with("{\"format\":\"system1-local-heads\",\"version\":1,\"note\":"), "{:.80}", text);
        let back = File::parse(&text).unwrap();
        // A weight's last digit can move in a parse (serde_json reads floats fast, not exactly).
        assert_eq!(back.heads.len(), shipped.heads.len());
        for (b, s) in back.heads.iter().zip(&shipped.heads) {
            assert_eq!((&b.question, &b.option, b.temperature, b.n), (&s.question, &s.option, s.temperature, s.n));
            let drift = b.weights.iter().zip(&s.weights).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
            assert!(drift < 1e-12 && (b.bias - s.bias).abs() < 1e-12, "{}: {drift}", s.question);
        }
        assert_eq!(back.note, shipped.note);
        assert!(text.len() * 10 < SHIPPED.len() * 7, "{} bytes against {}", text.len(), SHIPPED.len());
        let empty = File::new(Vec::new()).to_text().unwrap();
        assert!(File::parse(&empty).unwrap().heads.is_empty(), "{empty}");
    }

    #[test]
    fn shipped_heads_parse() {
        let f = File::parse(SHIPPED).expect("calibration/local-heads.json parses");
        assert!(f.heads.iter().all(|h| h.model == super::super::DEFAULT_MODEL));
    }
}
