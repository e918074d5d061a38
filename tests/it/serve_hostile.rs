//! `system1 serve` against clients that try to hold it (issue 41): a chunked body of tiny chunks
//! with long extensions, connections that never send a byte, framing a proxy could read another
//! way, a key check that comes after the body, a stop signal with connections in the backlog, and
//! a key file no client could send. Real sockets on 127.0.0.1, every loop bounded; memory from the
//! server's `/proc` peak, never from timing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::serve::{Server, mixed, raw, read_response, request_bytes};
use crate::support::{self, TestEnv};

/// The server's peak resident memory so far (`VmHWM`), in KiB.
fn peak_kib(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Sends `head` and then `body_part` again and again (up to `limit` bytes, or until the server
/// stops reading) from a thread, while this one reads the answer: its status line and body.
fn send_while_reading(addr: &str, head: &[u8], body_part: Vec<u8>, tail: &'static [u8], limit: usize) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(head).unwrap();
    let mut writer = s.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let mut sent = 0;
        while sent < limit {
            if writer.write_all(&body_part).is_err() {
                return;
            }
            sent += body_part.len();
        }
        let _ = writer.write_all(tail);
    });
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // Until the server closes (or resets): the answer it wrote before is read first.
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
    let _ = sender.join();
    String::from_utf8_lossy(&answer).to_string()
}

#[test]
fn tiny_chunks_with_long_extensions_count_against_the_body_limit() {
    let env = TestEnv::with_mock("");
    let server = Server::start(&env, &[]);
    assert_eq!(server.request("GET", "/health", &[], b"").0, 200);
    let before = peak_kib(&server);
    // 1-byte chunks, each with a 1,000-byte extension: 16 MiB on the wire for a body of 16 KiB.
    let part = format!("1;{}\r\nx\r\n", "e".repeat(1000)).into_bytes();
    let head = b"POST /v1/systemone HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    let answer = send_while_reading(&server.addr, head, part, b"0\r\n\r\n", 16 << 20);
    assert!(answer.starts_with("HTTP/1.1 413 "), "every byte read counts against the 1 MiB limit: {answer:.300}");
    assert!(answer.contains("request_too_large"), "{answer:.300}");
    let grown = peak_kib(&server).saturating_sub(before);
    assert!(grown < 8 << 10, "the server's peak grew by {grown} KiB for a body of 16 KiB");

    // A chunk-size line over 1 KiB is refused as it stands, complete or not.
    for line in [format!("1;{}\r\nx\r\n0\r\n\r\n", "e".repeat(2000)), format!("1;{}", "e".repeat(2000))] {
        let mut s = TcpStream::connect(&server.addr).unwrap();
        s.write_all(head).unwrap();
        s.write_all(line.as_bytes()).unwrap();
        let (status, _, body) = read_response(&mut s);
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
        assert!(String::from_utf8_lossy(&body).contains("chunk-size line over 1024 bytes"));
    }
    // A chunked body of ordinary chunks is still read whole.
    let body = mixed().to_string();
    let (first, second) = body.split_at(40);
    let chunked = format!(
        "POST /v1/systemone HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x};name=value\r\n{first}\r\n{:x}\r\n{second}\r\n0\r\n\r\n",
        first.len(),
        second.len()
    );
    assert_eq!(raw(&server.addr, chunked.as_bytes()).0, 200);
}

#[test]
fn connections_that_send_nothing_hold_no_worker_and_are_closed() {
    let env = TestEnv::with_mock("");
    let server = Server::start(&env, &["--workers", "2", "--queue", "2"]);
    // Far more idle connections than the workers and the queue take together.
    let idle: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(&server.addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let (status, v) = server.post(&mixed());
    assert_eq!(status, 200, "a request behind 40 idle connections is served at once: {v}");
    // Each idle one is closed unanswered once its first-byte deadline (2 s) has passed.
    for mut s in idle {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut got = Vec::new();
        let started = Instant::now();
        let _ = s.read_to_end(&mut got);
        assert!(got.is_empty(), "closed without an answer: {:?}", String::from_utf8_lossy(&got));
        assert!(started.elapsed() < Duration::from_secs(25), "closed, not left open");
    }

    // A request whose head arrives in pieces within the deadline is still served.
    let mut s = TcpStream::connect(&server.addr).unwrap();
    let bytes = request_bytes("POST", "/v1/systemone", &[], mixed().to_string().as_bytes());
    s.write_all(&bytes[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    s.write_all(&bytes[10..]).unwrap();
    assert_eq!(read_response(&mut s).0, 200);
    let (exit, log) = server.terminate();
    assert!(exit.success(), "{log}");
    assert!(!log.contains(" 408 ") && !log.contains(" 503 "), "idle connections were never answered: {log}");
}

#[test]
fn framing_a_proxy_could_read_another_way_is_refused() {
    let env = TestEnv::with_mock("");
    let server = Server::start(&env, &[]);
    let body = mixed().to_string();
    let n = body.len();
    let cases: Vec<(String, u16, &str)> = vec![
        (format!("Content-Length: {n}\r\nContent-Length: {}\r\n", n - 1), 400, "two different Content-Length"),
        (format!("Content-Length: {n}, {}\r\n", n + 1), 400, "two different Content-Length"),
        (format!("Content-Length: +{n}\r\n"), 400, "a bad Content-Length"),
        (format!("Content-Length: -{n}\r\n"), 400, "a bad Content-Length"),
        (format!("Content-Length: 0x{n:x}\r\n"), 400, "a bad Content-Length"),
        ("Transfer-Encoding: gzip, chunked\r\n".into(), 501, "gzip"),
        ("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n".into(), 501, "gzip"),
        ("Transfer-Encoding: chunked, gzip\r\n".into(), 400, "last coding is not chunked"),
        ("Transfer-Encoding: identity\r\n".into(), 400, "last coding is not chunked"),
        ("Transfer-Encoding: chunked, chunked\r\n".into(), 400, "chunked more than once"),
        (format!("Transfer-Encoding: chunked\r\nContent-Length: {n}\r\n"), 400, "both Transfer-Encoding"),
    ];
    for (headers, want, says) in &cases {
        let chunked = headers.contains("chunked");
        let payload = if chunked { format!("{n:x}\r\n{body}\r\n0\r\n\r\n") } else { body.clone() };
        let bytes = format!("POST /v1/systemone HTTP/1.1\r\nHost: t\r\n{headers}\r\n{payload}");
        let (status, _, answer) = raw(&server.addr, bytes.as_bytes());
        let answer = String::from_utf8_lossy(&answer);
        assert_eq!(status, *want, "{headers:?}: {answer}");
        assert!(answer.contains(says), "{headers:?}: {answer}");
    }
    let v10 = format!("POST /v1/systemone HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n{n:x}\r\n{body}\r\n0\r\n\r\n");
    assert_eq!(raw(&server.addr, v10.as_bytes()).0, 400, "a transfer coding in HTTP/1.0 is faulty framing");
    // What agrees stays accepted: the same length twice, leading zeros, CHUNKED in capitals.
    for headers in [format!("Content-Length: {n}\r\nContent-Length: {n}\r\n"), format!("Content-Length: 00{n}\r\n")] {
        let bytes = format!("POST /v1/systemone HTTP/1.1\r\n{headers}\r\n{body}");
        assert_eq!(raw(&server.addr, bytes.as_bytes()).0, 200, "{headers:?}");
    }
    let bytes =
        format!("POST /v1/systemone HTTP/1.1\r\nTransfer-Encoding: CHUNKED\r\n\r\n{n:x}\r\n{body}\r\n0\r\n\r\n");
    assert_eq!(raw(&server.addr, bytes.as_bytes()).0, 200);
    // A chunk line without a size is not the last chunk; a chunk longer than its size is refused.
    for payload in [format!("\r\n{body}"), format!("2\r\n{body}\r\n0\r\n\r\n")] {
        let bytes = format!("POST /v1/systemone HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{payload}");
        assert_eq!(raw(&server.addr, bytes.as_bytes()).0, 400, "{payload:.20}");
    }
}

fn key_file(env: &TestEnv, key: &[u8]) -> String {
    let file = env.root.join("serve.key");
    std::fs::write(&file, key).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    file.to_str().unwrap().to_string()
}

#[test]
fn the_key_is_checked_before_the_body_and_its_scheme_in_any_case() {
    let env = TestEnv::with_mock("");
    let key = "k3y-0123456789abcdef";
    let file = key_file(&env, key.as_bytes());
    let server = Server::start(&env, &["--api-key-file", &file]);
    let body = mixed().to_string();
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let auth = format!("{scheme} {key}");
        let (status, v) = server.request("POST", "/v1/systemone", &[("Authorization", &auth)], body.as_bytes());
        assert_eq!(status, 200, "{scheme}: {v}");
    }
    assert_eq!(server.request("GET", "/health", &[("Authorization", &format!("Basic {key}"))], b"").0, 401);
    // A client that waits for 100 Continue without the key gets the 401 instead, its body unsent.
    for auth in ["", "Authorization: Bearer wrong\r\n"] {
        let mut s = TcpStream::connect(&server.addr).unwrap();
        let head = format!(
            "POST /v1/systemone HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: {}\r\nExpect: 100-continue\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let (status, head, answer) = read_response(&mut s);
        assert_eq!(status, 401, "{head}");
        let v: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(v["detail"]["error_type"], "authentication_error", "{v}");
    }
    // With the key, 100 Continue comes first, then the answer.
    let mut s = TcpStream::connect(&server.addr).unwrap();
    let head = format!(
        "POST /v1/systemone HTTP/1.1\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut first = [0u8; 25];
    s.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(body.as_bytes()).unwrap();
    assert_eq!(read_response(&mut s).0, 200);
}

#[test]
fn a_key_no_client_can_send_is_refused_at_start() {
    for (key, says) in [
        (&b"abc\x07def"[..], "a control character (U+0007)"),
        ("clé-secrète".as_bytes(), "a non-ASCII character (U+00E9)"),
    ] {
        let env = TestEnv::with_mock("");
        let file = key_file(&env, key);
        let out =
            env.run_within(&["serve", "--port", "0", "--api-key-file", &file], "", false, Duration::from_secs(20));
        let out = out.expect("system1 serve refuses the key and exits rather than serving");
        let err = support::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains(says) && err.contains("printable ASCII"), "{err}");
        assert!(!err.contains(std::str::from_utf8(key).unwrap_or("abc")), "the key is never shown: {err}");
    }
}

#[test]
fn sigterm_serves_the_connections_already_in_the_backlog() {
    let env = TestEnv::with_mock("");
    let server = Server::start(&env, &[]);
    let pid = server.child.id().to_string();
    let signal = |sig: &str| assert!(Command::new("kill").args([sig, &pid]).status().unwrap().success());
    // Stopped, the server accepts nothing; the kernel completes the connections into the listener's
    // backlog, and each client sends its whole request. Then SIGTERM, and the server goes on.
    signal("-STOP");
    let request = request_bytes("POST", "/v1/systemone", &[], mixed().to_string().as_bytes());
    let mut clients: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = TcpStream::connect(&server.addr).unwrap();
            s.write_all(&request).unwrap();
            s
        })
        .collect();
    signal("-TERM");
    signal("-CONT");
    let mut statuses = Vec::new();
    for s in &mut clients {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        let text = String::from_utf8_lossy(&all);
        statuses.push(text.split_whitespace().nth(1).unwrap_or("reset").to_string());
    }
    let (exit, log) = server.terminate();
    assert!(exit.success(), "{log}");
    assert_eq!(statuses, vec!["200"; 20], "every request sent before the stop is answered: {log}");
    assert!(log.contains("stopped after 20 requests"), "{log}");
}

#[test]
fn the_unit_started_at_login_quotes_its_paths_and_names_the_locations_given() {
    let mut env = TestEnv::with_mock("");
    let bin = env.root.join("fakebin");
    support::write_executable(&bin.join("systemctl"), "#!/bin/sh\n");
    env.set_env("PATH", bin.to_str().unwrap());
    // An install dir with a space, a `%` (a systemd specifier) and a `$` (a variable in ExecStart).
    let dir = env.root.join("my tools 100% $HOME");
    env.set_env("SYSTEM1_INSTALL_DIR", dir.to_str().unwrap());
    support::write_executable(&dir.join("bin/system1"), "#!/bin/sh\n");
    let out = env.run(&["serve", "--at-login", "on", "--platform", "linux"], "");
    assert!(out.status.success(), "{}", support::stderr(&out));
    let unit = std::fs::read_to_string(env.home.join(".config/systemd/user/system1-serve.service")).unwrap();
    let quoted = dir.to_str().unwrap().replace('%', "%%");
    assert!(unit.contains(&format!("ExecStart=\"{quoted}/bin/system1\" serve\n")), "{unit}");
    assert!(unit.contains(&format!("Environment=\"SYSTEM1_INSTALL_DIR={quoted}\"\n")), "{unit}");
    let config = env.config.to_str().unwrap().replace('%', "%%");
    assert!(unit.contains(&format!("Environment=\"SYSTEM1_CONFIG={config}\"\n")), "{unit}");

    // Where systemd's own checker is installed, it reads the unit as one command that exists.
    let unit_path = env.home.join(".config/systemd/user/system1-serve.service");
    if let Ok(check) = Command::new("systemd-analyze").args(["verify", "--man=no"]).arg(&unit_path).output() {
        assert!(
            check.status.success(),
            "{}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
    }

    let out = env.run(&["serve", "--at-login", "on", "--platform", "macos"], "");
    assert!(out.status.success(), "{}", support::stderr(&out));
    let plist = std::fs::read_to_string(env.home.join("Library/LaunchAgents/com.system1.serve.plist")).unwrap();
    assert!(plist.contains("<key>EnvironmentVariables</key>"), "{plist}");
    assert!(
        plist.contains(&format!("<key>SYSTEM1_INSTALL_DIR</key>\n    <string>{}</string>", dir.display())),
        "{plist}"
    );
}
