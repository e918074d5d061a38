//! `system1 serve`: the gateway as a System One HTTP server (docs/serve.md).
//!
//! Loopback by default. Any other address needs an API key (`--api-key-file` or
//! `[serve] api_key_file`): a server open to the network without one is refused at start.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::engine_servers::autostart::{self, Platform};
use crate::error::{Error, Result};
use crate::gateway::Gateway;
use crate::{config, logging, paths, serve};

#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  system1 serve                              # 127.0.0.1:8741, or what [serve] in the config says
  system1 serve --port 0                     # a free port, printed on the first line
  system1 serve --host 0.0.0.0 --api-key-file ~/.config/system1/serve.key
  system1 serve --at-login on                # start the installed server at login")]
pub struct Args {
    /// The address to listen on (default: [serve] host, else 127.0.0.1). Not loopback: needs a key.
    #[arg(long)]
    host: Option<String>,
    /// The port (default: [serve] port, else 8741; 0 picks a free one and prints it).
    #[arg(long)]
    port: Option<u16>,
    /// A file holding the key clients must send as `Authorization: Bearer <key>` (mode 0600).
    #[arg(long)]
    api_key_file: Option<PathBuf>,
    /// Requests served at once (default: [serve] workers, else 8).
    #[arg(long)]
    workers: Option<usize>,
    /// Connections waiting for a worker before new ones get 503 (default: [serve] queue, else 64).
    #[arg(long)]
    queue: Option<usize>,
    /// Instead of serving: on writes the entry that starts the installed `system1 serve` at login
    /// (systemd user unit, LaunchAgent, Startup folder); off removes it.
    #[arg(long, value_parser = ["on", "off"])]
    at_login: Option<String>,
    /// With --at-login: the platform whose entry to write (linux, macos, windows; default: this one).
    #[arg(long, requires = "at_login")]
    platform: Option<String>,
}

pub fn run(args: Args) -> Result<i32> {
    if let Some(state) = &args.at_login {
        let platform = match &args.platform {
            Some(p) => Platform::parse(p)?,
            None => Platform::current(),
        };
        let done = if state == "on" { autostart::enable_serve(platform)? } else { autostart::disable_serve(platform)? };
        for line in done {
            outln!("system1 serve: {line}")?;
        }
        return Ok(0);
    }
    let gateway = Gateway::from_env();
    let g = &gateway.loaded.config.gateway;
    logging::init_server(&g.log_level, &g.log_file);
    let s = gateway.loaded.config.serve.clone();
    let host_text = args.host.unwrap_or(s.host);
    let host: IpAddr = host_text
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| Error::usage(format!("--host must be an IP address such as 127.0.0.1, got {host_text:?}")))?;
    let key_file =
        args.api_key_file.or_else(|| (!s.api_key_file.is_empty()).then(|| paths::expand_tilde(&s.api_key_file)));
    let api_key = match &key_file {
        None => None,
        Some(path) => {
            let key = config::secret::read_key_file(path).map_err(|e| Error::config(format!("the API key: {e}")))?;
            // A key no client can put in a header would have every request refused: refused here.
            if let Some(what) = config::secret::unsendable(&key) {
                return Err(Error::config(format!(
                    "the API key in {} has {what}: an API key is printable ASCII, which an HTTP header can carry; \
                     put the key in it again",
                    path.display()
                )));
            }
            Some(key)
        }
    };
    if !host.is_loopback() && api_key.is_none() {
        return Err(Error::usage(format!(
            "{host} is reachable from other machines, and no API key is set: give one with --api-key-file \
             (or [serve] api_key_file), or serve on 127.0.0.1"
        )));
    }
    let opts = serve::Options {
        host,
        port: args.port.unwrap_or(s.port),
        api_key,
        workers: args.workers.unwrap_or(s.workers).clamp(1, 256),
        queue: args.queue.unwrap_or(s.queue).clamp(1, 4096),
    };
    let mut said = Ok(());
    serve::serve(gateway, opts, |addr| {
        // The one line on stdout: where the server listens (with --port 0, which port it got).
        said = outln!("system1 serve: listening on http://{addr}");
    })
    .map_err(|e| Error::failure(format!("cannot serve on {host_text}: {e}")))?;
    said?;
    Ok(0)
}
