//! A BERT encoder's forward pass over `model.safetensors`, giving one mean-pooled, normalised
//! sentence embedding per text (what sentence-transformers computes for its BERT models).
//!
//! The weights are used where they lie in the memory-mapped file: F32 tensors (what the hub's
//! BERT checkpoints hold) are read in place, so loading costs a header parse and the first pass
//! faults in only the pages it touches (every layer, and the vocabulary rows of the text's
//! tokens). F16 and BF16 tensors are widened once at load.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde::Deserialize;
use serde_json::Value;

/// The parts of `config.json` the forward pass needs.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub model_type: Option<String>,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
    pub hidden_act: Option<String>,
    pub position_embedding_type: Option<String>,
    pub vocab_size: usize,
}

fn default_eps() -> f32 {
    1e-12
}

impl Config {
    pub fn parse(text: &str) -> Result<Config, String> {
        let c: Config = serde_json::from_str(text).map_err(|e| format!("not a BERT config.json: {e}"))?;
        if let Some(t) = c.model_type.as_deref().filter(|t| *t != "bert") {
            return Err(format!("its model_type is {t:?}; this engine runs BERT models (model_type \"bert\")"));
        }
        if let Some(p) = c.position_embedding_type.as_deref().filter(|p| *p != "absolute") {
            return Err(format!("its position_embedding_type is {p:?}; only \"absolute\" is supported"));
        }
        if let Some(a) = c.hidden_act.as_deref().filter(|a| !["gelu", "gelu_new", "gelu_pytorch_tanh"].contains(a)) {
            return Err(format!("its hidden_act is {a:?}; only gelu is supported"));
        }
        // Each size is a loop bound or a divisor of the forward pass: zero (or too few positions for
        // `[CLS] … [SEP]`) is refused here, by name, rather than met there as a panic.
        for (key, value, least) in [
            ("hidden_size", c.hidden_size, 1),
            ("num_hidden_layers", c.num_hidden_layers, 1),
            ("num_attention_heads", c.num_attention_heads, 1),
            ("intermediate_size", c.intermediate_size, 1),
            ("max_position_embeddings", c.max_position_embeddings, 3),
            ("vocab_size", c.vocab_size, 3),
        ] {
            if value < least {
                return Err(format!("its {key} is {value}; a BERT model needs at least {least}"));
            }
        }
        if !c.hidden_size.is_multiple_of(c.num_attention_heads) {
            return Err(format!(
                "its hidden_size {} is not a multiple of its num_attention_heads {}",
                c.hidden_size, c.num_attention_heads
            ));
        }
        if !(c.layer_norm_eps.is_finite() && c.layer_norm_eps >= 0.0) {
            return Err(format!("its layer_norm_eps is {}; it must be a small positive number", c.layer_norm_eps));
        }
        Ok(c)
    }

    fn tanh_gelu(&self) -> bool {
        matches!(self.hidden_act.as_deref(), Some("gelu_new" | "gelu_pytorch_tanh"))
    }
}

/// Where a tensor's values are: in the mapped file, or widened into memory.
#[derive(Debug)]
enum Data {
    Mapped { start: usize, len: usize },
    Owned(Vec<f32>),
}

#[derive(Debug)]
struct Tensor {
    shape: Vec<usize>,
    data: Data,
}

struct Layer {
    q: (usize, usize),
    k: (usize, usize),
    v: (usize, usize),
    attn_out: (usize, usize),
    attn_norm: (usize, usize),
    up: (usize, usize),
    down: (usize, usize),
    out_norm: (usize, usize),
}

/// A loaded model: the mapped file and its tensors, by index.
pub struct Bert {
    pub config: Config,
    map: memmap2::Mmap,
    tensors: Vec<Tensor>,
    word: usize,
    position: usize,
    token_type: usize,
    embed_norm: (usize, usize),
    layers: Vec<Layer>,
    /// Whether short inputs take [`super::dense`]'s path. Off in unoptimised builds, where that
    /// path is compiled without optimisation while sgemm's crate is built optimised (Cargo.toml):
    /// the tests' binaries would take seconds per text. The unit tests turn it on to check it.
    pub dense: bool,
    /// When a short input's products are split with [`super::helper`]'s thread.
    pub split: Split,
}

/// When a short input's dense products are split by output columns, half on the helper thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// While this is the process's only pass in flight and the helper is free (what a load sets).
    WhenAlone,
    /// The tests' comparisons: never split, or always (both halves on this thread when the
    /// helper is taken).
    #[cfg(test)]
    Never,
    #[cfg(test)]
    Always,
}

/// Forward passes running in this process: a pass splits its products over two threads only while
/// it is the only one, so under concurrent requests every pass keeps to its own thread and the
/// cores are shared between passes rather than passes' halves waiting on each other.
static PASSES: AtomicUsize = AtomicUsize::new(0);

/// One pass counted in [`PASSES`] while it lives.
struct InFlight;

impl InFlight {
    fn new() -> InFlight {
        PASSES.fetch_add(1, Ordering::Relaxed);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        PASSES.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How a pass runs its short products: on its own thread, or split with the helper's.
struct Threads {
    lease: Option<super::helper::Lease>,
    /// The tests' [`Split::Always`]: split with the helper when it is free, else both halves here.
    always: bool,
}

impl Threads {
    /// The helper for a pass of `n` tokens, when it would take the dense path, is the only pass in
    /// flight and finds the helper free.
    fn new(bert: &Bert, n: usize) -> Threads {
        let short = bert.dense && n <= super::dense::SHORT && super::dense::available();
        let alone = short && bert.split == Split::WhenAlone && PASSES.load(Ordering::Relaxed) == 1;
        #[cfg(test)]
        let always = short && bert.split == Split::Always;
        #[cfg(not(test))]
        let always = false;
        Threads { lease: if alone || always { super::helper::lease() } else { None }, always }
    }

    /// Whether to split the next product. Once another pass has started, the helper is given back
    /// for the rest of this one: the passes then share the cores, one thread each.
    fn split(&mut self) -> bool {
        if self.lease.is_some() && PASSES.load(Ordering::Relaxed) != 1 {
            self.lease = None;
        }
        self.lease.is_some() || self.always
    }

    fn join(&self, a: impl FnOnce(), b: impl FnOnce() + Send) {
        match &self.lease {
            Some(lease) => lease.join(a, b),
            None => {
                a();
                b();
            }
        }
    }
}

/// Looks a tensor up by name and expected shape, giving its index.
type Take<'a> = dyn FnMut(&str, &[usize]) -> Result<usize, String> + 'a;

#[derive(Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

impl Bert {
    /// Maps `model.safetensors` and checks that it holds every tensor `config` needs, with the
    /// shapes it implies. The error names the first tensor that is missing or wrong.
    pub fn load(path: &Path, config: Config) -> Result<Bert, String> {
        let (file, _) = system1_fsread::open_read(path, super::model::MAX_WEIGHTS_BYTES, system1_fsread::Links::Follow)
            .map_err(|e| format!("cannot open it: {e}"))?;
        // SAFETY: the mapping is read-only and private to this process, and nothing here trusts its
        // contents: every span made into a slice below is first held against the mapping's length
        // with checked arithmetic. What no check can cover is the file changing while mapped. The
        // installer never does that (it writes a new file and renames it into place, and a mapping
        // keeps the file it was made of); a file another program truncates under a running process
        // faults that process (SIGBUS) where it reads past the new end, as any reader of a mapped
        // file would.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("cannot map it: {e}"))?;
        let (header_len, entries) = parse_header(&map)?;
        // parse_header found the header inside the file, so this sum is at most its length.
        let base = 8 + header_len;
        let prefix = ["", "bert.", "model."]
            .into_iter()
            .find(|p| entries.contains_key(&format!("{p}embeddings.word_embeddings.weight")))
            .ok_or("it has no tensor embeddings.word_embeddings.weight: not a BERT checkpoint")?;
        let mut tensors = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut take = |name: &str, shape: &[usize]| -> Result<usize, String> {
            let full = format!("{prefix}{name}");
            let e = entries.get(&full).ok_or_else(|| format!("it has no tensor {full}"))?;
            if e.shape != shape {
                return Err(format!("tensor {full} has shape {:?}, config.json implies {shape:?}", e.shape));
            }
            if let Some(&i) = index.get(&full) {
                return Ok(i);
            }
            let width = match e.dtype.as_str() {
                "F32" => 4,
                "F16" | "BF16" => 2,
                other => return Err(format!("tensor {full} is {other}; only F32, F16 and BF16 are read")),
            };
            // Every number here comes from the file: each product and sum is checked, and the span
            // is held against the file's length before any slice is made of it.
            let [from, to] = e.data_offsets;
            let count = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
            let size = count.and_then(|c| c.checked_mul(width));
            let span = base.checked_add(from).zip(base.checked_add(to));
            let (Some(count), Some(size), Some((start, end))) = (count, size, span) else {
                return Err(format!("tensor {full}'s shape {shape:?} or data_offsets {:?} overflow", e.data_offsets));
            };
            if to < from || to - from != size || end > map.len() {
                return Err(format!(
                    "tensor {full}'s data (bytes {from} to {to} after the header) lies outside the file or is not \
                     the {size} bytes its shape needs (truncated?)"
                ));
            }
            let bytes = map.get(start..end).ok_or_else(|| format!("tensor {full}'s data lies outside the file"))?;
            let data = match e.dtype.as_str() {
                "F32" if cfg!(target_endian = "little") && (bytes.as_ptr() as usize).is_multiple_of(4) => {
                    Data::Mapped { start, len: count }
                }
                "F32" => {
                    Data::Owned(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
                }
                "F16" => {
                    Data::Owned(bytes.chunks_exact(2).map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]]))).collect())
                }
                _ => Data::Owned(
                    bytes
                        .chunks_exact(2)
                        .map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16))
                        .collect(),
                ),
            };
            tensors.push(Tensor { shape: shape.to_vec(), data });
            index.insert(full, tensors.len() - 1);
            Ok(tensors.len() - 1)
        };
        let h = config.hidden_size;
        let i = config.intermediate_size;
        let pair = |take: &mut Take, name: &str, out: usize, inp: Option<usize>| {
            let w = match inp {
                Some(inp) => take(&format!("{name}.weight"), &[out, inp])?,
                None => take(&format!("{name}.weight"), &[out])?,
            };
            let b = take(&format!("{name}.bias"), &[out])?;
            Ok::<_, String>((w, b))
        };
        let word = take("embeddings.word_embeddings.weight", &[config.vocab_size, h])?;
        let position = take("embeddings.position_embeddings.weight", &[config.max_position_embeddings, h])?;
        let types = entries
            .get(&format!("{prefix}embeddings.token_type_embeddings.weight"))
            .map(|e| e.shape.first().copied().unwrap_or(0))
            .unwrap_or(0);
        let token_type = take("embeddings.token_type_embeddings.weight", &[types.max(1), h])?;
        let embed_norm = pair(&mut take, "embeddings.LayerNorm", h, None)?;
        let mut layers = Vec::new();
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            layers.push(Layer {
                q: pair(&mut take, &format!("{p}.attention.self.query"), h, Some(h))?,
                k: pair(&mut take, &format!("{p}.attention.self.key"), h, Some(h))?,
                v: pair(&mut take, &format!("{p}.attention.self.value"), h, Some(h))?,
                attn_out: pair(&mut take, &format!("{p}.attention.output.dense"), h, Some(h))?,
                attn_norm: pair(&mut take, &format!("{p}.attention.output.LayerNorm"), h, None)?,
                up: pair(&mut take, &format!("{p}.intermediate.dense"), i, Some(h))?,
                down: pair(&mut take, &format!("{p}.output.dense"), h, Some(i))?,
                out_norm: pair(&mut take, &format!("{p}.output.LayerNorm"), h, None)?,
            });
        }
        let dense = !cfg!(debug_assertions);
        Ok(Bert {
            config,
            map,
            tensors,
            word,
            position,
            token_type,
            embed_norm,
            layers,
            dense,
            split: Split::WhenAlone,
        })
    }

    fn t(&self, i: usize) -> &[f32] {
        match &self.tensors[i].data {
            Data::Owned(v) => v,
            Data::Mapped { start, len } => {
                let bytes = &self.map[*start..*start + *len * 4];
                // SAFETY: `load` made this span with checked arithmetic and held it against the
                // map's length (the slice above is also bounds-checked), checked it is 4-byte aligned
                // and holds `len` little-endian f32 values, and every bit pattern is a valid f32.
                #[allow(unsafe_code)]
                unsafe {
                    std::slice::from_raw_parts(bytes.as_ptr().cast::<f32>(), *len)
                }
            }
        }
    }

    /// The mean-pooled, L2-normalised embedding of one tokenized text (at most `max_positions` ids,
    /// each below the vocabulary size; the caller's tokenizer guarantees both).
    pub fn embed(&self, ids: &[u32]) -> Vec<f32> {
        // Without a deadline the pass always runs to its end.
        self.embed_until(ids, None).unwrap_or_default()
    }

    /// [`Bert::embed`], given up (`None`) when `deadline` passes: it is checked before each layer,
    /// so a caller waits at most one layer past it, however long the whole pass would take.
    pub fn embed_until(&self, ids: &[u32], deadline: Option<Instant>) -> Option<Vec<f32>> {
        let _counted = InFlight::new();
        let c = &self.config;
        let (h, n) = (c.hidden_size, ids.len().min(c.max_position_embeddings));
        let heads = c.num_attention_heads;
        let d = h / heads;
        let word = self.t(self.word);
        let pos = self.t(self.position);
        let typ = &self.t(self.token_type)[..h];
        let mut x = vec![0f32; n * h];
        for (t, &id) in ids.iter().take(n).enumerate() {
            let id = (id as usize).min(c.vocab_size - 1);
            let row = &mut x[t * h..(t + 1) * h];
            for (j, v) in row.iter_mut().enumerate() {
                *v = word[id * h + j] + pos[t * h + j] + typ[j];
            }
        }
        self.layer_norm(&mut x, h, self.embed_norm);
        let (mut q, mut k, mut v) = (Vec::new(), Vec::new(), Vec::new());
        let (mut ctx, mut attn, mut up, mut down) = (vec![0f32; n * h], Vec::new(), Vec::new(), Vec::new());
        let mut scores = vec![0f32; n * n];
        let scale = 1.0 / (d as f32).sqrt();
        let mut threads = Threads::new(self, n);
        for layer in &self.layers {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return None;
            }
            self.linear(&mut threads, &x, n, layer.q, &mut q);
            self.linear(&mut threads, &x, n, layer.k, &mut k);
            self.linear(&mut threads, &x, n, layer.v, &mut v);
            for head in 0..heads {
                let off = head * d;
                // scores = q_h · k_hᵀ / √d, then a softmax per row; ctx_h = scores · v_h.
                sgemm((n, d, n), scale, (&q[off..], h, 1), (&k[off..], 1, h), 0.0, (&mut scores, n, 1));
                for row in scores.chunks_exact_mut(n) {
                    softmax(row);
                }
                sgemm((n, n, d), 1.0, (&scores, n, 1), (&v[off..], h, 1), 0.0, (&mut ctx[off..], h, 1));
            }
            self.linear(&mut threads, &ctx, n, layer.attn_out, &mut attn);
            add(&mut attn, &x);
            self.layer_norm(&mut attn, h, layer.attn_norm);
            if c.tanh_gelu() {
                self.linear_then(&mut threads, &attn, n, layer.up, &mut up, gelu_tanh);
            } else {
                self.linear_then(&mut threads, &attn, n, layer.up, &mut up, gelu);
            }
            self.linear(&mut threads, &up, n, layer.down, &mut down);
            add(&mut down, &attn);
            self.layer_norm(&mut down, h, layer.out_norm);
            std::mem::swap(&mut x, &mut down);
        }
        let mut pooled = vec![0f32; h];
        for row in x.chunks_exact(h) {
            add(&mut pooled, row);
        }
        // The mean's 1/n cancels in the normalisation.
        let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        pooled.iter_mut().for_each(|v| *v /= norm);
        Some(pooled)
    }

    /// out = x · Wᵀ + b, for x of `m` rows and a PyTorch-layout weight W (`out` × `in`).
    fn linear(&self, threads: &mut Threads, x: &[f32], m: usize, wb: (usize, usize), out: &mut Vec<f32>) {
        self.linear_then(threads, x, m, wb, out, |v| v);
    }

    /// [`Bert::linear`], then `act` applied to every output value.
    fn linear_then<F: Fn(f32) -> f32 + Sync>(
        &self,
        threads: &mut Threads,
        x: &[f32],
        m: usize,
        (w, b): (usize, usize),
        out: &mut Vec<f32>,
        act: F,
    ) {
        let shape = &self.tensors[w].shape;
        let (n, k) = (shape[0], shape[1]);
        let (w, b) = (self.t(w), self.t(b));
        let rows_of_bias = |out: &mut Vec<f32>, b: &[f32]| {
            out.clear();
            out.reserve(m * b.len());
            for _ in 0..m {
                out.extend_from_slice(b);
            }
        };
        rows_of_bias(out, b);
        debug_assert!(x.len() >= m * k && w.len() == n * k);
        // A short input: the weights are read where they lie rather than copied (see dense).
        if self.dense && m <= super::dense::SHORT && super::dense::available() {
            // The other core idle (this the only pass in flight, the helper leased): half of the
            // output columns each, so each streams half the weights. Every value is computed as
            // on one thread (see dense::add_xwt), so the split changes no bit of the result.
            let half = (n / 2).next_multiple_of(4).min(n);
            let split = threads.split();
            if split && half < n {
                let (w_a, w_b) = w.split_at(half * k);
                let mut theirs = Vec::new();
                rows_of_bias(&mut theirs, &b[half..]);
                let nb = n - half;
                threads.join(
                    || {
                        super::dense::add_xwt(x, w_a, (m, k, half), out, n);
                        out.chunks_exact_mut(n).for_each(|row| row[..half].iter_mut().for_each(|v| *v = act(*v)));
                    },
                    || {
                        super::dense::add_xwt(x, w_b, (m, k, nb), &mut theirs, nb);
                        theirs.iter_mut().for_each(|v| *v = act(*v));
                    },
                );
                for (row, part) in out.chunks_exact_mut(n).zip(theirs.chunks_exact(nb)) {
                    row[half..].copy_from_slice(part);
                }
                return;
            }
            if super::dense::add_xwt(x, w, (m, k, n), out, n) {
                out.iter_mut().for_each(|v| *v = act(*v));
                return;
            }
        }
        // x is m×k row-major, W is n×k row-major (read as its k×n transpose), out is m×n.
        sgemm((m, k, n), 1.0, (x, k, 1), (w, 1, k), 1.0, (out, n, 1));
        out.iter_mut().for_each(|v| *v = act(*v));
    }

    fn layer_norm(&self, x: &mut [f32], h: usize, (g, b): (usize, usize)) {
        let (g, b) = (self.t(g), self.t(b));
        let eps = self.config.layer_norm_eps;
        for row in x.chunks_exact_mut(h) {
            let mean = row.iter().sum::<f32>() / h as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(g).zip(b) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

/// A matrix operand: the slice its elements lie in, its row stride and its column stride.
pub type View<'a> = (&'a [f32], usize, usize);

/// Whether an m×n view with these strides lies inside a slice of `len` elements.
fn fits(len: usize, m: usize, n: usize, rs: usize, cs: usize) -> bool {
    m == 0
        || n == 0
        || (m - 1)
            .checked_mul(rs)
            .zip((n - 1).checked_mul(cs))
            .and_then(|(a, b)| a.checked_add(b))
            .is_some_and(|last| last < len)
}

/// c = alpha · a·b + beta · c for an m×k `a`, a k×n `b` and an m×n `c`, each a strided view.
/// The views are checked to lie inside their slices, so the raw-pointer kernel reads and writes
/// only what they own.
pub fn sgemm((m, k, n): (usize, usize, usize), alpha: f32, a: View, b: View, beta: f32, c: (&mut [f32], usize, usize)) {
    let ok = fits(a.0.len(), m, k, a.1, a.2) && fits(b.0.len(), k, n, b.1, b.2) && fits(c.0.len(), m, n, c.1, c.2);
    assert!(ok, "sgemm: a view lies outside its buffer");
    let s = |x: usize| x as isize;
    // SAFETY: each pointer and its strides describe a view checked above to lie inside its slice;
    // `c` is borrowed mutably, so it overlaps neither `a` nor `b`.
    #[allow(unsafe_code)]
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.0.as_ptr(),
            s(a.1),
            s(a.2),
            b.0.as_ptr(),
            s(b.1),
            s(b.2),
            beta,
            c.0.as_mut_ptr(),
            s(c.1),
            s(c.2),
        );
    }
}

/// The longest header the safetensors format allows (its own readers refuse a longer one).
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// The safetensors header: its length and its tensors by name.
fn parse_header(map: &[u8]) -> Result<(usize, HashMap<String, Entry>), String> {
    let len = map.get(..8).map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
    let len = len.ok_or("it is shorter than a safetensors header (truncated?)")?;
    if len > MAX_HEADER_BYTES {
        return Err(format!(
            "its safetensors header claims {len} bytes, more than the format allows (not safetensors?)"
        ));
    }
    let json = usize::try_from(len)
        .ok()
        .and_then(|len| map.get(8..8 + len))
        .ok_or("its safetensors header runs past the end of the file (truncated, or not safetensors)")?;
    let len = json.len();
    let raw: HashMap<String, Value> =
        serde_json::from_slice(json).map_err(|e| format!("its safetensors header is not JSON: {e}"))?;
    let mut entries = HashMap::new();
    for (name, v) in raw {
        if name == "__metadata__" {
            continue;
        }
        let e: Entry = serde_json::from_value(v).map_err(|e| format!("tensor {name}'s header entry: {e}"))?;
        entries.insert(name, e);
    }
    Ok((len, entries))
}

fn add(acc: &mut [f32], x: &[f32]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a += b;
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    row.iter_mut().for_each(|v| *v /= sum);
}

/// GELU with the error function, as BERT's `gelu`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

fn gelu_tanh(x: f32) -> f32 {
    let c = (2.0 / std::f32::consts::PI).sqrt();
    0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
}

/// The error function to within 1.5e-7 (Abramowitz and Stegun, formula 7.1.26).
fn erf(x: f32) -> f32 {
    let x = x as f64;
    let t = 1.0 / (1.0 + 0.3275911 * x.abs());
    let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let y = 1.0 - poly * (-x * x).exp();
    (if x < 0.0 { -y } else { y }) as f32
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let frac = (h & 0x3ff) as u32;
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: renormalise the fraction.
            let mut e = 127 - 15 + 1;
            let mut f = frac;
            while f & 0x400 == 0 {
                f <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((f & 0x3ff) << 13)
        }
        (0x1f, _) => sign | 0x7f80_0000 | (frac << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (frac << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_and_half_floats() {
        for (x, want) in [(0.0f32, 0.0f32), (0.5, 0.520_499_9), (1.0, 0.842_700_8), (-2.0, -0.995_322_3)] {
            assert!((erf(x) - want).abs() < 2e-7, "erf({x}) = {}", erf(x));
        }
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }

    #[test]
    fn config_of_another_family_is_refused() {
        let base = r#"{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 16, "vocab_size": 10"#;
        assert!(Config::parse(&format!("{base}}}")).is_ok());
        assert!(Config::parse(&format!("{base}, \"model_type\": \"roberta\"}}")).unwrap_err().contains("roberta"));
        assert!(Config::parse(&format!("{base}, \"hidden_act\": \"relu\"}}")).unwrap_err().contains("relu"));
        assert!(Config::parse("{}").unwrap_err().contains("not a BERT config.json"));
    }
}
