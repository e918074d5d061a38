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

/// Reads one request; the whole of it (head and body) must arrive by `deadline`.
pub fn read_request(stream: &mut TcpStream, deadline: Instant) -> Result<Request, ReadError> {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let (head_len, method, path, authorization, length, chunked, expect_continue) = loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(n)) => {
                let header = |name: &str| {
                    req.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
                };
                let chunked = header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
                let length = match header("content-length") {
                    None => None,
                    Some(v) => {
                        Some(v.parse::<usize>().map_err(|_| ReadError::Malformed("a bad Content-Length".into()))?)
                    }
                };
                let expect = header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
                let path = req.path.unwrap_or("/");
                let path = path.split('?').next().unwrap_or(path).to_string();
                break (
                    n,
                    req.method.unwrap_or("").to_string(),
                    path,
                    header("authorization"),
                    length,
                    chunked,
                    expect,
                );
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
    };
    if length.is_some_and(|l| l > MAX_BODY) {
        return Err(ReadError::TooLarge);
    }
    let mut body = buf.split_off(head_len);
    let wants_body = length.is_some_and(|l| l > 0) || chunked;
    if expect_continue && wants_body {
        // Clients that ask (curl, for bodies over 1 KiB) wait for this before sending the body.
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    if chunked {
        body = read_chunked(stream, body, deadline, &mut chunk)?;
    } else if let Some(len) = length {
        while body.len() < len {
            let n = read_some(stream, &mut chunk, deadline)?;
            if n == 0 {
                return Err(ReadError::Malformed("the body ended before its Content-Length".into()));
            }
            body.extend_from_slice(&chunk[..n]);
        }
        body.truncate(len);
    } else if matches!(method.as_str(), "POST" | "PUT" | "PATCH") && !body.is_empty() {
        // Bytes after the head with neither a length nor chunks: where the body ends is unknown.
        return Err(ReadError::LengthRequired);
    }
    Ok(Request { method, path, authorization, body })
}

/// A chunked body, decoded, within the size limit and the deadline.
fn read_chunked(
    stream: &mut TcpStream,
    mut raw: Vec<u8>,
    deadline: Instant,
    chunk: &mut [u8],
) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        match httparse::parse_chunk_size(&raw[at..]) {
            Ok(httparse::Status::Complete((n, size))) => {
                let size = usize::try_from(size).map_err(|_| ReadError::TooLarge)?;
                if body.len().saturating_add(size) > MAX_BODY {
                    return Err(ReadError::TooLarge);
                }
                // The chunk's data and its CRLF must be in hand before going on.
                let end = at + n + size + 2;
                while raw.len() < end {
                    fill(stream, &mut raw, deadline, chunk)?;
                }
                if size == 0 {
                    // The last chunk; trailers, if any, are not read (the response closes anyway).
                    return Ok(body);
                }
                body.extend_from_slice(&raw[at + n..at + n + size]);
                at = end;
            }
            Ok(httparse::Status::Partial) => {
                if raw.len() - at > 1024 {
                    return Err(ReadError::Malformed("a bad chunk size line".into()));
                }
                fill(stream, &mut raw, deadline, chunk)?;
            }
            Err(_) => return Err(ReadError::Malformed("a bad chunk size".into())),
        }
    }
}

fn fill(stream: &mut TcpStream, raw: &mut Vec<u8>, deadline: Instant, chunk: &mut [u8]) -> Result<(), ReadError> {
    let n = read_some(stream, chunk, deadline)?;
    if n == 0 {
        return Err(ReadError::Malformed("the chunked body ended early".into()));
    }
    raw.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// One read, given only the time left before `deadline`.
fn read_some(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<usize, ReadError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ReadError::Timeout);
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
