//! The one HTTP helper every engine adapter uses: JSON in and out over ureq, the per-attempt
//! timeout enforced on the connection (connect, send and receive), no system proxy for local
//! endpoints, and each engine's error body turned into a readable `detail`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use serde_json::Value;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::{Cause, Failure};

/// An engine's base URL, checked once when the provider is built.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The base URL requests go to.
    url: String,
    /// `url` as it may be shown: without a user name or password.
    shown: String,
    /// Plain `http://` to a host that is not this machine: what a secret must never travel over.
    plain_remote: bool,
    /// Where requests go when that is not this machine.
    remote: Option<super::hosted::Remote>,
    agent: ureq::Agent,
}

/// An HTTP answer that arrived: status, parsed JSON body (Null when not JSON), raw text, headers.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub json: Value,
    pub text: String,
    pub retry_after: Option<String>,
    /// Where a redirect points (`Location`); redirects are never followed.
    pub location: Option<String>,
}

impl Endpoint {
    /// Parses `url`; a host outside the loopback range is refused unless `allow_remote`.
    pub fn new(url: &str, allow_remote: bool) -> Result<Self, String> {
        let trimmed = url.trim().trim_end_matches('/');
        // Every message below may reach a person or the model: never with the URL's password.
        let url = &crate::text::without_userinfo(url);
        let uri: Uri = trimmed.parse().map_err(|e| format!("endpoint {url:?} is not a URL: {e}"))?;
        let scheme = uri.scheme_str().unwrap_or("");
        if scheme != "http" && scheme != "https" {
            return Err(format!("endpoint {url:?} must start with http:// or https://"));
        }
        let host = uri.host().ok_or_else(|| format!("endpoint {url:?} has no host"))?;
        let loopback = is_loopback(host);
        if !loopback && !allow_remote {
            return Err(format!(
                "endpoint {url:?} is not on this machine; set allow_remote = true to use a remote engine"
            ));
        }
        // The system's certificates for HTTPS, and the proxy the environment names for this URL
        // (never one for an engine on this machine, which a system proxy must not see or break).
        let proxy =
            super::net::proxy_for(trimmed, &|v| std::env::var(v).ok()).map_err(|e| format!("endpoint {url:?}: {e}"))?;
        let mut config = ureq::Agent::config_builder()
            .tls_config(super::net::tls_for(trimmed))
            .proxy(proxy)
            .http_status_as_error(false)
            .max_redirects(0);
        if loopback {
            // Its answers are a few KB: buffers of 16 KB instead of ureq's 128 KB come from the
            // heap, not from an mmap whose pages are zeroed (and faulted in) on every hook.
            // Headers past half the buffer are refused as such; filling the whole buffer would
            // read as a connection that broke off.
            config = config
                .input_buffer_size(LOOPBACK_BUFFER)
                .output_buffer_size(LOOPBACK_BUFFER)
                .max_response_header_size(LOOPBACK_BUFFER / 2);
        }
        let agent = ureq::Agent::with_parts(config.build(), DefaultConnector::new(), LoopbackResolver);
        let plain_remote = scheme == "http" && !loopback;
        let remote = (!loopback).then(|| super::hosted::Remote::at(host));
        Ok(Self {
            url: trimmed.to_string(),
            shown: crate::text::without_userinfo(trimmed),
            plain_remote,
            remote,
            agent,
        })
    }

    /// The `endpoint` and `allow_remote` settings of an engine, read and checked in one place; a
    /// problem is recorded as a config error naming the key, and gives `None`.
    pub fn from_settings(s: &crate::config::Settings, default_url: &str) -> Option<Self> {
        let url = s.string("endpoint", default_url);
        let allow_remote = s.bool("allow_remote", false);
        match Endpoint::new(&url, allow_remote) {
            Ok(e) => Some(e),
            Err(e) => {
                s.error(format!("{}.endpoint: {e}", s.section()));
                None
            }
        }
    }

    /// Whether requests go unencrypted to another machine (`http://` to a host that is not
    /// loopback), where a key would be readable on the way.
    pub fn is_plain_remote(&self) -> bool {
        self.plain_remote
    }

    /// Where requests go, when not to this machine (a host outside the loopback range).
    pub fn remote(&self) -> Option<&super::hosted::Remote> {
        self.remote.as_ref()
    }

    /// The base URL as it may be shown (in health details and messages): without user info.
    pub fn base(&self) -> &str {
        &self.shown
    }

    pub fn get(&self, path: &str, timeout: Duration, bearer: Option<&str>) -> Result<Reply, Failure> {
        self.get_keyed(path, timeout, bearer.map(|k| (KeyHeader::Bearer, k)))
    }

    pub fn post(&self, path: &str, body: &Value, timeout: Duration, bearer: Option<&str>) -> Result<Reply, Failure> {
        self.post_capped(path, body, timeout, bearer.map(|k| (KeyHeader::Bearer, k)), MAX_REPLY_BYTES)
    }

    /// `get` with the key in the header its API names.
    pub fn get_keyed(&self, path: &str, timeout: Duration, key: Option<(KeyHeader, &str)>) -> Result<Reply, Failure> {
        let mut req = self.agent.get(format!("{}{path}", self.url)).config().timeout_global(Some(timeout)).build();
        if let Some((header, key)) = key {
            req = req.header(header.name(), header.value(key));
        }
        read_reply(req.call(), timeout, MAX_REPLY_BYTES)
    }

    /// [`Endpoint::post`], reading at most `max_bytes` of the reply's body: an adapter that knows
    /// how large an answer to its request can be caps the reply there, so a server cannot make one
    /// decision cost hundreds of MB with answers nobody asked for.
    pub fn post_capped(
        &self,
        path: &str,
        body: &Value,
        timeout: Duration,
        key: Option<(KeyHeader, &str)>,
        max_bytes: u64,
    ) -> Result<Reply, Failure> {
        let bytes =
            serde_json::to_vec(body).map_err(|e| Failure::new(Cause::Other, format!("cannot encode request: {e}")))?;
        let mut req = self
            .agent
            .post(format!("{}{path}", self.url))
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header("Content-Type", "application/json");
        if let Some((header, key)) = key {
            req = req.header(header.name(), header.value(key));
        }
        read_reply(req.send(&bytes[..]), timeout, max_bytes)
    }
}

/// Where an API takes its key: `Authorization: Bearer KEY`, as most do, or a header of its own
/// (Gemini's `x-goog-api-key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    Bearer,
    Named(&'static str),
}

impl KeyHeader {
    fn name(self) -> &'static str {
        match self {
            KeyHeader::Bearer => "Authorization",
            KeyHeader::Named(n) => n,
        }
    }

    fn value(self, key: &str) -> String {
        match self {
            KeyHeader::Bearer => format!("Bearer {key}"),
            KeyHeader::Named(_) => key.to_string(),
        }
    }
}

fn read_reply(
    result: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    timeout: Duration,
    max_bytes: u64,
) -> Result<Reply, Failure> {
    let mut resp = result.map_err(|e| transport_failure(e, timeout))?;
    let status = resp.status().as_u16();
    let header = |name: &str| resp.headers().get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let retry_after = header("retry-after");
    let location = header("location");
    // Nothing asks for a compressed reply (no Accept-Encoding is sent), and nothing here decodes one.
    if let Some(coding) = header("content-encoding").filter(|c| !c.trim().eq_ignore_ascii_case("identity")) {
        return Err(Failure::malformed(format!(
            "HTTP {status}: the reply is encoded as {:?}, which is not decoded here (none was asked for)",
            crate::text::printable(coding.trim(), 40)
        )));
    }
    let bytes = resp
        .body_mut()
        .with_config()
        .limit(max_bytes)
        .read_to_vec()
        .map_err(|e| transport_failure(e, timeout).reading_body(status))?;
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        // An error status keeps its status, whatever its body: the status says what went wrong.
        Err(e) if !(200..300).contains(&status) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        Err(e) => {
            return Err(Failure::malformed(format!(
                "HTTP {status}: the reply's body is not UTF-8 text (byte {} of {} is not)",
                e.utf8_error().valid_up_to() + 1,
                e.as_bytes().len()
            )));
        }
    };
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok(Reply { status, json, text, retry_after, location })
}

/// The largest reply body read from an engine, unless its adapter caps it lower.
pub const MAX_REPLY_BYTES: u64 = 16 * 1024 * 1024;

trait ReadingBody {
    /// The failure as it is while the body of a `status` reply is read: the engine answered, so
    /// anything but a timeout or a lost connection is its reply's fault.
    fn reading_body(self, status: u16) -> Failure;
}

impl ReadingBody for Failure {
    fn reading_body(self, status: u16) -> Failure {
        match self.cause {
            Cause::Timeout => self,
            Cause::Unreachable | Cause::Refused => Failure::new(
                Cause::Unreachable,
                format!("HTTP {status}: the connection broke during the reply ({})", self.detail),
            ),
            _ => Failure::malformed(format!("HTTP {status}: the reply could not be read ({})", self.detail)),
        }
    }
}

fn transport_failure(e: ureq::Error, timeout: Duration) -> Failure {
    match e {
        ureq::Error::Timeout(_) => Failure::timeout(timeout),
        ureq::Error::Io(io)
            if io.kind() == std::io::ErrorKind::TimedOut || io.kind() == std::io::ErrorKind::WouldBlock =>
        {
            Failure::timeout(timeout)
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            Failure::new(Cause::Refused, "connection refused: is the engine running?")
        }
        // A certificate the trust store does not vouch for comes wrapped in an I/O error: named as such.
        ref tls if super::net::certificate_problem(tls).is_some() => {
            Failure::new(Cause::Unreachable, super::net::describe(tls))
        }
        ureq::Error::Io(io) => Failure::new(Cause::Unreachable, format!("connection failed: {io}")),
        ureq::Error::HostNotFound => Failure::new(Cause::Unreachable, "host not found"),
        // Something answered, but not with an HTTP reply this reads: not "nothing answers".
        ureq::Error::LargeResponseHeader(got, max) => {
            Failure::malformed(format!("the reply's headers are over {max} bytes ({got} read); not an engine's reply"))
        }
        ureq::Error::BodyExceedsLimit(max) => Failure::malformed(format!(
            "the reply's body is over {max} bytes, more than any answer to this request needs; not read"
        )),
        ureq::Error::Protocol(p) => Failure::malformed(format!("not an HTTP reply: {p}")),
        other => Failure::new(Cause::Other, format!("HTTP failure: {other}")),
    }
}

/// The failure for an HTTP reply that is not a success: `prefix` (`laya: `, `von at URL: `), then
/// `HTTP status: explanation`. Its cause is the status, except for the two every engine means the
/// same by: 401 and 403 (a key). What an engine means by a status beyond that (a model it does not
/// have, say) is its adapter's to read, from what that engine sends.
pub fn status_failure(prefix: &str, reply: &Reply) -> Failure {
    let cause = match reply.status {
        401 | 403 => Cause::Unauthorised,
        status => Cause::HttpStatus(status),
    };
    Failure::new(cause, format!("{prefix}{}", error_detail(reply)))
}

/// The most of an engine's error body quoted in an error: an explanation is a sentence or two.
const MAX_QUOTED_CHARS: usize = 300;

/// The engine's own explanation from an error body, in any of the shapes engines use:
/// `{"detail": "…"}` (laya, von), FastAPI's `{"detail": [{"loc", "msg"}]}` (von validation),
/// `{"error": {"message", "field"}}` (laya-serve 0.2.1), `{"error": "…"}` (Ollama), and the System
/// One API's `{"detail": {"error_type", "message"}}`.
pub fn error_detail(reply: &Reply) -> String {
    let j = &reply.json;
    let text = match (j.get("detail"), j.get("error")) {
        (Some(Value::String(s)), _) => s.clone(),
        (Some(Value::Array(items)), _) => items
            .iter()
            .map(|i| {
                let msg = i.get("msg").and_then(Value::as_str).unwrap_or("invalid");
                let loc: Vec<String> = i
                    .get("loc")
                    .and_then(Value::as_array)
                    .map(|l| l.iter().map(|p| p.as_str().map(String::from).unwrap_or_else(|| p.to_string())).collect())
                    .unwrap_or_default();
                if loc.is_empty() { msg.to_string() } else { format!("{}: {msg}", loc.join(".")) }
            })
            .collect::<Vec<_>>()
            .join("; "),
        // The System One API's other errors: `{"detail": {"error_type", "message"}}`.
        (Some(Value::Object(o)), _) => {
            let msg = o.get("message").and_then(Value::as_str).unwrap_or("error");
            match o.get("error_type").and_then(Value::as_str) {
                Some(t) => format!("{msg} ({t})"),
                None => msg.to_string(),
            }
        }
        (_, Some(Value::String(s))) => s.clone(),
        (_, Some(Value::Object(o))) => {
            let msg = o.get("message").and_then(Value::as_str).unwrap_or("error");
            match o.get("field").and_then(Value::as_str) {
                Some(f) => format!("{msg} ({f})"),
                None => msg.to_string(),
            }
        }
        _ => reply.text.chars().take(MAX_QUOTED_CHARS + 1).collect::<String>(),
    };
    // The body is the engine's (or whatever answers on its port): it reaches a terminal and a
    // model's context, so it is quoted escaped and short.
    let mut detail = format!("HTTP {}: {}", reply.status, crate::text::printable(text.trim(), MAX_QUOTED_CHARS));
    if (300..400).contains(&reply.status) {
        let to = match &reply.location {
            Some(l) => format!("to {}", crate::text::printable(&crate::text::without_userinfo(l.trim()), 200)),
            None => "without a Location".to_string(),
        };
        detail = format!(
            "HTTP {}: a redirect {to}, not followed (an engine is called only at its endpoint; point the endpoint where \
             the engine is)",
            reply.status
        );
    }
    if let Some(ra) = &reply.retry_after {
        detail.push_str(&format!(" (retry after {} s)", crate::text::printable(ra, 20)));
    }
    detail
}

/// Whether a URL host names this machine.
pub fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    is_localhost_name(h) || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `localhost` and any name under `.localhost`, which are this machine's by definition (RFC 6761).
fn is_localhost_name(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "localhost" || h.ends_with(".localhost")
}

/// ureq's input and output buffers for an engine on this machine.
const LOOPBACK_BUFFER: usize = 16 * 1024;

/// Resolves what needs no resolving without the system resolver: an IP literal is its own
/// address, and a `localhost` name is 127.0.0.1 then ::1. So a call to an engine on this machine never goes
/// through getaddrinfo: no NSS module to load (which a static glibc binary cannot do safely, and
/// where `localhost` may not even be listed), and no thread that ureq spawns to bound a lookup's
/// time. Any other name goes to ureq's own resolver.
#[derive(Debug)]
struct LoopbackResolver;

impl Resolver for LoopbackResolver {
    fn resolve(&self, uri: &Uri, config: &Config, timeout: NextTimeout) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let port = uri.port_u16().or_else(|| match uri.scheme_str() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        });
        let (Some(host), Some(port)) = (uri.host(), port) else {
            return DefaultResolver::default().resolve(uri, config, timeout);
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let ips = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) if is_localhost_name(host) => vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)],
            Err(_) => return DefaultResolver::default().resolve(uri, config, timeout),
        };
        let mut out = self.empty();
        for addr in config.ip_family().keep_wanted(ips.into_iter().map(|ip| SocketAddr::new(ip, port))) {
            out.push(addr);
        }
        if out.is_empty() { Err(ureq::Error::HostNotFound) } else { Ok(out) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::fake_http::{FakeServer, Reply as FakeReply, free_port};
    use std::time::Instant;

    /// Accepts, then holds the connection open without a byte of answer.
    fn never_answers() -> FakeServer {
        FakeServer::start(|_| FakeReply::hang())
    }

    /// Answers with headers and the start of a body, then stalls.
    fn stalls_mid_body() -> FakeServer {
        FakeServer::start(|_| FakeReply::json(200, &serde_json::json!({"a": 1})).stall_after(4))
    }

    fn answers_ok() -> FakeServer {
        FakeServer::start(|_| FakeReply::json(200, &serde_json::json!({"ok": true})))
    }

    fn assert_cut_off(result: Result<Reply, Failure>, started: Instant, timeout: Duration) {
        let took = started.elapsed();
        assert!(matches!(&result, Err(f) if f.cause == Cause::Timeout), "{result:?}");
        assert!(took >= timeout.mul_f64(0.9), "gave up early: {took:?}");
        // Generous: the point is that it returns at the timeout, not after the fake's 60 s hang.
        assert!(took < Duration::from_secs(10), "took {took:?} for a timeout of {timeout:?}");
    }

    #[test]
    fn a_server_that_accepts_and_never_answers_is_cut_off_at_the_timeout() {
        let server = never_answers();
        let endpoint = Endpoint::new(&server.url(), false).expect("endpoint");
        let timeout = Duration::from_millis(300);
        let started = Instant::now();
        assert_cut_off(endpoint.post("/v1/decide", &serde_json::json!({"q": 1}), timeout, None), started, timeout);
        let started = Instant::now();
        assert_cut_off(endpoint.get("/health", timeout, Some("key")), started, timeout);
    }

    #[test]
    fn a_body_that_stalls_halfway_is_cut_off_at_the_timeout() {
        let server = stalls_mid_body();
        let endpoint = Endpoint::new(&server.url(), false).expect("endpoint");
        let timeout = Duration::from_millis(300);
        let started = Instant::now();
        assert_cut_off(endpoint.post("/v1/decide", &serde_json::json!({}), timeout, None), started, timeout);
    }

    #[test]
    fn a_refused_connection_is_an_error_at_once() {
        let endpoint = Endpoint::new(&format!("http://127.0.0.1:{}", free_port()), false).expect("endpoint");
        let started = Instant::now();
        let r = endpoint.get("/health", Duration::from_secs(60), None);
        assert!(matches!(&r, Err(f) if f.cause == Cause::Refused && f.detail.contains("refused")), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "not held to the 60 s timeout");
    }

    /// Run by [`a_dead_proxy_in_the_environment_is_ignored_for_loopback`] in a child process
    /// whose environment names a proxy that refuses every connection.
    #[test]
    #[ignore = "run with a dead proxy in the environment by its parent test"]
    fn loopback_call_with_a_dead_proxy() {
        assert!(std::env::var("HTTP_PROXY").is_ok_and(|p| p.contains("127.0.0.1:9")), "run by the parent test");
        let server = answers_ok();
        let endpoint = Endpoint::new(&server.url(), false).expect("endpoint");
        let reply = endpoint.get("/health", Duration::from_secs(5), None).expect("reached without the proxy");
        assert_eq!((reply.status, reply.json.clone()), (200, serde_json::json!({"ok": true})));
        let localhost = endpoint.base().replace("127.0.0.1", "localhost");
        let reply = Endpoint::new(&localhost, false).expect("endpoint").get("/health", Duration::from_secs(5), None);
        assert_eq!(reply.map(|r| r.status), Ok(200));
    }

    #[test]
    fn a_dead_proxy_in_the_environment_is_ignored_for_loopback() {
        let exe = std::env::current_exe().expect("test binary");
        let mut cmd = std::process::Command::new(exe);
        cmd.args([
            "--exact",
            "providers::http::tests::loopback_call_with_a_dead_proxy",
            "--ignored",
            "--test-threads=1",
        ]);
        for var in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
            cmd.env(var, "http://127.0.0.1:9");
        }
        cmd.env_remove("NO_PROXY").env_remove("no_proxy");
        let out = cmd.output().expect("run the child test");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("1 passed"), "{text}{}", String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn loopback_hosts() {
        for h in ["127.0.0.1", "127.8.9.10", "localhost", "[::1]", "::1"] {
            assert!(is_loopback(h), "{h}");
        }
        for h in ["10.0.0.1", "example.com", "192.168.1.2", "[2001:db8::1]"] {
            assert!(!is_loopback(h), "{h}");
        }
    }

    #[test]
    fn loopback_names_resolve_without_the_system_resolver() {
        let resolve = |url: &str| {
            let uri: Uri = url.parse().unwrap();
            let config = ureq::Agent::config_builder().build();
            LoopbackResolver
                .resolve(&uri, &config, NextTimeout::default())
                .map(|a| a.iter().map(|a| a.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(resolve("http://127.0.0.1:8765/x").unwrap(), ["127.0.0.1:8765"]);
        assert_eq!(resolve("http://[::1]:8765").unwrap(), ["[::1]:8765"]);
        assert_eq!(resolve("http://10.1.2.3").unwrap(), ["10.1.2.3:80"]);
        for name in ["localhost", "LocalHost", "engine.localhost", "localhost."] {
            assert_eq!(resolve(&format!("http://{name}:11434")).unwrap(), ["127.0.0.1:11434", "[::1]:11434"], "{name}");
        }
        assert_eq!(resolve("https://localhost").unwrap(), ["127.0.0.1:443", "[::1]:443"]);
        // An IPv4-only agent keeps only 127.0.0.1.
        let uri: Uri = "http://localhost:1".parse().unwrap();
        let v4 = ureq::Agent::config_builder().ip_family(ureq::config::IpFamily::Ipv4Only).build();
        let addrs = LoopbackResolver.resolve(&uri, &v4, NextTimeout::default()).unwrap();
        assert_eq!(addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>(), ["127.0.0.1:1"]);
    }

    #[test]
    fn an_engine_named_localhost_is_reached() {
        let server = answers_ok();
        let named = server.url().replace("127.0.0.1", "localhost");
        let reply = Endpoint::new(&named, false).expect("endpoint").get("/health", Duration::from_secs(5), None);
        assert_eq!(reply.map(|r| (r.status, r.json)), Ok((200, serde_json::json!({"ok": true}))));
    }

    #[test]
    fn remote_endpoint_needs_allow_remote() {
        assert!(Endpoint::new("http://127.0.0.1:8765", false).is_ok());
        let e = Endpoint::new("http://10.1.2.3:8765", false).unwrap_err();
        assert!(e.contains("allow_remote"), "{e}");
        assert!(Endpoint::new("http://10.1.2.3:8765", true).is_ok());
        assert!(Endpoint::new("ftp://127.0.0.1", false).is_err());
        assert!(Endpoint::new("not a url", false).is_err());
    }

    fn reply(status: u16, body: &str) -> Reply {
        Reply {
            status,
            json: serde_json::from_str(body).unwrap_or(Value::Null),
            text: body.into(),
            retry_after: None,
            location: None,
        }
    }

    #[test]
    fn every_error_body_shape_reads_well() {
        assert_eq!(error_detail(&reply(400, r#"{"detail":"'state' is required"}"#)), "HTTP 400: 'state' is required");
        assert_eq!(
            error_detail(&reply(
                422,
                r#"{"detail":[{"type":"missing","loc":["body","state"],"msg":"Field required"}]}"#
            )),
            "HTTP 422: body.state: Field required"
        );
        assert_eq!(
            error_detail(&reply(422, r#"{"error":{"message":"Field required","field":"body.model"}}"#)),
            "HTTP 422: Field required (body.model)"
        );
        assert_eq!(
            error_detail(&reply(404, r#"{"error":"model \"x\" not found"}"#)),
            "HTTP 404: model \"x\" not found"
        );
        let mut busy = reply(503, r#"{"detail":"server busy, try again later"}"#);
        busy.retry_after = Some("1".into());
        assert_eq!(error_detail(&busy), "HTTP 503: server busy, try again later (retry after 1 s)");
        assert_eq!(error_detail(&reply(502, "Bad Gateway")), "HTTP 502: Bad Gateway");
        assert_eq!(
            error_detail(&reply(400, r#"{"detail":{"error_type":"api_usage_error","message":"Unknown model: x"}}"#)),
            "HTTP 400: Unknown model: x (api_usage_error)"
        );
    }
}
