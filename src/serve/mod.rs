//! `system1 serve`: the gateway as a System One server (`POST /v1/systemone`, `GET /v1/models`,
//! `GET /health`) over HTTP/1.1, for any client of that API (docs/serve.md).
//!
//! One thread accepts; a fixed pool of workers serves one request per connection each; between
//! them a queue of a fixed length. A new connection waits with the accepting thread (at most
//! [`MAX_WAITING`] of them, for [`FIRST_BYTE`] each) until its first bytes arrive, so a client that
//! connects and sends nothing never holds a worker or a place in the queue. A connection that
//! finds the queue full is answered 503 with `Retry-After` at once, so load never grows the server
//! past `workers` threads and `queue` waiting sockets. Each request must arrive whole (head and
//! body) within [`READ_DEADLINE`] of its connection being accepted, so a slow client holds a
//! worker for less than that; each decision has the gateway's deadline. SIGINT and SIGTERM stop
//! the accepting: the connections already in the listener's backlog are taken first, the workers
//! finish every request taken or queued, and the process exits 0.
//!
//! [`http`] frames requests and responses, [`api`] is the API's request and answer shapes,
//! [`routes`] answers each route.

pub mod api;
mod decisions;
mod http;
mod routes;

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::gateway::{Gateway, millis, new_request_id};
use crate::logging;
use http::ReadError;

/// How long a client has to send its whole request once its connection is accepted.
pub const READ_DEADLINE: Duration = Duration::from_secs(10);
/// How long a new connection has to send its first byte; one that sends nothing is then closed
/// without a worker ever being spent on it.
pub const FIRST_BYTE: Duration = Duration::from_secs(2);
/// New connections waiting for their first byte; past this, the one that has waited longest is
/// closed (file descriptors are the limit here, 1,024 by default).
pub const MAX_WAITING: usize = 512;

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
    accepted: Instant,
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
    accept(listener, &tx);
    drop(tx);
    for w in workers {
        let _ = w.join();
    }
    let served = crate::text::count(shared.served.load(Ordering::Relaxed), "request");
    logging::info("shutdown", &format!("stopped after {served}"));
    logging::flush(Duration::from_secs(1));
    Ok(())
}

fn accept(listener: TcpListener, tx: &SyncSender<Job>) {
    let mut waiting: VecDeque<Job> = VecDeque::new();
    while !STOP.load(Ordering::SeqCst) {
        let (listener_ready, readable) = wait_readable(&listener, &waiting, FIRST_BYTE);
        if listener_ready {
            take_backlog(&listener, &mut waiting);
        }
        dispatch(&mut waiting, &readable, |job| match tx.try_send(job) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(job)) => busy(job),
        });
        while waiting.len() > MAX_WAITING {
            // The one waiting longest has sent nothing for the longest: closed unanswered.
            waiting.pop_front();
        }
    }
    // Connections the kernel completed before the stop are in the backlog, their requests perhaps
    // sent: closing the listener now would reset them. They are taken first, then the listener
    // closed (later ones are refused, which a client can tell from a reset request).
    take_backlog(&listener, &mut waiting);
    drop(listener);
    logging::info("shutdown", "a stop signal: no new connections; finishing the requests in hand");
    // Each connection taken is served once its first bytes arrive (queued without a limit: the
    // workers are draining the queue), or closed when they do not arrive in time.
    while !waiting.is_empty() {
        let (_, readable) = wait_readable_conns(&waiting, FIRST_BYTE);
        dispatch(&mut waiting, &readable, |job| {
            let _ = tx.send(job);
        });
    }
}

/// Accepts every connection in the listener's backlog into `waiting`.
fn take_backlog(listener: &TcpListener, waiting: &mut VecDeque<Job>) {
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                // Accepted sockets inherit the listener's non-blocking mode on some platforms.
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_nodelay(true);
                waiting.push_back(Job { stream, peer, accepted: Instant::now() });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                // Out of file descriptors, say: wait a little rather than spin.
                logging::warn("accept", &format!("accept failed: {e}"));
                std::thread::sleep(Duration::from_millis(50));
                return;
            }
        }
    }
}

/// Hands on each waiting connection whose first bytes have arrived (`readable`, by position) and
/// closes each that has waited [`FIRST_BYTE`] without any.
fn dispatch(waiting: &mut VecDeque<Job>, readable: &[bool], mut send: impl FnMut(Job)) {
    let now = Instant::now();
    let jobs = std::mem::take(waiting);
    for (i, job) in jobs.into_iter().enumerate() {
        if readable.get(i).copied().unwrap_or(false) {
            send(job);
        } else if now.duration_since(job.accepted) < FIRST_BYTE {
            waiting.push_back(job);
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
    let deadline = job.accepted + READ_DEADLINE;
    let unread = |stream: &mut TcpStream, e: ReadError| {
        let (status, error_type, message, unread) = match &e {
            ReadError::Timeout => (408, "timeout", "the request did not arrive in time".to_string(), false),
            ReadError::TooLarge => {
                (413, "request_too_large", format!("the body is over {} bytes", http::MAX_BODY), true)
            }
            ReadError::HeadTooLarge => (431, "api_usage_error", "the request's headers are too large".into(), true),
            ReadError::LengthRequired => (411, "api_usage_error", "send a Content-Length".into(), true),
            ReadError::Malformed(why) => (400, "api_usage_error", format!("not an HTTP request: {why}"), true),
            ReadError::NotImplemented(what) => (501, "api_usage_error", format!("not implemented: {what}"), true),
            ReadError::Closed => return,
        };
        http::write_response(stream, &routes::error(status, error_type, &message), unread);
        routes::log_unread(&rid, &peer, status, &message);
    };
    let head = match http::read_head(&mut job.stream, deadline) {
        Ok(h) => h,
        Err(e) => return unread(&mut job.stream, e),
    };
    let log = |method: &str, path: &str, handled: &routes::Handled| {
        let note = if handled.note.is_empty() { String::new() } else { format!(": {}", handled.note) };
        let (path, status, ms) = (logging_path(path), handled.response.status, millis(started.elapsed()));
        logging::info(&rid, &format!("{peer} {method} {path} {status} in {ms} ms{note}"));
    };
    // The key is checked on the head: a client without it gets no `100 Continue`, and its body
    // is never read into memory.
    if let Some(refused) = routes::check_key(shared.key.as_ref(), head.authorization.as_deref(), &head.path) {
        http::write_response(&mut job.stream, &refused.response, head.has_body());
        shared.served.fetch_add(1, Ordering::Relaxed);
        return log(&head.method, &head.path, &refused);
    }
    let request = match http::read_body(&mut job.stream, head, deadline) {
        Ok(r) => r,
        Err(e) => return unread(&mut job.stream, e),
    };
    let handled = routes::handle(&shared.gateway, shared.key.as_ref(), &shared.started, &request, &rid);
    http::write_response(&mut job.stream, &handled.response, false);
    shared.served.fetch_add(1, Ordering::Relaxed);
    log(&request.method, &request.path, &handled);
}

/// A path for the log: at most 100 characters of it (the logger escapes control characters).
fn logging_path(path: &str) -> String {
    crate::text::ellipsis(path, 100)
}

/// Waits up to a quarter second (or less, to the first connection's [`FIRST_BYTE`]) for a new
/// connection or a waiting one's first bytes, so the stop flag is looked at that often: whether the
/// listener has one, and which of `waiting` (by position) are readable.
fn wait_readable(listener: &TcpListener, waiting: &VecDeque<Job>, first_byte: Duration) -> (bool, Vec<bool>) {
    poll_ready(Some(listener), waiting, first_byte)
}

/// [`wait_readable`] without a listener.
fn wait_readable_conns(waiting: &VecDeque<Job>, first_byte: Duration) -> (bool, Vec<bool>) {
    poll_ready(None, waiting, first_byte)
}

#[cfg(unix)]
fn poll_ready(listener: Option<&TcpListener>, waiting: &VecDeque<Job>, first_byte: Duration) -> (bool, Vec<bool>) {
    use std::os::fd::AsRawFd;
    let pollfd = |fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let mut fds: Vec<libc::pollfd> = listener.iter().map(|l| pollfd(l.as_raw_fd())).collect();
    fds.extend(waiting.iter().map(|j| pollfd(j.stream.as_raw_fd())));
    let soonest = waiting.front().map(|j| (j.accepted + first_byte).saturating_duration_since(Instant::now()));
    let wait = soonest.unwrap_or(Duration::MAX).min(Duration::from_millis(250));
    let timeout = libc::c_int::try_from(wait.as_millis()).unwrap_or(250).max(1);
    let count = libc::nfds_t::try_from(fds.len()).unwrap_or(0);
    #[allow(unsafe_code, reason = "poll(2) on descriptors we own")]
    // SAFETY: `fds` is a valid array of `count` pollfds that outlives the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), count, timeout) };
    if n <= 0 {
        return (false, vec![false; waiting.len()]);
    }
    // Readable, or closed or failed (POLLHUP, POLLERR): the worker finds out which.
    let ready: Vec<bool> = fds.iter().map(|f| f.revents != 0).collect();
    match listener {
        Some(_) => (ready[0], ready[1..].to_vec()),
        None => (false, ready),
    }
}

#[cfg(not(unix))]
fn poll_ready(_listener: Option<&TcpListener>, waiting: &VecDeque<Job>, _first_byte: Duration) -> (bool, Vec<bool>) {
    // Without poll(2), every connection goes to a worker at once, which reads it within its deadline.
    std::thread::sleep(Duration::from_millis(5));
    (true, vec![true; waiting.len()])
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
