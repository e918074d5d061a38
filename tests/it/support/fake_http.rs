//! The one loopback HTTP/1.1 server of the tests: every fake that speaks HTTP is this server with
//! its own handler (an engine's replayed answers, the Anthropic Messages API in `fake_anthropic`,
//! release downloads in `fakes::file_server`).
//!
//! It binds 127.0.0.1 on a free port, records every request (method, path, headers, body) and
//! answers through a handler the test supplies, so a test can replay an engine's captured wire
//! format and then check exactly what the client sent. Connections stay open between requests as
//! HTTP/1.1 has them (Claude Code reuses its connection), unless the client asks to close. A reply
//! can also hang (hold the connection without a byte of answer) or stall halfway through its body,
//! to exercise timeouts.
//!
//! The providers' unit tests in `src/providers/` use this same file through a `#[path]` module: the
//! crate is a binary, so a module in `src/` could not be reached from here, while this file can be
//! reached from there.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request as the fake received it. Header names are lower-cased.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (Null when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// What the fake answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    hold: Hold,
}

/// Whether the fake answers in full or holds the connection open (until the server is dropped or
/// 60 s pass) at some point.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Hold {
    No,
    BeforeHead,
    AfterBodyBytes(usize),
}

impl Reply {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Reply { status, headers: vec![("content-type".into(), content_type.into())], body: body.into(), hold: Hold::No }
    }

    pub fn json(status: u16, body: &Value) -> Self {
        Reply::new(status, "application/json", body.to_string())
    }

    pub fn text(status: u16, body: &str) -> Self {
        Reply::new(status, "text/plain", body)
    }

    /// Accepts the request and never sends a byte of answer.
    pub fn hang() -> Self {
        Reply { status: 0, headers: Vec::new(), body: Vec::new(), hold: Hold::BeforeHead }
    }

    /// Sends the head (with the full body's length) and the first `n` bytes of the body, then stalls.
    pub fn stall_after(mut self, n: usize) -> Self {
        self.hold = Hold::AfterBodyBytes(n);
        self
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

pub struct FakeServer {
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl FakeServer {
    /// Starts a fake answering every request with `handler`.
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("local addr").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (reqs, stop2) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = conn else { continue };
                let (h, r, s) = (handler.clone(), reqs.clone(), stop2.clone());
                std::thread::spawn(move || serve(stream, &*h, &r, &s));
            }
        });
        FakeServer { port, requests, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Requests to one path.
    pub fn requests_to(&self, path: &str) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.path == path).collect()
    }

    /// The path of every request so far, in order.
    pub fn paths(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.path).collect()
    }

    /// Forgets the requests received so far.
    pub fn clear(&self) {
        if let Ok(mut r) = self.requests.lock() {
            r.clear();
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A loopback port nothing listens on (bound, then released at once): a client is refused there,
/// and a server may take it.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind a loopback port").local_addr().expect("local addr").port()
}

/// Serves one connection: requests one after another until the client closes or asks to.
fn serve(stream: TcpStream, handler: &Handler, requests: &Mutex<Vec<Request>>, stop: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    let mut out = stream;
    while let Some(req) = read_request(&mut reader) {
        if let Ok(mut r) = requests.lock() {
            r.push(req.clone());
        }
        let close = req.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let reply = handler(&req);
        if !answer(&mut out, &reply, close, stop) || close {
            return;
        }
    }
}

/// Writes `reply`; false when the connection is done (a hold, or the client went away).
fn answer(out: &mut TcpStream, reply: &Reply, close: bool, stop: &AtomicBool) -> bool {
    if reply.hold == Hold::BeforeHead {
        hold(stop);
        return false;
    }
    let mut head = format!("HTTP/1.1 {} {}\r\nserver: fake-http\r\n", reply.status, reason(reply.status));
    if close {
        head.push_str("connection: close\r\n");
    }
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", reply.body.len()));
    let body = match reply.hold {
        Hold::AfterBodyBytes(n) => &reply.body[..n.min(reply.body.len())],
        _ => &reply.body[..],
    };
    let sent = out.write_all(head.as_bytes()).and_then(|()| out.write_all(body)).and_then(|()| out.flush()).is_ok();
    if let Hold::AfterBodyBytes(_) = reply.hold {
        hold(stop);
        return false;
    }
    sent
}

fn hold(stop: &AtomicBool) {
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        413 => "Content Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Reads one request (a Content-Length or chunked body); None at the end of the connection.
fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut first = String::new();
    if reader.read_line(&mut first).ok()? == 0 {
        return None;
    }
    let mut parts = first.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let body = if header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        read_chunked(reader)?
    } else {
        let len: usize = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).ok()?;
        body
    };
    Some(Request { method, path, headers, body: String::from_utf8_lossy(&body).to_string() })
}

fn read_chunked(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        if reader.read_line(&mut size).ok()? == 0 {
            return None;
        }
        let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).ok()?;
        let mut chunk = vec![0; n];
        reader.read_exact(&mut chunk).ok()?;
        body.extend(chunk);
        let mut crlf = String::new();
        reader.read_line(&mut crlf).ok()?;
        if n == 0 {
            return Some(body);
        }
    }
}
