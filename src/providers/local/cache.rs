//! Embeddings of option texts (a skill's name and description, a choice's label), kept on disk
//! keyed by a hash of the text, so that a skill list is embedded once and a prompt then costs one
//! pass. The file is `<install dir>/engines/local/cache/<model>.embeddings`: an 8-byte header
//! (`s1e1` and the dimension count) and fixed-size records (16 bytes of the text's SHA-256, then
//! the vector as little-endian f32). Records are appended in one write each; a torn last record
//! (a process killed mid-write) is ignored, and a file of another dimension is started afresh.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::paths;

const MAGIC: &[u8; 4] = b"s1e1";

pub fn file_for(model: &str) -> PathBuf {
    paths::engines_dir().join("local").join("cache").join(format!("{model}.embeddings"))
}

/// The largest cache file read: at 384 dimensions a record is 1,552 bytes, so this holds about
/// 40,000 option texts. A bigger file is not read (and is started afresh by the next write).
const MAX_FILE_BYTES: u64 = 64 << 20;

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

impl Cache {
    pub fn open(path: &Path, dims: usize) -> Cache {
        Cache { path: path.to_path_buf(), dims, map: Mutex::new(None) }
    }

    fn read(&self) -> Vectors {
        let mut map = HashMap::new();
        let Ok(bytes) = read_guarded(&self.path) else { return map };
        if bytes.len() < 8 || &bytes[..4] != MAGIC || bytes[4..8] != (self.dims as u32).to_le_bytes() {
            return map;
        }
        for record in bytes[8..].chunks_exact(16 + 4 * self.dims) {
            let mut k = [0u8; 16];
            k.copy_from_slice(&record[..16]);
            let v = record[16..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            map.insert(k, Arc::new(v));
        }
        map
    }

    /// The cached embedding of `text`, or `embed(text)` computed now and appended to the file
    /// (`None` when `embed` gives none: its deadline passed). A cache that cannot be written is
    /// only slower: the embedding is still returned.
    pub fn get_or_insert(&self, text: &str, embed: impl FnOnce() -> Option<Vec<f32>>) -> Option<Arc<Vec<f32>>> {
        let k = key(text);
        let Ok(mut guard) = self.map.lock() else { return embed().map(Arc::new) };
        let map = guard.get_or_insert_with(|| self.read());
        if let Some(v) = map.get(&k) {
            return Some(v.clone());
        }
        let v = Arc::new(embed()?);
        if v.len() == self.dims {
            self.append(&k, &v);
        }
        map.insert(k, v.clone());
        Some(v)
    }

    fn append(&self, k: &[u8; 16], v: &[f32]) {
        let Some(dir) = self.path.parent() else { return };
        // The option texts of decisions are the user's: a private folder and file, whatever the
        // umask, opened in place (a link planted under the name is refused, never written through).
        if crate::fsutil::private_dir(dir).is_err() {
            return;
        }
        let fresh = std::fs::metadata(&self.path).map(|m| {
            let len = m.len() as usize;
            len < 8 || !(len - 8).is_multiple_of(16 + 4 * self.dims) || !self.header_matches()
        });
        let mut record = Vec::with_capacity(8 + 16 + 4 * v.len());
        let file = match fresh {
            // Missing, of another dimension, or ending in a torn record: start it again.
            Err(_) | Ok(true) => {
                record.extend_from_slice(MAGIC);
                record.extend_from_slice(&(self.dims as u32).to_le_bytes());
                crate::fsutil::open_private(&self.path, OpenOptions::new().write(true).create(true).truncate(true))
            }
            Ok(false) => crate::fsutil::open_private(&self.path, OpenOptions::new().append(true)),
        };
        let Ok(mut file) = file else { return };
        record.extend_from_slice(k);
        for x in v {
            record.extend_from_slice(&x.to_le_bytes());
        }
        let _ = file.write_all(&record);
    }

    fn header_matches(&self) -> bool {
        let mut head = [0u8; 8];
        crate::fsutil::open_read(&self.path, MAX_FILE_BYTES, crate::fsutil::Links::Refuse)
            .and_then(|(mut f, _)| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok_and(|_| &head[..4] == MAGIC && head[4..8] == (self.dims as u32).to_le_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeds_once_and_survives_a_torn_record_and_another_dimension() {
        let dir = std::env::temp_dir().join(format!("system1-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("m.embeddings");
        let calls = std::cell::Cell::new(0);
        let embed = |x: f32| {
            calls.set(calls.get() + 1);
            Some(vec![x, 1.0 - x])
        };
        let c = Cache::open(&path, 2);
        assert_eq!(*c.get_or_insert("pdf: fill forms", || embed(0.25)).unwrap(), [0.25, 0.75]);
        assert_eq!(*c.get_or_insert("pdf: fill forms", || embed(0.5)).unwrap(), [0.25, 0.75]);
        assert_eq!(calls.get(), 1);
        // A second process reads what the first wrote.
        assert_eq!(*Cache::open(&path, 2).get_or_insert("pdf: fill forms", || embed(0.5)).unwrap(), [0.25, 0.75]);
        assert_eq!(calls.get(), 1);
        // A torn record is dropped (the file starts again), not misread.
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[1, 2, 3]).unwrap();
        let c = Cache::open(&path, 2);
        assert_eq!(
            *c.get_or_insert("pdf: fill forms", || embed(0.5)).unwrap(),
            [0.25, 0.75],
            "whole records still read"
        );
        assert_eq!(*c.get_or_insert("other", || embed(0.125)).unwrap(), [0.125, 0.875]);
        assert_eq!(*Cache::open(&path, 2).get_or_insert("other", || embed(0.9)).unwrap(), [0.125, 0.875]);
        // Another model's dimension: nothing is reused.
        assert_eq!(Cache::open(&path, 3).get_or_insert("other", || Some(vec![0.0, 0.0, 1.0])).unwrap().len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
