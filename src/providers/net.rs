//! What every request to another machine goes through, written once for the engines' HTTP helper
//! and the model's download: the certificates it trusts, the proxy the environment names, and a
//! failure that says which of the two to fix.
//!
//! Trust is the system's store, read as OpenSSL, curl, pip and git read it: `SSL_CERT_FILE` and
//! `SSL_CERT_DIR` when set, else the platform's own (on Linux, the bundle and folder under
//! `/etc/ssl` or its distribution's equivalent). A network that inspects HTTPS puts its CA there,
//! and then every tool on the machine, this one included, trusts it. Only where that store holds no
//! certificate at all (a bare container) do Mozilla's roots, bundled in the binary, stand in.
//!
//! The proxy is chosen per request, by its URL, from the variables curl reads: `https_proxy` /
//! `HTTPS_PROXY` for `https://`, `http_proxy` / `HTTP_PROXY` for `http://`, else `all_proxy` /
//! `ALL_PROXY`; `no_proxy` / `NO_PROXY` names hosts to reach directly. This machine (loopback
//! addresses and `localhost` names) is never reached through a proxy, whatever the variables say.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use ureq::http::Uri;
use ureq::tls::{Certificate, RootCerts, TlsConfig};

/// The certificates HTTPS requests trust, read once per process (only when a request needs them:
/// a hook that asks an engine on this machine over plain HTTP never reads them).
struct Trust {
    roots: RootCerts,
    /// Where they came from, for a certificate failure's message.
    source: String,
}

fn trust() -> &'static Trust {
    static TRUST: OnceLock<Trust> = OnceLock::new();
    TRUST.get_or_init(|| {
        let loaded = rustls_native_certs::load_native_certs();
        let certs: Vec<Certificate<'static>> =
            loaded.certs.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect();
        let named =
            |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(|v| v.to_string_lossy().into_owned());
        let place = match (named("SSL_CERT_FILE"), named("SSL_CERT_DIR")) {
            (Some(f), Some(d)) => format!("SSL_CERT_FILE={f} and SSL_CERT_DIR={d}"),
            (Some(f), None) => format!("SSL_CERT_FILE={f}"),
            (None, Some(d)) => format!("SSL_CERT_DIR={d}"),
            (None, None) => "the system's trust store".to_string(),
        };
        if certs.is_empty() {
            let why = loaded.errors.first().map(|e| format!(": {e}")).unwrap_or_default();
            return Trust {
                roots: RootCerts::WebPki,
                source: format!("Mozilla's roots built into system1 ({place} gave no certificate{why})"),
            };
        }
        let source = format!("{} certificates from {place}", certs.len());
        Trust { roots: RootCerts::Specific(Arc::new(certs)), source }
    })
}

/// The TLS settings of an agent whose requests may leave this machine (give it no proxy of its
/// own, `.proxy(None)`: each request takes [`proxy_for`] its URL, through [`get`] or its own
/// config): the system's certificates. For plain HTTP to this machine (an engine a hook asks) the
/// store is not read, and ureq's default stands, unused.
pub fn tls_for(url: &str) -> TlsConfig {
    let https = url.trim_start().get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"));
    if !https && is_local_url(url) {
        return TlsConfig::default();
    }
    tls()
}

/// The TLS settings that trust the system's certificates, for an agent whose requests may be
/// redirected anywhere (the model's download).
pub fn tls() -> TlsConfig {
    TlsConfig::builder().root_certs(trust().roots.clone()).build()
}

fn is_local_url(url: &str) -> bool {
    url.parse::<Uri>().ok().and_then(|u| u.host().map(super::http::is_loopback)).unwrap_or(false)
}

/// `GET url` with `agent` (built with [`tls_for`] and no proxy of its own) through the proxy the environment names
/// for it.
pub fn get(agent: &ureq::Agent, url: &str) -> Result<ureq::http::Response<ureq::Body>, String> {
    let proxy = proxy_for(url, &|v| std::env::var(v).ok())?;
    agent.get(url).config().proxy(proxy).build().call().map_err(|e| describe(&e))
}

/// The proxy a request to `url` goes through, from the environment (read through `env`), or
/// `None` to go directly. A variable that is set but is not a proxy URL is an error naming it.
pub fn proxy_for(url: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<ureq::Proxy>, String> {
    let Ok(uri) = url.parse::<Uri>() else { return Ok(None) };
    let Some(host) = uri.host() else { return Ok(None) };
    if super::http::is_loopback(host) {
        return Ok(None);
    }
    let set =
        |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).map(|v| (name.to_string(), v));
    let either = |lower: &str| set(lower).or_else(|| set(&lower.to_ascii_uppercase()));
    if either("no_proxy").is_some_and(|(_, list)| bypassed(host, &list)) {
        return Ok(None);
    }
    let scheme = uri.scheme_str().unwrap_or("http").to_ascii_lowercase();
    let chosen = if scheme == "https" { either("https_proxy") } else { either("http_proxy") };
    let Some((name, value)) = chosen.or_else(|| either("all_proxy")) else { return Ok(None) };
    let with_scheme = if value.contains("://") { value.clone() } else { format!("http://{value}") };
    ureq::Proxy::new(&with_scheme).map(Some).map_err(|e| {
        format!(
            "{name}={} is not a proxy this program can use ({e}); give it as http://host:port",
            crate::text::without_userinfo(&value)
        )
    })
}

/// Whether `host` is on the `no_proxy` list: comma- or space-separated names (each matching itself
/// and every name under it; a leading `.` or `*.` is the same), IP addresses, CIDR ranges
/// (`10.0.0.0/8`), or `*` for every host. A `:port` after a name is ignored.
fn bypassed(host: &str, list: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase();
    let ip = host.parse::<IpAddr>().ok();
    list.split([',', ' ', '\t']).map(str::trim).filter(|e| !e.is_empty()).any(|entry| {
        if entry == "*" {
            return true;
        }
        if let Some((net, bits)) = entry.split_once('/') {
            return match (ip, net.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>(), bits.parse::<u32>())
            {
                (Some(ip), Ok(net), Ok(bits)) => in_range(ip, net, bits),
                _ => false,
            };
        }
        let entry = entry.trim_start_matches('[');
        let entry = match entry.split_once(']') {
            Some((inner, _port)) => inner,
            // An IPv6 address is all colons: only a name or an IPv4 address has a port to strip.
            None if entry.parse::<IpAddr>().is_ok() => entry,
            None => entry.rsplit_once(':').map_or(entry, |(name, _port)| name),
        };
        let entry = entry.trim_start_matches('*').trim_start_matches('.').trim_end_matches('.').to_ascii_lowercase();
        match (ip, entry.parse::<IpAddr>()) {
            (Some(ip), Ok(e)) => ip == e,
            (Some(_), Err(_)) | (None, Ok(_)) => false,
            (None, Err(_)) => !entry.is_empty() && (host == entry || host.ends_with(&format!(".{entry}"))),
        }
    })
}

fn in_range(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// A failed request, in words: a certificate the trust store does not vouch for is named as such,
/// with the variable that fixes it; anything else is ureq's own message.
pub fn describe(e: &ureq::Error) -> String {
    match certificate_problem(e) {
        Some(problem) => certificate_message(&problem),
        None => e.to_string(),
    }
}

/// What the TLS layer said about the server's certificate, when that is why the request failed.
pub fn certificate_problem(e: &ureq::Error) -> Option<rustls::CertificateError> {
    let rustls_error = match e {
        ureq::Error::Rustls(r) => Some(r),
        ureq::Error::Io(io) => io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    match rustls_error? {
        rustls::Error::InvalidCertificate(c) => Some(c.clone()),
        _ => None,
    }
}

/// The message for a certificate the server showed that is not trusted here.
pub fn certificate_message(problem: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    let fix = match problem {
        C::UnknownIssuer | C::BadSignature | C::UnhandledCriticalExtension | C::InvalidPurpose => {
            "; if your network inspects HTTPS (a company proxy, say), set SSL_CERT_FILE to a PEM file holding its CA \
             certificate, or SSL_CERT_DIR to a folder of them, as for curl or pip"
        }
        C::NotValidForName | C::NotValidForNameContext { .. } => "; the server is not the one its address names",
        C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. } => {
            "; check this machine's clock, or the server's certificate"
        }
        _ => "",
    };
    format!("the server's TLS certificate is not trusted ({problem:?}), checked against {}{fix}", trust().source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k: &str| map.get(k).cloned()
    }

    fn proxied(url: &str, pairs: &[(&str, &str)]) -> Option<String> {
        proxy_for(url, &env_of(pairs)).expect("a usable proxy").map(|p| format!("{}:{}", p.host(), p.port()))
    }

    #[test]
    fn each_scheme_takes_its_own_variable_then_all_proxy() {
        let env = [("HTTPS_PROXY", "http://secure:3128"), ("http_proxy", "plain:8080"), ("ALL_PROXY", "http://all:1")];
        assert_eq!(proxied("https://pypi.org/x", &env).as_deref(), Some("secure:3128"));
        assert_eq!(proxied("http://mirror.example/x", &env).as_deref(), Some("plain:8080"));
        assert_eq!(proxied("https://pypi.org/x", &[("all_proxy", "http://all:1")]).as_deref(), Some("all:1"));
        // The lower-case name wins over the upper-case one, as in curl.
        let both = [("https_proxy", "http://lower:1"), ("HTTPS_PROXY", "http://upper:2")];
        assert_eq!(proxied("https://pypi.org", &both).as_deref(), Some("lower:1"));
        assert_eq!(proxied("https://pypi.org", &[("HTTPS_PROXY", "  ")]), None, "blank is unset");
        assert_eq!(proxied("https://pypi.org", &[]), None);
    }

    #[test]
    fn this_machine_is_never_proxied() {
        let env = [("HTTPS_PROXY", "http://p:1"), ("HTTP_PROXY", "http://p:1"), ("ALL_PROXY", "http://p:1")];
        for url in [
            "http://127.0.0.1:8765",
            "https://localhost:1/x",
            "http://[::1]:2",
            "http://127.9.9.9",
            "http://a.localhost",
        ] {
            assert_eq!(proxied(url, &env), None, "{url}");
        }
        assert!(proxied("http://10.0.0.1", &env).is_some());
    }

    #[test]
    fn no_proxy_lists_read_as_curl_reads_them() {
        let via = |url: &str, list: &str| proxied(url, &[("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", list)]).is_some();
        assert!(!via("https://pypi.org", "pypi.org"));
        assert!(!via("https://files.pypi.org", "pypi.org"));
        assert!(!via("https://files.pypi.org", ".pypi.org"));
        assert!(!via("https://files.pypi.org", "*.pypi.org"));
        assert!(!via("https://pypi.org", "example.com, pypi.org"), "spaces after commas");
        assert!(!via("https://pypi.org", "pypi.org:443"));
        assert!(!via("https://anything.example", "*"));
        assert!(!via("https://10.1.2.3", "10.0.0.0/8"));
        assert!(!via("https://[2001:db8::5]", "2001:db8::/32"));
        assert!(!via("https://192.168.0.9", "192.168.0.9"));
        assert!(via("https://notpypi.org", "pypi.org"), "a suffix that is not a whole label");
        assert!(via("https://11.1.2.3", "10.0.0.0/8"));
        assert!(via("https://pypi.org", "example.com"));
        assert!(via("https://pypi.org", ""));
        // The lower-case list wins, as for the proxies.
        let env = [("HTTPS_PROXY", "http://p:1"), ("no_proxy", "example.com"), ("NO_PROXY", "pypi.org")];
        assert!(proxied("https://pypi.org", &env).is_some());
    }

    #[test]
    fn a_proxy_that_is_not_a_url_is_an_error_naming_the_variable() {
        let e = proxy_for("https://pypi.org", &env_of(&[("HTTPS_PROXY", "ftp://user:secret@p:1")])).unwrap_err();
        assert!(e.starts_with("HTTPS_PROXY=ftp://") && e.contains("@p:1 is not a proxy"), "{e}");
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn an_unknown_issuer_names_the_variables_that_fix_it() {
        let m = certificate_message(&rustls::CertificateError::UnknownIssuer);
        assert!(
            m.contains("not trusted (UnknownIssuer)") && m.contains("SSL_CERT_FILE") && m.contains("SSL_CERT_DIR"),
            "{m}"
        );
        let m = certificate_message(&rustls::CertificateError::NotValidForName);
        assert!(m.contains("not the one its address names") && !m.contains("set SSL_CERT_FILE"), "{m}");
    }
}
