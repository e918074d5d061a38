//! `system1 serve`: the gateway as a System One server (`POST /v1/systemone`, `GET /v1/models`,
//! `GET /health`) over HTTP/1.1, for any client of that API (docs/serve.md).
//!
//! One thread accepts; a fixed pool of workers serves one request per connection each; between
//! them a queue of a fixed length. A connection that finds the queue full is answered 503 with
//! `Retry-After` at once, so load never grows the server past `workers` threads and `queue`
//! waiting sockets. Each request must arrive whole (head and body) within [`READ_DEADLINE`] of a
//! worker taking it, so a slow client holds a worker for that long at most; each decision has the
//! gateway's deadline. SIGINT and SIGTERM stop the accepting; the workers finish every request
//! already taken or queued, and the process exits 0.
//!
//! [`http`] frames requests and responses, [`api`] is the API's request and answer shapes,
//! [`routes`] answers each route.

pub mod api;
mod http;
mod routes;

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::gateway::{Gateway, millis, new_request_id};
use crate::logging;
use http::ReadError;

/// How long a client has to send its whole request once a worker takes its connection.
pub const READ_DEADLINE: Duration = Duration::from_secs(10);

pub struct Options {
    pub host: IpAddr,
    pub port: u16,
    /// The API key clients must send, when one is set.
    pub api_key: Option<String>,
    pub workers: usize,
    pub queue: usize,
}

/// Set by SIGINT and SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);

struct Job {
    stream: TcpStream,
    peer: SocketAddr,
}

struct Shared {
    gateway: Gateway,
    key: Option<[u8; 32]>,
    /// The day the server started, the `release_date` of what `/v1/models` lists.
    started: String,
    served: AtomicU64,
}

/// Binds (the caller has checked the host against the key), says where on stdout, and serves until
/// a signal. `ready` gets the bound address first.
pub fn serve(gateway: Gateway, opts: Options, ready: impl FnOnce(SocketAddr)) -> std::io::Result<()> {
    let listener = TcpListener::bind((opts.host, opts.port))?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    install_signal_handlers();
    for e in &gateway.config_errors {
        logging::warn("startup", &format!("config error: {e}"));
    }
    let shared = Arc::new(Shared {
        key: opts.api_key.as_deref().map(|k| routes::digest(k.as_bytes())),
        gateway,
        started: chrono::Utc::now().format("%Y-%m-%d").to_string(),
        served: AtomicU64::new(0),
    });
    let (tx, rx) = sync_channel::<Job>(opts.queue.max(1));
    let rx = Arc::new(Mutex::new(rx));
    let workers: Vec<_> = (0..opts.workers.max(1))
        .map(|i| {
            let (rx, shared) = (Arc::clone(&rx), Arc::clone(&shared));
            std::thread::Builder::new().name(format!("serve-{i}")).spawn(move || work(&rx, &shared))
        })
        .collect::<Result<_, _>>()?;
    logging::info(
        "startup",
        &format!("serving http://{addr} ({} workers, a queue of {})", opts.workers.max(1), opts.queue.max(1)),
    );
    ready(addr);
    accept(&listener, &tx);
    logging::info("shutdown", "a stop signal: no new connections; finishing the requests in hand");
    drop(listener);
    drop(tx);
    for w in workers {
        let _ = w.join();
    }
    let served = crate::text::count(shared.served.load(Ordering::Relaxed), "request");
    logging::info("shutdown", &format!("stopped after {served}"));
    logging::flush(Duration::from_secs(1));
    Ok(())
}

fn accept(listener: &TcpListener, tx: &SyncSender<Job>) {
    while !STOP.load(Ordering::SeqCst) {
        if !wait_readable(listener) {
            continue;
        }
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => {
                continue;
            }
            Err(e) => {
                // Out of file descriptors, say: wait a little rather than spin.
                logging::warn("accept", &format!("accept failed: {e}"));
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        // Accepted sockets inherit the listener's non-blocking mode on some platforms.
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_nodelay(true);
        match tx.try_send(Job { stream, peer }) {
            Ok(()) => {}
            Err(TrySendError::Full(job)) => busy(job),
            Err(TrySendError::Disconnected(_)) => break,
        }
    }
}

/// The answer to a connection that finds the queue full: 503 with `Retry-After`, written without
/// waiting on the client (what it has sent already is read and dropped, so it reads the answer
/// rather than a reset).
fn busy(mut job: Job) {
    let _ = job.stream.set_nonblocking(true);
    let mut sink = [0u8; 16384];
    while let Ok(n) = std::io::Read::read(&mut job.stream, &mut sink) {
        if n == 0 {
            break;
        }
    }
    let _ = job.stream.set_nonblocking(false);
    let _ = job.stream.set_write_timeout(Some(Duration::from_millis(200)));
    let resp = routes::error(503, "overloaded", "the server is busy; retry shortly").with_header("Retry-After", "1");
    let rid = new_request_id();
    http::write_response(&mut job.stream, &resp, false);
    routes::log_unread(&rid, &job.peer.to_string(), 503, "the queue is full");
}

fn work(rx: &Mutex<Receiver<Job>>, shared: &Shared) {
    loop {
        let job = match rx.lock() {
            Ok(guard) => guard.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        // A bug must not take a worker down with it: the panic is logged, the connection dropped.
        let peer = job.peer;
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| serve_one(job, shared))).is_err() {
            logging::error("serve", &format!("{peer}: internal error while handling a request (see the panic above)"));
        }
    }
}

fn serve_one(mut job: Job, shared: &Shared) {
    let started = Instant::now();
    let rid = new_request_id();
    let peer = job.peer.to_string();
    let request = match http::read_request(&mut job.stream, started + READ_DEADLINE) {
        Ok(r) => r,
        Err(ReadError::Closed) => return,
        Err(e) => {
            let (status, error_type, message, unread) = match &e {
                ReadError::Timeout => (408, "timeout", "the request did not arrive in time".to_string(), false),
                ReadError::TooLarge => {
                    (413, "request_too_large", format!("the body is over {} bytes", http::MAX_BODY), true)
                }
                ReadError::HeadTooLarge => (431, "api_usage_error", "the request's headers are too large".into(), true),
                ReadError::LengthRequired => (411, "api_usage_error", "send a Content-Length".into(), true),
                ReadError::Malformed(why) => (400, "api_usage_error", format!("not an HTTP request: {why}"), true),
                ReadError::Closed => return,
            };
            http::write_response(&mut job.stream, &routes::error(status, error_type, &message), unread);
            routes::log_unread(&rid, &peer, status, &message);
            return;
        }
    };
    let handled = routes::handle(&shared.gateway, shared.key.as_ref(), &shared.started, &request, &rid);
    http::write_response(&mut job.stream, &handled.response, false);
    shared.served.fetch_add(1, Ordering::Relaxed);
    let note = if handled.note.is_empty() { String::new() } else { format!(": {}", handled.note) };
    logging::info(
        &rid,
        &format!(
            "{peer} {} {} {} in {} ms{note}",
            request.method,
            logging_path(&request.path),
            handled.response.status,
            millis(started.elapsed())
        ),
    );
}

/// A path for the log: at most 100 characters of it (the logger escapes control characters).
fn logging_path(path: &str) -> String {
    crate::text::ellipsis(path, 100)
}

/// Waits up to a quarter second for a connection, so the stop flag is looked at that often.
#[cfg(unix)]
fn wait_readable(listener: &TcpListener) -> bool {
    use std::os::fd::AsRawFd;
    let mut fds = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    #[allow(unsafe_code, reason = "poll(2) on one descriptor we own")]
    // SAFETY: `fds` is one valid pollfd that outlives the call, and the count passed is 1.
    let n = unsafe { libc::poll(&mut fds, 1, 250) };
    n > 0
}

#[cfg(not(unix))]
fn wait_readable(_listener: &TcpListener) -> bool {
    std::thread::sleep(Duration::from_millis(5));
    true
}

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: all a signal handler may safely do here.
    STOP.store(true, Ordering::SeqCst);
}

#[cfg(unix)]
fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        #[allow(unsafe_code, reason = "sigaction(2) is the one way to catch SIGTERM")]
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe; the sigaction
        // struct is zeroed (a valid empty mask) and lives through the call.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

#[cfg(not(unix))]
fn install_signal_handlers() {}
