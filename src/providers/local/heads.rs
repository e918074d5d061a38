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

/// The ridge logistic regression on all samples, and each sample's leave-one-out logit.
///
/// The leave-one-out logits are the standard one-Newton-step approximation (exact for ridge
/// regression, within O(1/n) for the logistic loss): from the full fit w with Hessian H,
/// z₋ᵢ = zᵢ + (pᵢ − yᵢ)·hᵢ / (1 − pᵢ(1−pᵢ)·hᵢ) with hᵢ = xᵢᵀH⁻¹xᵢ. It costs one factorisation
/// instead of n refits, which keeps `calibrate fit` and the reproduction test quick.
pub fn fit_with_loo(xs: &[Vec<f32>], ys: &[bool], lambda: f64) -> (Vec<f64>, Vec<f64>) {
    let (w, factor) = newton(xs, ys, lambda);
    let d = w.len();
    let loo = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| {
            let z = linear(&w, x);
            let p = sigmoid(z);
            let mut row: Vec<f64> = x.iter().map(|v| *v as f64).collect();
            row.push(1.0);
            let u = forward_solve(&factor, &row, d);
            let h: f64 = u.iter().map(|v| v * v).sum();
            let y = if *y { 1.0 } else { 0.0 };
            z + (p - y) * h / (1.0 - p * (1.0 - p) * h).max(1e-9)
        })
        .collect();
    (w, loo)
}

pub fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 { 1.0 / (1.0 + (-z).exp()) } else { z.exp() / (1.0 + z.exp()) }
}

fn linear(w: &[f64], x: &[f32]) -> f64 {
    let d = x.len();
    w[d] + w[..d].iter().zip(x).map(|(w, x)| w * *x as f64).sum::<f64>()
}

/// L2-regularised logistic regression by Newton's method (the bias is the last weight and is not
/// penalised). Returns the weights and the Cholesky factor of the Hessian at them.
fn newton(xs: &[Vec<f32>], ys: &[bool], lambda: f64) -> (Vec<f64>, Vec<f64>) {
    let d = xs[0].len() + 1;
    let m = xs.len();
    // Design matrix with a constant column for the bias, row-major m×d.
    let mut x = Vec::with_capacity(m * d);
    for xi in xs {
        x.extend(xi.iter().map(|v| *v as f64));
        x.push(1.0);
    }
    let mut w = vec![0.0; d];
    let mut scaled = vec![0.0; m * d];
    let mut hessian = vec![0.0; d * d];
    for iteration in 0..60 {
        let mut grad = vec![0.0; d];
        for (r, y) in ys.iter().enumerate() {
            let row = &x[r * d..(r + 1) * d];
            let p = sigmoid(row.iter().zip(&w).map(|(a, b)| a * b).sum());
            let y = if *y { 1.0 } else { 0.0 };
            let s = (p * (1.0 - p)).max(1e-12).sqrt();
            for j in 0..d {
                grad[j] += (p - y) * row[j];
                scaled[r * d + j] = row[j] * s;
            }
        }
        for j in 0..d - 1 {
            grad[j] += lambda * w[j];
        }
        // H = (S X)ᵀ (S X) + λI (the bias unpenalised; a tiny ridge keeps H positive definite).
        gram(&scaled, m, d, &mut hessian);
        for j in 0..d {
            hessian[j * d + j] += if j < d - 1 { lambda } else { 1e-9 };
        }
        cholesky(&mut hessian, d);
        let step = {
            let y = forward_solve(&hessian, &grad, d);
            back_solve(&hessian, y, d)
        };
        let size = step.iter().map(|v| v * v).sum::<f64>().sqrt();
        for j in 0..d {
            w[j] -= step[j];
        }
        if size < 1e-10 * (1.0 + w.iter().map(|v| v * v).sum::<f64>().sqrt()) || iteration == 59 {
            break;
        }
    }
    (w, hessian)
}

/// hessian = xᵀx for a row-major m×d `x` (d×d, row-major).
fn gram(x: &[f64], m: usize, d: usize, out: &mut [f64]) {
    assert!(x.len() >= m * d && out.len() >= d * d, "gram: buffers too small");
    let s = |v: usize| v as isize;
    // SAFETY: x holds m×d elements read as its d×m transpose (strides 1, d) and as itself (d, 1);
    // out holds d×d; the sizes were checked above and out is borrowed mutably.
    #[allow(unsafe_code)]
    unsafe {
        matrixmultiply::dgemm(d, m, d, 1.0, x.as_ptr(), 1, s(d), x.as_ptr(), s(d), 1, 0.0, out.as_mut_ptr(), s(d), 1);
    }
}

/// Overwrites the lower triangle of a symmetric positive definite `a` (n×n) by its Cholesky factor L.
fn cholesky(a: &mut [f64], n: usize) {
    for j in 0..n {
        let row_j = &mut a[j * n..j * n + n];
        let diag = (row_j[j] - row_j[..j].iter().map(|v| v * v).sum::<f64>()).max(1e-300).sqrt();
        row_j[j] = diag;
        let lj = row_j[..j].to_vec();
        for i in j + 1..n {
            let row_i = &mut a[i * n..i * n + n];
            let dot: f64 = row_i[..j].iter().zip(&lj).map(|(x, y)| x * y).sum();
            row_i[j] = (row_i[j] - dot) / diag;
        }
    }
}

/// Solves L y = b for the factor `cholesky` left in `l`.
fn forward_solve(l: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut y = vec![0.0; n];
    for i in 0..n {
        let row = &l[i * n..i * n + i];
        let s: f64 = row.iter().zip(&y[..i]).map(|(a, b)| a * b).sum();
        y[i] = (b[i] - s) / l[i * n + i];
    }
    y
}

/// Solves Lᵀ x = y.
fn back_solve(l: &[f64], mut y: Vec<f64>, n: usize) -> Vec<f64> {
    for i in (0..n).rev() {
        y[i] /= l[i * n + i];
        let yi = y[i];
        for (k, v) in y[..i].iter_mut().enumerate() {
            *v -= l[i * n + k] * yi;
        }
    }
    y
}

/// The temperature minimising the log loss of sigmoid(z / T) over held-out logits (golden-section
/// search over log T in [0.05, 20]).
pub fn fit_temperature(logits: &[f64], ys: &[bool]) -> f64 {
    let loss = |log_t: f64| {
        let t = log_t.exp();
        logits
            .iter()
            .zip(ys)
            .map(|(z, y)| {
                let p = sigmoid(z / t).clamp(1e-12, 1.0 - 1e-12);
                if *y { -p.ln() } else { -(1.0 - p).ln() }
            })
            .sum::<f64>()
    };
    let (mut lo, mut hi) = (0.05f64.ln(), 20f64.ln());
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..80 {
        let a = hi - g * (hi - lo);
        let b = lo + g * (hi - lo);
        if loss(a) < loss(b) { hi = b } else { lo = a }
    }
    ((lo + hi) / 2.0).exp()
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
    fn approximate_leave_one_out_is_close_to_refitting() {
        let mut state = 12345u64;
        let mut rnd = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let xs: Vec<Vec<f32>> = (0..60).map(|_| (0..5).map(|_| rnd()).collect()).collect();
        let ys: Vec<bool> = xs.iter().map(|x| x[0] + 0.5 * x[1] + 0.3 * rnd() > 0.0).collect();
        let (_, loo) = fit_with_loo(&xs, &ys, 0.5);
        for i in 0..xs.len() {
            let (rest_x, rest_y): (Vec<Vec<f32>>, Vec<bool>) =
                xs.iter().zip(&ys).enumerate().filter(|(j, _)| *j != i).map(|(_, (x, y))| (x.clone(), *y)).unzip();
            let (w, _) = newton(&rest_x, &rest_y, 0.5);
            let exact = linear(&w, &xs[i]);
            assert!(
                (exact - loo[i]).abs() < 0.05 * (1.0 + exact.abs()),
                "sample {i}: refit {exact}, approximation {}",
                loo[i]
            );
        }
    }

    #[test]
    fn temperature_undoes_a_scaled_logit() {
        // Labels drawn so that P(yes) = sigmoid(z): logits reported at 3z must fit T ≈ 3.
        let mut logits = Vec::new();
        let mut ys = Vec::new();
        for i in 0..2000 {
            let z = (i % 41) as f64 / 10.0 - 2.0;
            let p = sigmoid(z);
            let u = ((i * 7919) % 1000) as f64 / 1000.0;
            logits.push(3.0 * z);
            ys.push(u < p);
        }
        let t = fit_temperature(&logits, &ys);
        assert!((t - 3.0).abs() < 0.4, "fitted {t}");
    }

    #[test]
    fn shipped_heads_parse() {
        let f = File::parse(SHIPPED).expect("calibration/local-heads.json parses");
        assert!(f.heads.iter().all(|h| h.model == super::super::DEFAULT_MODEL));
    }
}
