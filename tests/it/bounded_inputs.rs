//! Inputs too big, too slow or poisoned, through the real binary: a routing log of gigabytes for
//! the PostToolUse hook and for `calibrate label` (which rewrites it while a hook appends), a transcript line of gigabytes with no newline for `report` and
//! `outcomes` (each under an address-space limit of 1 GiB, which reading them whole breaks), a
//! model mirror that drips or redirects to `file://` for `engine install local`, and the local
//! engine's embedding cache written by 50 processes at once, holding NaN and 1e38 vectors, and
//! past its cap. The big files are sparse: a hole of zeros costs no disk.

#![cfg(unix)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::local_untrusted::write_model;
use crate::support::{CUT_OFF, TestEnv, stderr, stdout, write};
use serde_json::{Value, json};

/// The address space a run may use: the binary and its threads fit many times over; a buffer of
/// gigabytes does not.
const LIMIT: u64 = 1 << 30;

/// `system1 args` in `env` with its address space limited to [`LIMIT`] (by the shell's `ulimit`),
/// run with `stdin`.
fn run_limited(env: &TestEnv, args: &[&str], stdin: &str) -> Output {
    run_limited_to(LIMIT, env, args, stdin)
}

/// [`run_limited`] with an address space of `limit` bytes.
fn run_limited_to(limit: u64, env: &TestEnv, args: &[&str], stdin: &str) -> Output {
    let inner = env.command(args);
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", limit / 1024))
        .arg(inner.get_program())
        .args(inner.get_args());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.as_bytes());
    }
    child.wait_with_output().expect("wait")
}

/// Extends `path` by a hole of `bytes` zeros (no newline among them), then appends `tail`.
fn append_hole_then(path: &Path, bytes: u64, tail: &str) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len + bytes).unwrap();
    f.write_all(tail.as_bytes()).unwrap();
}

#[test]
fn the_posttooluse_hook_reads_only_the_end_of_a_routing_log_of_gigabytes() {
    let env = TestEnv::new();
    let repo = env.logged_repo();
    let log = routing_log(&env, "");
    // 3 GB of older lines (here zeros), then the spawn's agent entry, as the agent hook writes it.
    let agent = json!({"id": "e1", "time": "2026-12-01T10:00:00.000Z", "source": "agent", "session_id": "sess",
                       "repo": repo, "cwd": repo, "tool_use_id": "t1", "description": "survey"});
    append_hole_then(&log, 3 << 30, &format!("\n{agent}\n"));
    let out = run_limited(&env, &["hook", "spawned"], &crate::guarded_reads::post_payload(&repo, "t1"));
    assert_eq!(out.status.code(), Some(0), "{:?} {}", out.status, stderr(&out));
    // The spawn entry beside the agent entry it found at the end.
    let mut f = std::fs::File::open(&log).unwrap();
    let len = f.metadata().unwrap().len();
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(len - 4096)).unwrap();
    let mut tail = String::new();
    f.read_to_string(&mut tail).unwrap();
    let last: Value = serde_json::from_str(tail.lines().last().unwrap()).unwrap();
    assert_eq!((&last["source"], &last["tool_use_id"]), (&json!("spawn"), &json!("t1")), "{tail}");
    assert_eq!(last["resolved_model"], "claude-haiku-4-5", "{last}");
}

/// A routing log as the hooks make it: private, in a private folder, holding `first`.
fn routing_log(env: &TestEnv, first: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let log = env.install_dir.join("logs/routing.jsonl");
    write(&log, first);
    std::fs::set_permissions(log.parent().unwrap(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
    log
}

/// The next line of `r`, at most `max` bytes of it (the rest of a longer line is left unread).
fn next_line(r: &mut impl std::io::BufRead, max: u64) -> Vec<u8> {
    let mut line = Vec::new();
    std::io::BufRead::read_until(&mut r.take(max), b'\n', &mut line).unwrap();
    line
}

/// Reads past the next line of `r`, which must be `len` zeros and its newline.
fn skip_zero_line(r: &mut impl std::io::BufRead, len: usize) {
    let zeros = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let buf = r.fill_buf().unwrap();
        assert!(!buf.is_empty(), "the log ends inside a line of zeros");
        let n = buf.len().min(left).min(zeros.len());
        // Compared as slices (a memcmp): a byte loop in a debug build takes seconds a gigabyte.
        assert!(buf[..n] == zeros[..n], "a line of zeros changed");
        r.consume(n);
        left -= n;
    }
    let mut newline = [0u8; 1];
    r.read_exact(&mut newline).unwrap();
    assert_eq!(&newline, b"\n", "a line of zeros grew");
}

#[test]
fn calibrate_label_streams_a_routing_log_of_gigabytes() {
    let env = TestEnv::new();
    // An entry in a shape no writer uses (spaces, a key this version does not know), 40 lines of
    // 32 MiB (zeros: no entry) and one of 96 MiB, longer than any line is held; then the entry to
    // label, and a last line without its newline.
    let first = "{ \"id\": \"p0\", \"source\": \"prompt\", \"prompt\": \"before\", \"later\": {\"x\": 1} }\n";
    let log = routing_log(&env, first);
    for _ in 0..40 {
        append_hole_then(&log, 32 << 20, "\n");
    }
    let target = json!({"id": "p1", "source": "prompt", "prompt": "Rename the flag", "from_the_future": [1, 2]});
    append_hole_then(&log, 96 << 20, &format!("\n{target}\n{{\"id\":\"p2\",\"source\":\"prompt\"}}"));
    // 256 MiB of address space: room for the binary and a line held, a fifth of the log.
    let limit = 256 << 20;
    let before = std::fs::metadata(&log).unwrap().len();
    assert!(before > 5 * limit, "the log is {before} bytes");

    let args = ["calibrate", "label", "--id", "p1", "--feature", "read_only=true", "--tier", "haiku"];
    let out = run_limited_to(limit, &env, &args, "");
    assert!(out.status.success(), "{:?} {}", out.status, stderr(&out));
    assert_eq!(stdout(&out).trim(), "labelled p1");

    let mut r = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&log).unwrap());
    assert_eq!(String::from_utf8(next_line(&mut r, 4096)).unwrap(), first, "an untouched entry keeps its bytes");
    for _ in 0..40 {
        skip_zero_line(&mut r, 32 << 20);
    }
    skip_zero_line(&mut r, 96 << 20);
    let labelled: Value = serde_json::from_slice(&next_line(&mut r, 4096)).unwrap();
    assert_eq!(labelled["labels"], json!({"read_only": true}), "{labelled}");
    assert_eq!((&labelled["label_tier"], &labelled["labelled_by"]), (&json!("haiku"), &json!("user")));
    assert_eq!(labelled["from_the_future"], json!([1, 2]), "an unknown key is kept");
    assert_eq!(
        next_line(&mut r, 4096),
        b"{\"id\":\"p2\",\"source\":\"prompt\"}",
        "the last line, still without a newline"
    );
    let leftovers: Vec<_> = std::fs::read_dir(log.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_line_appended_while_calibrate_label_rewrites_the_log_is_kept() {
    let env = TestEnv::new();
    let repo = env.logged_repo();
    let agent = json!({"id": "e1", "time": "2026-12-01T10:00:00.000Z", "source": "agent", "session_id": "sess",
                       "repo": repo, "cwd": repo, "tool_use_id": "t1", "description": "survey"});
    let log = routing_log(&env, &format!("{agent}\n"));
    // Enough lines of zeros that the rewrite takes a while; the spawn's entry last, where the
    // PostToolUse hook looks.
    for _ in 0..24 {
        append_hole_then(&log, 32 << 20, "\n");
    }
    append_hole_then(&log, 0, &format!("{agent}\n").replace("\"e1\"", "\"e2\""));
    let label = env
        .command(&["calibrate", "label", "--id", "e1", "--tier", "opus"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the new version is being written, the lock is held: the hook appends during the rewrite.
    let started = std::time::Instant::now();
    let staging = || {
        std::fs::read_dir(log.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
    };
    while !staging() {
        assert!(started.elapsed() < Duration::from_secs(60), "no rewrite began");
        std::thread::sleep(Duration::from_millis(5));
    }
    // It holds the writers' lock: an appender waits for the new log instead of writing to the old.
    let lock = std::fs::File::open(log.with_file_name("routing.jsonl.lock")).expect("the writers' lock file");
    assert!(matches!(lock.try_lock(), Err(std::fs::TryLockError::WouldBlock)), "the rewrite does not hold the lock");
    drop(lock);
    let hook = env.run(&["hook", "spawned"], &crate::guarded_reads::post_payload(&repo, "t1"));
    assert_eq!(hook.status.code(), Some(0), "{}", stderr(&hook));
    let label = label.wait_with_output().unwrap();
    assert!(label.status.success(), "{}", stderr(&label));
    let mut f = std::fs::File::open(&log).unwrap();
    let first: Value = serde_json::from_slice(&next_line(&mut std::io::BufReader::new(&mut f), 4096)).unwrap();
    assert_eq!(first["label_tier"], "opus", "{first}");
    let len = f.metadata().unwrap().len();
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(len - 4096)).unwrap();
    let mut tail = String::new();
    f.read_to_string(&mut tail).unwrap();
    let last: Value = serde_json::from_str(tail.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["source"], &last["tool_use_id"]),
        (&json!("spawn"), &json!("t1")),
        "the hook's line is kept: {tail}"
    );
}

/// A session whose second line is `hole` zeros long with no newline, between two lines of usage.
fn transcript_with_a_huge_line(env: &TestEnv, hole: u64) -> PathBuf {
    let file = env.claude_dir.join("projects/-home-u-w1/11111111-aaaa.jsonl");
    let line = |n: u32, input: u64| {
        json!({"type": "assistant", "uuid": format!("u{n}"), "parentUuid": null, "isSidechain": false,
               "timestamp": format!("2026-10-01T10:00:{n:02}.000Z"), "sessionId": "11111111-aaaa", "cwd": "/home/u/w1",
               "message": {"id": format!("msg_{n}"), "model": "claude-opus-4-8", "role": "assistant",
                           "content": [{"type": "text", "text": "hi"}],
                           "usage": {"input_tokens": input, "output_tokens": 10}}})
    };
    write(&file, &format!("{}\n", line(1, 100)));
    append_hole_then(&file, hole, &format!("\n{}\n", line(2, 200)));
    file
}

#[test]
fn report_and_outcomes_pass_over_a_line_of_gigabytes_without_holding_it() {
    let env = TestEnv::new();
    transcript_with_a_huge_line(&env, 1536 << 20);
    let out = run_limited(&env, &["report", "--json", "--since", "2026-09-01"], "");
    assert!(out.status.success(), "report: {:?} {}", out.status, stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    let text = v.to_string();
    assert!(text.contains("\"malformed_lines\":1"), "the long line is counted as malformed: {text}");
    let out = run_limited(&env, &["outcomes", "--json"], "");
    assert!(out.status.success(), "outcomes: {:?} {}", out.status, stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(v["transcripts"]["malformed_lines"], 1, "{v}");
}

/// A model mirror on a loopback port whose every answer is `answer(stream)`.
fn mirror(answer: fn(&mut std::net::TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                answer(&mut s);
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

#[test]
fn engine_install_local_has_an_overall_deadline_and_names_a_redirect_to_a_file() {
    // A byte every 0.3 s: never silent for the 2 s stall limit, done only after minutes.
    let dripping = mirror(|s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 612\r\n\r\n");
        for _ in 0..612 {
            if s.write_all(b"{").and_then(|()| s.flush()).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let mut env = TestEnv::new();
    env.set_env("HF_ENDPOINT", &dripping);
    env.set_env("SYSTEM1_DOWNLOAD_STALL_SECS", "2");
    env.set_env("SYSTEM1_DOWNLOAD_DEADLINE_SECS", "3");
    let out = env
        .run_within(&["engine", "install", "local"], "", false, CUT_OFF * 3)
        .expect("the install gives up at its deadline");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("did not finish within 3 s (SYSTEM1_DOWNLOAD_DEADLINE_SECS)"), "{err}");
    assert!(!env.install_dir.join("engines/local/all-MiniLM-L6-v2").exists(), "nothing installed");

    let redirecting = mirror(|s| {
        let _ = s.write_all(b"HTTP/1.1 302 Found\r\nlocation: file:///etc/passwd\r\ncontent-length: 0\r\n\r\n");
    });
    let mut env = TestEnv::new();
    env.set_env("HF_ENDPOINT", &redirecting);
    let out = env.run_within(&["engine", "install", "local"], "", false, CUT_OFF * 3).expect("ends");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("redirected to file:///etc/passwd, which is not an http:// or https:// address"), "{err}");
    assert!(!err.contains("too many redirects"), "{err}");
}

/// An environment on the hand-made one-dimensional model (each embedding is 1 or -1), and where
/// its embedding cache lives once something is cached.
fn tiny_local(env: &TestEnv) -> PathBuf {
    let dir = env.root.join("model");
    write_model(&dir, 6, None, 5);
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\ntimeout_s = 60\n[providers.local]\nmodel_dir = {:?}\n",
        dir.to_str().unwrap()
    ));
    env.install_dir.join("engines/local/cache")
}

fn cache_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "embeddings"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// The keys of the cache file's records (16 bytes each, then the vector).
fn cached_keys(file: &Path) -> Vec<[u8; 16]> {
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(&bytes[..4], b"s1e1");
    let dims = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
    assert_eq!((bytes.len() - 8) % (16 + 4 * dims), 0, "whole records");
    bytes[8..].chunks(16 + 4 * dims).map(|r| r[..16].try_into().unwrap()).collect()
}

fn key(text: &str) -> [u8; 16] {
    let d = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    d.as_ref()[..16].try_into().unwrap()
}

#[test]
fn the_embedding_cache_keeps_every_record_of_50_writers_at_once() {
    // The real model: each process spends a while embedding, so their writes meet, as hooks' do.
    let Some(model) = crate::local_engine::model_dir() else { return };
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\ntimeout_s = 120\n[providers.local]\nmodel_dir = {model:?}\n"
    ));
    let dir = env.install_dir.join("engines/local/cache");
    let children: Vec<_> = (0..50)
        .map(|p| {
            let mut args = vec!["decide".to_string(), "--json".into(), "--question".into(), "Which one?".into()];
            for o in 0..4 {
                args.extend(["--option".to_string(), format!("option {o} of writer {p}")]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            env.command(&args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        assert_eq!(v["provider"], "local", "{v}");
    }
    let mut keys = cached_keys(&cache_file(&dir));
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 200, "every option text cached");
}

#[test]
fn a_poisoned_cache_record_is_dropped() {
    let Some(model) = crate::local_engine::model_dir() else { return };
    let env = TestEnv::new();
    env.write_config(&format!(
        "[gateway]\nprovider = \"local\"\ntimeout_s = 60\n[providers.local]\nmodel_dir = {model:?}\n"
    ));
    let ask = || {
        let (v, _) = env.decide_json(&[
            "--question",
            "Which team handles this?",
            "--context",
            r#"{"ticket": "I was charged twice for March"}"#,
            "--option",
            "billing",
            "--option",
            "banana",
            "--min-confidence",
            "0",
        ]);
        v
    };
    let clean = ask();
    assert_eq!((&clean["provider"], &clean["decision"]), (&json!("local"), &json!("billing")), "{clean}");
    let file = cache_file(&env.install_dir.join("engines/local/cache"));
    let dims = (std::fs::metadata(&file).unwrap().len() as usize - 8) / 2 / 4 - 4;
    assert_eq!(dims, 384);
    // The record of "banana" replaced by NaN, then by 1e38 (which made banana the answer at 1.0).
    for poison in [f32::NAN, 1e38, -1e38] {
        let mut bytes = std::fs::read(&file).unwrap()[..8].to_vec();
        bytes.extend_from_slice(&key("banana"));
        (0..dims).for_each(|_| bytes.extend_from_slice(&poison.to_le_bytes()));
        std::fs::write(&file, &bytes).unwrap();
        let v = ask();
        assert_eq!(v["probabilities"], clean["probabilities"], "{poison}: {v}");
        assert_eq!(v["decision"], "billing", "{poison}: {v}");
    }
}

#[test]
fn the_embedding_cache_survives_a_torn_record_and_stays_under_its_cap() {
    let env = TestEnv::new();
    let dir = tiny_local(&env);
    let (v, _) = env.decide_json(&["--question", "Which one?", "--option", "pick", "--option", "this"]);
    assert_eq!(v["provider"], "local", "{v}");
    let file = cache_file(&dir);
    // A record cut off by a writer that was killed mid-write costs only itself: the whole records
    // before it stay (the whole file used to be started afresh).
    let mut bytes = b"s1e1\x01\x00\x00\x00".to_vec();
    for i in 0..10 {
        bytes.extend_from_slice(&key(&format!("kept {i}")));
        bytes.extend_from_slice(&0.0f32.to_le_bytes());
    }
    bytes.extend_from_slice(&[1, 2, 3]);
    std::fs::write(&file, &bytes).unwrap();
    let (v, _) = env.decide_json(&["--question", "Which one?", "--option", "new", "--option", "kept 3"]);
    assert_eq!(v["provider"], "local", "{v}");
    let mut want: Vec<[u8; 16]> = (0..10).map(|i| key(&format!("kept {i}"))).collect();
    want.push(key("new"));
    assert_eq!(cached_keys(&file), want);
    // 20,000 records, the cap: the next one compacts the file to its newest 15,000, the new one last.
    let mut bytes = b"s1e1\x01\x00\x00\x00".to_vec();
    for i in 0..20_000 {
        bytes.extend_from_slice(&key(&format!("old {i}")));
        bytes.extend_from_slice(&0.0f32.to_le_bytes());
    }
    std::fs::write(&file, &bytes).unwrap();
    let (v, _) = env.decide_json(&["--question", "Which one?", "--option", "fresh", "--option", "old 19999"]);
    assert_eq!(v["provider"], "local", "{v}");
    let keys = cached_keys(&file);
    assert_eq!(keys.len(), 15_000);
    assert_eq!(keys.last(), Some(&key("fresh")));
    assert_eq!(keys[keys.len() - 2], key("old 19999"));
}

#[test]
fn the_session_start_hook_and_calibrate_pending_read_a_routing_log_of_gigabytes_a_line_at_a_time() {
    // 30 prompts waiting for labels, a line of 1.5 GB (here zeros), then one more: both readers once
    // held the whole log (the hook 516 MB for a 498 MB log, `pending` several times that), and the
    // address space here is 1 GiB.
    let env = TestEnv::with_mock("");
    let waiting = |i: usize| format!("{}\n", json!({"id": format!("p{i}"), "source": "prompt", "prompt": "x"}));
    let log = routing_log(&env, &(0..30).map(waiting).collect::<String>());
    append_hole_then(&log, 1536 << 20, &format!("\n{}", waiting(30)));

    let out = run_limited(&env, &["calibrate", "pending"], "");
    assert_eq!(out.status.code(), Some(0), "calibrate pending: {}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(v["tally"]["pending"], 31, "every entry counted, the long line passed over: {v}");
    assert_eq!(v["tally"]["entries"], 31, "{v}");

    let start = r#"{"session_id":"s1","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"SessionStart","source":"startup"}"#;
    let out = run_limited(&env, &["hook", "session-start"], start);
    assert_eq!(out.status.code(), Some(0), "hooks exit 0: {}", stderr(&out));
    assert!(
        stdout(&out).contains("31 logged prompts and spawns"),
        "the nudge counts past the long line: {}",
        stdout(&out)
    );
}
