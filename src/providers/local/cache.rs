//! Embeddings of option texts (a skill's name and description, a choice's label), kept on disk
//! keyed by a hash of the text, so that a skill list is embedded once and a prompt then costs one
//! pass. The file is `<install dir>/engines/local/cache/<model>.embeddings`: an 8-byte header
//! (`s1e1` and the dimension count) and fixed-size records (16 bytes of the text's SHA-256, then
//! the vector as little-endian f32).
//!
//! Hooks write it from many processes at once. Every writer takes an exclusive lock on the sibling
//! `<file>.lock` first (a separate file, so a compaction's rename never leaves a writer holding a
//! lock on a file that is no longer the cache), and under it starts a missing or foreign file,
//! cuts a torn last record off (a writer killed mid-write) and appends its record in one write.
//! Past [`MAX_RECORDS`] records the file is compacted: its newest valid records, each text once, up
//! to [`KEEP_RECORDS`], written to a temp file and renamed over it. Readers take no lock: they use
//! whole records only, and a rename shows them the old file or the new one.
//!
//! The file is input like any other: a record whose vector is not finite or not of unit length
//! (the model's embeddings are normalised, or zero from a degenerate model; a value of 1e38 would
//! decide every question for its option) is dropped when read, and a vector like that is never written. No lock is held while a
//! text is embedded, so one slow embedding holds up no other call of the process.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::paths;

const MAGIC: &[u8; 4] = b"s1e1";
const HEADER: usize = 8;

pub fn file_for(model: &str) -> PathBuf {
    paths::engines_dir().join("local").join("cache").join(format!("{model}.embeddings"))
}

/// The largest cache file read: at 384 dimensions a record is 1,552 bytes, so this holds about
/// 40,000 option texts. A bigger file is not read (and is started afresh by the next write).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Past this many records (31 MB at 384 dimensions) an append compacts the file.
pub const MAX_RECORDS: usize = 20_000;
/// What a compaction keeps: the newest records, each text once; room for 5,000 more after it.
pub const KEEP_RECORDS: usize = 15_000;

/// The cache file's bytes: the cache's own file, so only a regular file in place (a FIFO there
/// would hang the hook, a link to `/dev/zero` fill its memory).
fn read_guarded(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::fsutil::read_file(path, MAX_FILE_BYTES, crate::fsutil::Links::Refuse)
}

type Vectors = HashMap<[u8; 16], Arc<Vec<f32>>>;

pub struct Cache {
    path: PathBuf,
    dims: usize,
    /// Loaded from the file on first use.
    map: Mutex<Option<Vectors>>,
}

fn key(text: &str) -> [u8; 16] {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let mut k = [0u8; 16];
    k.copy_from_slice(&digest.as_ref()[..16]);
    k
}

/// Whether `v` can be a normalised embedding: every value finite, and of length 1 (within what
/// f32 sums lose), or all zeros (what a degenerate model gives for every text).
fn valid(v: &[f32]) -> bool {
    let mut sum = 0.0f64;
    for x in v {
        if !x.is_finite() {
            return false;
        }
        sum += f64::from(*x) * f64::from(*x);
    }
    sum == 0.0 || (sum - 1.0).abs() < 1e-3
}

fn header(dims: usize) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..4].copy_from_slice(MAGIC);
    h[4..].copy_from_slice(&(dims as u32).to_le_bytes());
    h
}

/// The file's valid records in file order (a later one of the same text after an earlier one),
/// none when its header is not this dimension's.
fn records(bytes: &[u8], dims: usize) -> Vec<([u8; 16], Vec<f32>)> {
    if bytes.len() < HEADER || bytes[..HEADER] != header(dims) {
        return Vec::new();
    }
    bytes[HEADER..]
        .chunks_exact(16 + 4 * dims)
        .filter_map(|record| {
            let mut k = [0u8; 16];
            k.copy_from_slice(&record[..16]);
            let v: Vec<f32> =
                record[16..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            valid(&v).then_some((k, v))
        })
        .collect()
}

impl Cache {
    pub fn open(path: &Path, dims: usize) -> Cache {
        Cache { path: path.to_path_buf(), dims, map: Mutex::new(None) }
    }

    fn read(&self) -> Vectors {
        let Ok(bytes) = read_guarded(&self.path) else { return HashMap::new() };
        records(&bytes, self.dims).into_iter().map(|(k, v)| (k, Arc::new(v))).collect()
    }

    fn cached(&self, k: &[u8; 16]) -> Option<Arc<Vec<f32>>> {
        let mut guard = self.map.lock().ok()?;
        guard.get_or_insert_with(|| self.read()).get(k).cloned()
    }

    /// The cached embedding of `text`, or `embed(text)` computed now and appended to the file
    /// (`None` when `embed` gives none: its deadline passed). A cache that cannot be written is
    /// only slower: the embedding is still returned.
    pub fn get_or_insert(&self, text: &str, embed: impl FnOnce() -> Option<Vec<f32>>) -> Option<Arc<Vec<f32>>> {
        let k = key(text);
        if let Some(v) = self.cached(&k) {
            return Some(v);
        }
        // Embedded without any lock held: two calls of the process may embed the same text at
        // once, which costs a pass, never a wrong answer.
        let v = Arc::new(embed()?);
        if v.len() == self.dims && valid(&v) {
            self.append(&k, &v);
            if let Ok(mut guard) = self.map.lock()
                && let Some(map) = guard.as_mut()
            {
                map.insert(k, v.clone());
            }
        }
        Some(v)
    }

    fn append(&self, k: &[u8; 16], v: &[f32]) {
        let _ = self.try_append(k, v);
    }

    fn try_append(&self, k: &[u8; 16], v: &[f32]) -> std::io::Result<()> {
        // The option texts of decisions are the user's: a private folder and files, whatever the
        // umask, opened in place (a link planted under a name is refused, never written through).
        let _lock = crate::fsutil::WriteLock::take(&self.path)?;
        self.append_locked(k, v)
    }

    /// The append, under the writers' lock.
    fn append_locked(&self, k: &[u8; 16], v: &[f32]) -> std::io::Result<()> {
        let record_len = 16 + 4 * self.dims;
        let mut file = crate::fsutil::open_private(
            &self.path,
            OpenOptions::new().create(true).truncate(false).read(true).write(true),
        )?;
        let len = file.metadata()?.len();
        let mut head = [0u8; HEADER];
        let whole = if len >= HEADER as u64 && len <= MAX_FILE_BYTES {
            file.read_exact(&mut head)?;
            (head == header(self.dims)).then_some((len - HEADER as u64) / record_len as u64)
        } else {
            None
        };
        let Some(count) = whole else {
            // Missing, empty, of another dimension, or too big to be read: started afresh.
            file.set_len(0)?;
            file.seek(SeekFrom::Start(0))?;
            let mut bytes = header(self.dims).to_vec();
            bytes.extend_from_slice(k);
            v.iter().for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
            return file.write_all(&bytes);
        };
        if count as usize >= MAX_RECORDS {
            drop(file);
            return self.compact(k, v);
        }
        // A torn last record (its writer was killed) is cut off; the whole ones stay.
        let end = HEADER as u64 + count * record_len as u64;
        if end != len {
            file.set_len(end)?;
        }
        file.seek(SeekFrom::Start(end))?;
        let mut bytes = Vec::with_capacity(record_len);
        bytes.extend_from_slice(k);
        v.iter().for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
        file.write_all(&bytes)
    }

    /// Rewrites the file with its newest [`KEEP_RECORDS`] valid records (each text once, at its
    /// last place) and the new one, through a temp file renamed over it.
    fn compact(&self, k: &[u8; 16], v: &[f32]) -> std::io::Result<()> {
        let bytes = read_guarded(&self.path).unwrap_or_default();
        let mut all = records(&bytes, self.dims);
        drop(bytes);
        all.push((*k, v.to_vec()));
        let mut seen = std::collections::HashSet::new();
        let mut kept: Vec<&([u8; 16], Vec<f32>)> =
            all.iter().rev().filter(|(k, _)| seen.insert(*k)).take(KEEP_RECORDS).collect();
        kept.reverse();
        let mut out = Vec::with_capacity(HEADER + kept.len() * (16 + 4 * self.dims));
        out.extend_from_slice(&header(self.dims));
        for (k, v) in kept {
            out.extend_from_slice(k);
            v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        crate::fsutil::write_private(&self.path, &out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache file of a scratch folder, which goes when the first value is dropped.
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = crate::fsutil::scratch_dir();
        let path = dir.path().join("m.embeddings");
        (dir, path)
    }

    #[test]
    fn embeds_once_and_keeps_whole_records_past_a_torn_one_and_another_dimension() {
        let (_scratch, path) = scratch();
        let calls = std::cell::Cell::new(0);
        let embed = |x: f32| {
            calls.set(calls.get() + 1);
            Some(vec![x, (1.0 - x * x).sqrt()])
        };
        let c = Cache::open(&path, 2);
        assert_eq!(*c.get_or_insert("pdf: fill forms", || embed(0.6)).unwrap(), [0.6, 0.8]);
        assert_eq!(*c.get_or_insert("pdf: fill forms", || embed(0.8)).unwrap(), [0.6, 0.8]);
        assert_eq!(calls.get(), 1);
        // A second process reads what the first wrote.
        assert_eq!(*Cache::open(&path, 2).get_or_insert("pdf: fill forms", || embed(0.8)).unwrap(), [0.6, 0.8]);
        assert_eq!(calls.get(), 1);
        // A torn record is cut off at the next append; the whole ones stay.
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[1, 2, 3]).unwrap();
        let c = Cache::open(&path, 2);
        assert_eq!(*c.get_or_insert("pdf: fill forms", || embed(0.8)).unwrap(), [0.6, 0.8], "whole records still read");
        assert_eq!(*c.get_or_insert("other", || embed(0.0)).unwrap(), [0.0, 1.0]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 8 + 2 * 24);
        let fresh = Cache::open(&path, 2);
        assert_eq!(*fresh.get_or_insert("other", || embed(1.0)).unwrap(), [0.0, 1.0]);
        assert_eq!(*fresh.get_or_insert("pdf: fill forms", || embed(1.0)).unwrap(), [0.6, 0.8]);
        // Another model's dimension: nothing is reused.
        assert_eq!(Cache::open(&path, 3).get_or_insert("other", || Some(vec![0.0, 0.0, 1.0])).unwrap().len(), 3);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_vector_that_is_no_embedding_is_neither_read_nor_written() {
        let (_scratch, path) = scratch();
        let mut bytes = header(2).to_vec();
        for (text, v) in [("nan", [f32::NAN, 1.0]), ("huge", [1e38, 0.0]), ("long", [3.0, 4.0]), ("good", [0.0, 1.0])] {
            bytes.extend_from_slice(&key(text));
            v.iter().for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let c = Cache::open(&path, 2);
        for text in ["nan", "huge", "long"] {
            assert_eq!(*c.get_or_insert(text, || Some(vec![1.0, 0.0])).unwrap(), [1.0, 0.0], "{text} embedded afresh");
        }
        assert_eq!(*c.get_or_insert("good", || Some(vec![1.0, 0.0])).unwrap(), [0.0, 1.0]);
        // Not written either, but still answered.
        assert_eq!(c.get_or_insert("new", || Some(vec![f32::INFINITY, 0.0])).unwrap()[0], f32::INFINITY);
        let got: Vec<[u8; 16]> = records(&std::fs::read(&path).unwrap(), 2).into_iter().map(|(k, _)| k).collect();
        assert_eq!(got, [key("good"), key("nan"), key("huge"), key("long")]);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn past_its_cap_the_file_keeps_its_newest_records_each_once() {
        let (_scratch, path) = scratch();
        let mut bytes = header(1).to_vec();
        for i in 0..MAX_RECORDS {
            // Every tenth record repeats the text of the one before it.
            let text = format!("t{}", i - usize::from(i % 10 == 9));
            bytes.extend_from_slice(&key(&text));
            bytes.extend_from_slice(&1.0f32.to_le_bytes());
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let c = Cache::open(&path, 1);
        assert_eq!(*c.get_or_insert("newest", || Some(vec![-1.0])).unwrap(), [-1.0]);
        let got = records(&std::fs::read(&path).unwrap(), 1);
        assert_eq!(got.len(), KEEP_RECORDS);
        assert_eq!(got.last().unwrap(), &(key("newest"), vec![-1.0]));
        assert_eq!(got[got.len() - 2].0, key(&format!("t{}", MAX_RECORDS - 2)));
        let distinct: std::collections::HashSet<_> = got.iter().map(|(k, _)| k).collect();
        assert_eq!(distinct.len(), got.len());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
