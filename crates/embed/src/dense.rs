//! The forward pass's dense layers for short inputs: `x · Wᵀ` with the weights read where they lie.
//!
//! A general matrix product (matrixmultiply's sgemm) first copies both operands into panels in the
//! order its kernel reads them. For a prompt of a dozen tokens the weight matrix is the big
//! operand: every pass copied all of the model's layer weights (42 MB for MiniLM; 31% of a
//! decision's instructions in a profile) to multiply them by a few rows. Here each output is the
//! dot product of a row of `x` with a row of `W`, both contiguous as the model file lays them out,
//! so nothing is copied: the weights are streamed once per pass, straight from the mapped file,
//! while the few rows of `x` stay in the first-level cache. Long inputs, where sgemm's copies are
//! paid back over many rows, still go to sgemm (see [`SHORT`]).
//!
//! Only x86-64 CPUs with AVX2 and FMA take this path (chosen at run time: the baseline target has
//! only SSE2); elsewhere [`add_xwt`] declines and the caller uses sgemm, whose NEON and AVX-512
//! kernels this does not try to beat where it was not measured.

/// Inputs of at most this many rows (tokens) take this module's path; longer ones take sgemm's,
/// whose copy of the weights is then shared by enough rows to pay for itself.
pub const SHORT: usize = 32;

#[cfg(target_arch = "x86_64")]
const LANES: usize = 8;
#[cfg(target_arch = "x86_64")]
type Chunk = [f32; LANES];

/// Whether this CPU has the fast path ([`add_xwt`] declines where it has not).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        return true;
    }
    false
}

/// out[i][j] += Σ_p x[i][p] · w[j][p] for an m×k `x`, an n×k `w` and an m×n `out`, all
/// row-major, `out`'s rows `ldo` apart (`ldo` ≥ n: a block of columns of a wider matrix);
/// `false` (and `out` untouched) where this CPU has no fast path. Each output is computed the same
/// way wherever it lies, so a product split by rows of `w` gives the same values, bit for bit.
/// Panics when a slice is shorter than its shape (the caller's shapes come from a checked model).
pub fn add_xwt(x: &[f32], w: &[f32], (m, k, n): (usize, usize, usize), out: &mut [f32], ldo: usize) -> bool {
    assert!(
        m.checked_mul(k).is_some_and(|l| x.len() >= l)
            && n.checked_mul(k).is_some_and(|l| w.len() >= l)
            && ldo >= n
            && (m == 0 || (m - 1).checked_mul(ldo).and_then(|l| l.checked_add(n)).is_some_and(|l| out.len() >= l)),
        "add_xwt: a slice is shorter than its shape"
    );
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the function reads and writes only through the bounds-checked slices it is
        // given; it is `unsafe` to call only because it is compiled for AVX2 and FMA, which the
        // CPU was just found to have.
        #[allow(unsafe_code)]
        unsafe {
            fma::add_xwt(x, w, (m, k, n), out, ldo)
        };
        return true;
    }
    false
}

#[cfg(target_arch = "x86_64")]
mod fma {
    use std::arch::x86_64::{
        __m256, _MM_HINT_T0, _mm_prefetch, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };

    use super::{Chunk, LANES};

    /// How many blocks of 4 rows of `w` ahead of the one being multiplied are prefetched.
    const AHEAD: usize = 2;

    /// Blocks of 4 rows of `w` against pairs of rows of `x`: each step of 8 lanes loads 6 vectors
    /// for 8 fused multiply-adds, into 8 accumulators that stay in registers.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn add_xwt(x: &[f32], w: &[f32], (m, k, n): (usize, usize, usize), out: &mut [f32], ldo: usize) {
        let row = |s, r| row(s, r, k);
        let mut j = 0;
        while j < n {
            let c = (n - j).min(4);
            // Fewer rows left than a block takes: the last one is repeated, its results unused.
            let ws: [(&[Chunk], &[f32]); 4] = std::array::from_fn(|t| row(w, j + t.min(c - 1)));
            // The rows two blocks on, which lie together in `w`: fetched into the cache while the
            // first rows of `x` go past this block, 32 values a step, so they are there when their
            // turn comes. Four short rows read at once are not a stream the CPU's own prefetcher
            // catches early enough (8% off a decision in scripts/bench-serve).
            let ahead = (j + 4 * AHEAD) * k;
            let mut i = 0;
            while i < m {
                let r = (m - i).min(2);
                let xs = [row(x, i), row(x, i + r - 1)];
                let mut acc = [[_mm256_setzero_ps(); 4]; 2];
                let steps = xs[0].0.iter().zip(xs[1].0).zip(ws[0].0).zip(ws[1].0).zip(ws[2].0).zip(ws[3].0);
                if i == 0 {
                    // The first pair's loop of its own, so the others' stays as bare as before.
                    for (s, (((((x0, x1), w0), w1), w2), w3)) in steps.enumerate() {
                        prefetch(w, ahead + s * 32);
                        prefetch(w, ahead + s * 32 + 16);
                        step(&mut acc, [x0, x1], [w0, w1, w2, w3]);
                    }
                } else {
                    for (((((x0, x1), w0), w1), w2), w3) in steps {
                        step(&mut acc, [x0, x1], [w0, w1, w2, w3]);
                    }
                }
                for a in 0..r {
                    let o = (i + a) * ldo + j;
                    for (b, slot) in out[o..o + c].iter_mut().enumerate() {
                        let v = lanes(acc[a][b]);
                        // Lanes summed pairwise, then the last few products one by one.
                        let s = ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
                        *slot += xs[a].1.iter().zip(ws[b].1).fold(s, |s, (p, q)| p.mul_add(*q, s));
                    }
                }
                i += r;
            }
            j += c;
        }
    }

    /// One step of 8 lanes: 2 rows of `x` against 4 of `w`, 8 fused multiply-adds into `acc`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn step(acc: &mut [[__m256; 4]; 2], xs: [&Chunk; 2], ws: [&Chunk; 4]) {
        let (x0, x1) = (load(xs[0]), load(xs[1]));
        for (b, wv) in [load(ws[0]), load(ws[1]), load(ws[2]), load(ws[3])].into_iter().enumerate() {
            acc[0][b] = _mm256_fmadd_ps(x0, wv, acc[0][b]);
            acc[1][b] = _mm256_fmadd_ps(x1, wv, acc[1][b]);
        }
    }

    /// Asks for the cache line holding `w[at]`, when there is one: a hint that reads nothing.
    #[target_feature(enable = "sse")]
    fn prefetch(w: &[f32], at: usize) {
        if let Some(v) = w.get(at) {
            _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(v).cast());
        }
    }

    /// Row `r` of a matrix of `k` columns: its whole chunks of 8, and the rest.
    fn row(s: &[f32], r: usize, k: usize) -> (&[Chunk], &[f32]) {
        let row = &s[r * k..(r + 1) * k];
        let (chunks, rest) = row.as_chunks::<LANES>();
        (chunks, rest)
    }

    #[target_feature(enable = "avx")]
    fn load(c: &Chunk) -> __m256 {
        // SAFETY: `c` is 8 f32 values, exactly what an unaligned 256-bit load reads.
        #[allow(unsafe_code)]
        unsafe {
            _mm256_loadu_ps(c.as_ptr())
        }
    }

    #[target_feature(enable = "avx")]
    fn lanes(v: __m256) -> Chunk {
        let mut out = [0f32; LANES];
        // SAFETY: `out` is 8 f32 values, exactly what an unaligned 256-bit store writes.
        #[allow(unsafe_code)]
        unsafe {
            _mm256_storeu_ps(out.as_mut_ptr(), v)
        };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the plain triple loop, on every shape around the blocking's edges.
    #[test]
    fn matches_the_plain_product() {
        let value = |i: usize| ((i * 7919 % 1000) as f32 - 500.0) / 250.0;
        for m in [1, 2, 3, 5] {
            for n in [1, 3, 4, 5, 9] {
                for k in [1, 7, 8, 9, 24, 33] {
                    let x: Vec<f32> = (0..m * k).map(value).collect();
                    let w: Vec<f32> = (0..n * k).map(|i| value(i + 13)).collect();
                    let mut out: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
                    if !add_xwt(&x, &w, (m, k, n), &mut out, n) {
                        eprintln!("no fast path on this CPU: nothing to check");
                        return;
                    }
                    for i in 0..m {
                        for j in 0..n {
                            let want: f64 = (0..k).map(|p| x[i * k + p] as f64 * w[j * k + p] as f64).sum::<f64>()
                                + (i * n + j) as f64;
                            let got = out[i * n + j] as f64;
                            assert!(
                                (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                                "{m}x{k}x{n} at {i},{j}: {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// A product done as two blocks of columns, each written into its place in a wider matrix,
    /// gives the whole product's values bit for bit (what the forward pass's split relies on).
    #[test]
    fn blocks_of_columns_give_the_same_bits() {
        let value = |i: usize| ((i * 7919 % 1000) as f32 - 500.0) / 250.0;
        let (m, k, n) = (13, 40, 23);
        let x: Vec<f32> = (0..m * k).map(value).collect();
        let w: Vec<f32> = (0..n * k).map(|i| value(i + 5)).collect();
        let bias: Vec<f32> = (0..m * n).map(|i| i as f32 / 7.0).collect();
        let mut whole = bias.clone();
        if !add_xwt(&x, &w, (m, k, n), &mut whole, n) {
            eprintln!("no fast path on this CPU: nothing to check");
            return;
        }
        for split in [1, 4, 8, 11, 22] {
            let mut parts = bias.clone();
            assert!(add_xwt(&x, &w[..split * k], (m, k, split), &mut parts, n));
            assert!(add_xwt(&x, &w[split * k..], (m, k, n - split), &mut parts[split..], n));
            let same = whole.iter().zip(&parts).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "split at column {split}");
        }
    }

    #[test]
    fn short_slices_are_refused() {
        let r = std::panic::catch_unwind(|| add_xwt(&[1.0; 3], &[1.0; 4], (2, 2, 2), &mut [0.0; 4], 2));
        assert!(r.is_err());
        // Rows 3 apart: the second row's block ends at 5, past a slice of 4.
        let r = std::panic::catch_unwind(|| add_xwt(&[1.0; 4], &[1.0; 4], (2, 2, 2), &mut [0.0; 4], 3));
        assert!(r.is_err());
        let r = std::panic::catch_unwind(|| add_xwt(&[1.0; 4], &[1.0; 4], (2, 2, 2), &mut [0.0; 4], 1));
        assert!(r.is_err(), "rows closer than their width");
    }
}
