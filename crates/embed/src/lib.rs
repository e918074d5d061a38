//! system1's sentence-embedding runtime: a BERT-family model (all-MiniLM-L6-v2 and its kin) read
//! from a folder of `config.json`, `tokenizer.json` and `model.safetensors`, run on the CPU inside
//! the calling process. [`Model::load`] checks the folder; [`Model::embed`] gives a text's
//! mean-pooled, normalised embedding, the vector sentence-transformers gives for it.
//!
//! Inside: the WordPiece tokenizer (`tokenizer`), the forward pass over the memory-mapped weights
//! (`bert`), its kernels for short inputs (`dense`) and the second thread a pass splits its
//! products with (`helper`). What the product does with an embedding (heads, zero-shot choices,
//! its cache, where models are installed and how they are downloaded) is the product's:
//! src/providers/local/mod.rs in the `system1` crate.

mod bert;
mod dense;
mod helper;
mod model;
mod tokenizer;

pub use model::{FILES, LoadError, MAX_WINDOW, Model, declared_dims, missing_file};

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
