//! The numbers behind the local engine's trained heads (src/providers/local/heads.rs): an
//! L2-regularised logistic regression fitted by Newton's method, each sample's leave-one-out logit
//! from that one fit, and the temperature that calibrates those logits. Pure arithmetic on slices,
//! in a crate of its own so that the dev and test profile can build it optimised (Cargo.toml): the
//! tests that refit the shipped heads run these loops for minutes unoptimised.

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

/// The logistic function 1 / (1 + e^−z), in a form whose exponential cannot overflow.
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
}
