//! What an engine's reply may hold that is not an answer (issue 41): a body that is not UTF-8, a
//! compressed one nobody asked for, megabytes of headers, a redirect elsewhere. Each is named for
//! what it is, never "connection failed" (which sends the person looking for a server that is
//! there). A raw server on 127.0.0.1 writes each reply byte for byte.

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::Value;

use crate::support::{TestEnv, stderr, stdout};

/// A server on 127.0.0.1 that answers every connection with `reply`, once the request's head has
/// arrived; its URL.
fn replying(reply: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            // The request's body too, so that closing sends no reset.
            let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").map_or(got.len(), |p| p + 4);
            let text = String::from_utf8_lossy(&got[..head_end]).to_ascii_lowercase();
            let length: usize = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while got.len() < head_end + length {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let _ = s.write_all(&reply);
        }
    });
    url
}

/// A System One server on 127.0.0.1 that answers every question asked (yes at 0.9) and `extra`
/// more that nobody asked; its URL.
fn answering(extra: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let unasked: String = (0..extra).map(|i| format!(",\"unasked-{i}\":{{\"type\":\"noul\",\"noul\":0.5}}")).collect();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            let body = loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break None,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
                let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4) else { continue };
                let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if got.len() >= end + length {
                    break serde_json::from_slice::<Value>(&got[end..end + length]).ok();
                }
            };
            let mut answers = serde_json::Map::new();
            for id in body.as_ref().and_then(|b| b["questions"].as_object()).into_iter().flat_map(|q| q.keys()) {
                answers.insert(id.clone(), serde_json::json!({"type": "noul", "noul": 0.9}));
            }
            let asked = serde_json::Value::Object(answers).to_string();
            let reply = format!("{{\"model\":\"jev-latest\",\"answers\":{}{unasked}}}}}", &asked[..asked.len() - 1]);
            let _ = s.write_all(&head("200 OK", "Content-Type: application/json\r\n", reply.as_bytes()));
        }
    });
    url
}

fn head(status: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n", body.len())
        .into_bytes();
    out.extend_from_slice(body);
    out
}

/// `system1 decide` against a System One engine at `url`: its JSON response.
fn decide(url: &str) -> Value {
    let mut env = TestEnv::new();
    env.write_config("[gateway]\nprovider = \"systemone\"\ntimeout_s = 10\n");
    env.set_env("SYSTEM1_SYSTEMONE_ENDPOINT", url);
    let out = env.run(&["decide", "--json", "-q", "Is it safe?", "--context", r#"{"text": "a migration"}"#], "");
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)))
}

fn error_of(v: &Value) -> String {
    v["error"]["message"].as_str().unwrap_or_else(|| panic!("no error: {v}")).to_string()
}

#[test]
fn a_reply_that_is_not_an_answer_is_named_for_what_it_is() {
    let answer = br#"{"model": "jev-latest", "answers": {"q1": {"type": "noul", "noul": 0.9}}}"#;
    let mut latin1 = answer.to_vec();
    latin1.extend_from_slice(b"\xe9\xff");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (head("200 OK", "Content-Type: application/json\r\n", &latin1), "the reply's body is not UTF-8 text"),
        (
            head("200 OK", "Content-Type: application/json\r\nContent-Encoding: gzip\r\n", b"\x1f\x8b\x08\x00junk"),
            "the reply is encoded as \"gzip\", which is not decoded here",
        ),
        (head("200 OK", &format!("X-Padding: {}\r\n", "a".repeat(2 << 20)), answer), "the reply's headers are over"),
        (
            head("302 Found", "Location: file:///etc/passwd\r\n", b""),
            "HTTP 302: a redirect to file:///etc/passwd, not followed",
        ),
        (
            head("307 Temporary Redirect", "Location: http://user:secret@elsewhere.example/v1/systemone\r\n", b""),
            "HTTP 307: a redirect to http://***@elsewhere.example/v1/systemone, not followed",
        ),
    ];
    for (reply, says) in cases {
        let v = decide(&replying(reply));
        let msg = error_of(&v);
        assert!(msg.contains(says), "{says}: {msg}");
        assert!(!msg.contains("connection failed") && !msg.contains("nothing answers"), "{msg}");
        assert!(!msg.contains("secret"), "a password in a Location is never shown: {msg}");
    }
}

#[test]
fn a_reply_is_read_only_up_to_what_the_questions_asked_can_need() {
    // 300,000 answers nobody asked for (about 10 MB): not read, whatever they would cost parsed.
    let v = decide(&answering(300_000));
    let msg = error_of(&v);
    assert!(
        msg.contains("the reply's body is over") && msg.contains("more than any answer to this request needs"),
        "{msg}"
    );
    // A few are ignored, and the answer asked for is used.
    let v = decide(&answering(12));
    assert_eq!(v["decision"], "yes", "{v}");
}
