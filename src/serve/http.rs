//! HTTP/1.1 on one connection: read one request within a deadline and a size limit, write one
//! response, close. The request line and headers are parsed by `httparse` (hyper's parser, already
//! in the build through ureq), chunk sizes by its `parse_chunk_size`; this file only frames.
//!
//! Every response says `Connection: close`: a worker serves exactly one request per connection,
//! so an idle keep-alive client can never hold a worker.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// Request bodies past this get 413.
pub const MAX_BODY: usize = 1 << 20;
/// The request line and headers together; past this, 431.
const MAX_HEAD: usize = 64 << 10;
const MAX_HEADERS: usize = 64;
/// How long a response may take to be written to a client that does not read it.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// Without the query string.
    pub path: String,
    /// The `Authorization` header's value, when there is one.
    pub authorization: Option<String>,
    pub body: Vec<u8>,
}

/// Why no request could be read: each is answered with its status, or not at all.
#[derive(Debug)]
pub enum ReadError {
    /// The client closed, or sent nothing: nothing to answer.
    Closed,
    /// Not within the read deadline: 408.
    Timeout,
    /// Not HTTP/1.x as httparse reads it: 400.
    Malformed(String),
    /// The head is too large: 431.
    HeadTooLarge,
    /// The body is over [`MAX_BODY`]: 413.
    TooLarge,
    /// A body whose length cannot be known: 411.
    LengthRequired,
    /// A transfer coding this server does not decode: 501.
    NotImplemented(String),
}

/// A response, written whole.
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// Extra headers: `Retry-After`, `WWW-Authenticate`, `Allow`.
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Response { status, body: serde_json::to_vec(body).unwrap_or_default(), headers: Vec::new() }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// A request's head, read and its framing checked; the body not yet read.
#[derive(Debug)]
pub struct Head {
    pub method: String,
    /// Without the query string.
    pub path: String,
    /// The `Authorization` header's value, when there is one.
    pub authorization: Option<String>,
    framing: Framing,
    expect_continue: bool,
    /// What came after the head in the same reads: the body's first bytes.
    rest: Vec<u8>,
}

/// How the body's end is known.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Framing {
    None,
    Length(usize),
    Chunked,
}

impl Head {
    /// Whether a body is still to come, which a refusal leaves unread.
    pub fn has_body(&self) -> bool {
        !self.rest.is_empty() || matches!(self.framing, Framing::Chunked | Framing::Length(1..))
    }
}

/// Reads one request's head by `deadline`.
pub fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<Head, ReadError> {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(n)) => {
                let values = |name: &str| -> Vec<String> {
                    req.headers
                        .iter()
                        .filter(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
                        .collect()
                };
                let framing = framing(req.version, &values("content-length"), &values("transfer-encoding"))?;
                let expect_continue = values("expect").iter().any(|v| v.eq_ignore_ascii_case("100-continue"));
                let path = req.path.unwrap_or("/");
                let path = path.split('?').next().unwrap_or(path).to_string();
                let method = req.method.unwrap_or("").to_string();
                let authorization = values("authorization").into_iter().next();
                let rest = buf.split_off(n);
                if framing == Framing::None && matches!(method.as_str(), "POST" | "PUT" | "PATCH") && !rest.is_empty() {
                    // Bytes after the head with neither a length nor chunks: where the body ends is unknown.
                    return Err(ReadError::LengthRequired);
                }
                return Ok(Head { method, path, authorization, framing, expect_continue, rest });
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_HEAD {
                    return Err(ReadError::HeadTooLarge);
                }
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ReadError::HeadTooLarge),
            Err(e) => return Err(ReadError::Malformed(e.to_string())),
        }
        let n = read_some(stream, &mut chunk, deadline)?;
        if n == 0 {
            return Err(if buf.is_empty() {
                ReadError::Closed
            } else {
                ReadError::Malformed("the request ended early".into())
            });
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The body's framing from the `Content-Length` and `Transfer-Encoding` headers, as strictly as
/// HTTP/1.1 framing asks: a proxy in front and this server must never disagree about where a request
/// ends. Lengths are digits only and all the same; only `chunked` is decoded, and it must be the
/// only coding; the two headers together, or a coding in an HTTP/1.0 request, are refused.
fn framing(version: Option<u8>, lengths: &[String], codings: &[String]) -> Result<Framing, ReadError> {
    let bad = |why: &str| Err(ReadError::Malformed(why.to_string()));
    if !codings.is_empty() {
        if !lengths.is_empty() {
            return bad("both Transfer-Encoding and Content-Length");
        }
        if version != Some(1) {
            return bad("Transfer-Encoding in an HTTP/1.0 request");
        }
        let list: Vec<String> =
            codings.iter().flat_map(|v| v.split(',')).map(|c| c.trim().to_ascii_lowercase()).collect();
        if list.last().map(String::as_str) != Some("chunked") {
            return bad("a Transfer-Encoding whose last coding is not chunked");
        }
        if let Some(other) = list[..list.len() - 1].iter().find(|c| *c != "chunked") {
            return Err(ReadError::NotImplemented(format!(
                "the transfer coding {:?} (only chunked is decoded)",
                crate::text::ellipsis(other, 40)
            )));
        }
        if list.len() > 1 {
            return bad("chunked more than once");
        }
        return Ok(Framing::Chunked);
    }
    let mut length: Option<&str> = None;
    for v in lengths.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return bad("a bad Content-Length");
        }
        // Leading zeros change nothing: `010` and `10` agree.
        let v = match v.trim_start_matches('0') {
            "" => "0",
            digits => digits,
        };
        match length {
            Some(l) if l != v => return bad("two different Content-Length values"),
            _ => length = Some(v),
        }
    }
    match length {
        None => Ok(Framing::None),
        // Digits only, so a value that does not fit is only ever too large.
        Some(l) => l.parse::<usize>().map(Framing::Length).or(Ok(Framing::Length(usize::MAX))),
    }
}

/// Reads the body `head` announces by `deadline` (asking for it first with `100 Continue` when the
/// client waits for that): the whole request.
pub fn read_body(stream: &mut TcpStream, head: Head, deadline: Instant) -> Result<Request, ReadError> {
    let Head { method, path, authorization, framing, expect_continue, rest } = head;
    if matches!(framing, Framing::Length(l) if l > MAX_BODY) {
        return Err(ReadError::TooLarge);
    }
    if expect_continue && matches!(framing, Framing::Chunked | Framing::Length(1..)) {
        // Clients that ask (curl, for bodies over 1 KiB) wait for this before sending the body.
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let mut chunk = [0u8; 8192];
    let body = match framing {
        Framing::Chunked => read_chunked(stream, rest, deadline, &mut chunk)?,
        Framing::Length(len) => {
            let mut body = rest;
            while body.len() < len {
                let n = read_some(stream, &mut chunk, deadline)?;
                if n == 0 {
                    return Err(ReadError::Malformed("the body ended before its Content-Length".into()));
                }
                body.extend_from_slice(&chunk[..n]);
            }
            body.truncate(len);
            body
        }
        Framing::None => Vec::new(),
    };
    Ok(Request { method, path, authorization, body })
}

/// The longest chunk-size line, extensions included (nothing here reads an extension).
const MAX_CHUNK_LINE: usize = 1024;
/// What a chunked body may take on the wire, framing included: the body limit and a margin for
/// chunk-size lines. Every byte read counts, so tiny chunks with long extensions cannot grow the
/// server past what a body of the limit costs.
const MAX_CHUNKED_WIRE: usize = MAX_BODY + (64 << 10);

/// A chunked body, decoded, within the size limits and the deadline. Only the chunk in hand is kept
/// in its raw form: each is dropped once decoded.
fn read_chunked(
    stream: &mut TcpStream,
    mut raw: Vec<u8>,
    deadline: Instant,
    chunk: &mut [u8],
) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    let mut wire = raw.len();
    if wire > MAX_CHUNKED_WIRE {
        return Err(ReadError::TooLarge);
    }
    loop {
        if raw.first().is_some_and(|b| !b.is_ascii_hexdigit()) {
            return Err(ReadError::Malformed("a chunk-size line without a size".into()));
        }
        match httparse::parse_chunk_size(&raw) {
            Ok(httparse::Status::Complete((n, size))) => {
                if n > MAX_CHUNK_LINE {
                    return Err(ReadError::Malformed(format!("a chunk-size line over {MAX_CHUNK_LINE} bytes")));
                }
                let size = usize::try_from(size).map_err(|_| ReadError::TooLarge)?;
                if body.len().saturating_add(size) > MAX_BODY {
                    return Err(ReadError::TooLarge);
                }
                // The chunk's data and its CRLF must be in hand before going on.
                let end = n + size + 2;
                while raw.len() < end {
                    fill(stream, &mut raw, &mut wire, deadline, chunk)?;
                }
                if size == 0 {
                    // The last chunk; trailers, if any, are not read (the response closes anyway).
                    return Ok(body);
                }
                if &raw[n + size..end] != b"\r\n" {
                    return Err(ReadError::Malformed("a chunk longer than its size".into()));
                }
                body.extend_from_slice(&raw[n..n + size]);
                raw.drain(..end);
            }
            Ok(httparse::Status::Partial) => {
                if raw.len() > MAX_CHUNK_LINE {
                    return Err(ReadError::Malformed(format!("a chunk-size line over {MAX_CHUNK_LINE} bytes")));
                }
                fill(stream, &mut raw, &mut wire, deadline, chunk)?;
            }
            Err(_) => return Err(ReadError::Malformed("a bad chunk size".into())),
        }
    }
}

/// One more read of a chunked body into `raw`, counted in `wire` against [`MAX_CHUNKED_WIRE`].
fn fill(
    stream: &mut TcpStream,
    raw: &mut Vec<u8>,
    wire: &mut usize,
    deadline: Instant,
    chunk: &mut [u8],
) -> Result<(), ReadError> {
    let n = read_some(stream, chunk, deadline)?;
    if n == 0 {
        return Err(ReadError::Malformed("the chunked body ended early".into()));
    }
    *wire += n;
    if *wire > MAX_CHUNKED_WIRE {
        return Err(ReadError::TooLarge);
    }
    raw.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// One read, given only the time left before `deadline`. Past it, what had arrived by then is
/// still read (a request that waited in the queue was sent in time), and only a wait is a timeout.
fn read_some(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<usize, ReadError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        stream.set_nonblocking(true).map_err(|_| ReadError::Closed)?;
        let got = stream.read(buf);
        stream.set_nonblocking(false).map_err(|_| ReadError::Closed)?;
        return match got {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Err(ReadError::Timeout),
            Err(_) => Err(ReadError::Closed),
        };
    }
    stream.set_read_timeout(Some(left)).map_err(|_| ReadError::Closed)?;
    match stream.read(buf) {
        Ok(n) => Ok(n),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            Err(ReadError::Timeout)
        }
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => read_some(stream, buf, deadline),
        Err(_) => Err(ReadError::Closed),
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// Writes `resp` and closes the connection. A request whose body was left unread (413) has the
/// rest read and dropped for a moment first, so the client reads the answer rather than a reset.
pub fn write_response(stream: &mut TcpStream, resp: &Response, unread_body: bool) {
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        resp.status,
        reason(resp.status),
        resp.body.len()
    );
    for (name, value) in &resp.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(&resp.body);
    let _ = stream.write_all(&out);
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
    if unread_body {
        drain(stream, Duration::from_secs(1), 2 * MAX_BODY);
    }
}

/// Reads and drops what the client still sends, for at most `limit` and `max` bytes.
pub fn drain(stream: &mut TcpStream, limit: Duration, max: usize) {
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 16384];
    let mut seen = 0;
    while seen < max {
        match read_some(stream, &mut buf, deadline) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen += n,
        }
    }
}
