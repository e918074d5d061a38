//! HTTPS stand-ins on loopback: a certificate authority made for the test (its certificate written
//! to a PEM file, as a company's inspecting proxy hands its CA to its users), a TLS front that
//! answers HTTPS with a server certificate that CA signed and passes each request on to a plain
//! [`FakeServer`], and an HTTP `CONNECT` proxy that tunnels to that front whatever host it is asked
//! for, recording what it was asked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

/// A CA and a server certificate it signed, for `localhost`, 127.0.0.1 and the names given.
pub struct Authority {
    /// The CA's certificate, PEM.
    pub ca_pem: String,
    server: Arc<rustls::ServerConfig>,
}

impl Authority {
    pub fn new(names: &[&str]) -> Authority {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "system1 test inspecting proxy CA");
        let ca = CertifiedIssuer::self_signed(params, ca_key).expect("CA certificate");
        let mut sans = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        sans.extend(names.iter().map(|n| n.to_string()));
        let key = KeyPair::generate().expect("server key");
        let cert = CertificateParams::new(sans).expect("server params").signed_by(&key, &ca).expect("server cert");
        let chain = vec![cert.der().clone()];
        let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(chain, key_der)
            .expect("server config");
        Authority { ca_pem: ca.pem(), server: Arc::new(server) }
    }

    /// Writes the CA's certificate into `dir`, as the file SSL_CERT_FILE names.
    pub fn write_ca(&self, dir: &Path) -> PathBuf {
        let path = dir.join("inspecting-proxy-ca.pem");
        std::fs::write(&path, &self.ca_pem).expect("write the CA file");
        path
    }

    /// Serves HTTPS on a free loopback port, passing each request on to `backend` (host:port).
    pub fn front(&self, backend: String) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let config = self.server.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (config, backend) = (config.clone(), backend.clone());
                std::thread::spawn(move || {
                    let _ = front_one(conn, config, &backend);
                });
            }
        });
        port
    }
}

/// One HTTPS connection: its first request (and its body, by its `Content-Length`) passed on to
/// `backend` with `Connection: close`, the whole answer sent back, then the connection closed.
fn front_one(conn: TcpStream, config: Arc<rustls::ServerConfig>, backend: &str) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let tls = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut stream = rustls::StreamOwned::new(tls, conn);
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let (request_line, headers) = text.split_once("\r\n").unwrap_or((&text, ""));
    let length = headers
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body)?;
    let mut upstream = TcpStream::connect(backend)?;
    write!(upstream, "{request_line}\r\nconnection: close\r\n{headers}")?;
    upstream.write_all(&body)?;
    let mut answer = Vec::new();
    upstream.read_to_end(&mut answer)?;
    stream.write_all(&answer)?;
    stream.conn.send_close_notify();
    stream.flush()?;
    Ok(())
}

/// An HTTP proxy that answers `CONNECT` only, tunnelling every one to 127.0.0.1:`to`.
pub struct ConnectProxy {
    pub port: u16,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ConnectProxy {
    pub fn start(to: u16) -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let record = asked.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let record = record.clone();
                std::thread::spawn(move || {
                    let _ = tunnel(conn, to, &record);
                });
            }
        });
        ConnectProxy { port, asked }
    }

    /// The request line of every request the proxy received (`CONNECT pypi.example:443 HTTP/1.1`).
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().expect("lock").clone()
    }
}

fn tunnel(conn: TcpStream, to: u16, record: &Mutex<Vec<String>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    record.lock().expect("lock").push(line.trim_end().to_string());
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" {
            break;
        }
    }
    let mut client = conn;
    if !line.starts_with("CONNECT ") {
        client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")?;
        return Ok(());
    }
    let upstream = TcpStream::connect(("127.0.0.1", to))?;
    client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    let (mut up_read, mut client_write) = (upstream.try_clone()?, client.try_clone()?);
    let back = std::thread::spawn(move || std::io::copy(&mut up_read, &mut client_write));
    // Whatever the reader buffered past the headers goes first.
    let mut up_write = upstream;
    up_write.write_all(reader.buffer())?;
    let mut rest = reader.into_inner();
    let _ = std::io::copy(&mut rest, &mut up_write);
    let _ = up_write.shutdown(std::net::Shutdown::Write);
    let _ = back.join();
    Ok(())
}
