//! `system1_health`: every provider of the chain probed side by side, within the timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::request::SCHEMA_VERSION;
use super::response::{HealthStatus, Role};
use super::{Gateway, HealthResponse, ProviderProbe, VERSION, millis};
use crate::providers;
use crate::state;

impl Gateway {
    /// `system1_health`: every provider of the chain probed in parallel. Each probe gets the timeout;
    /// one that has not answered by then (plus a little slack) is reported as down without waiting
    /// for it, so health never takes much longer than one timeout whatever an adapter does.
    pub fn health(&self) -> HealthResponse {
        self.health_with_pause(state::is_paused())
    }

    fn health_with_pause(&self, paused: bool) -> HealthResponse {
        let probes = self.probe_all();
        let status = if !self.is_ok() || probes.is_empty() {
            HealthStatus::Down
        } else if paused {
            HealthStatus::Paused
        } else if probes[0].ok {
            HealthStatus::Ok
        } else if probes.iter().skip(1).any(|p| p.ok) {
            HealthStatus::Degraded
        } else {
            HealthStatus::Down
        };
        HealthResponse {
            status,
            gateway_version: VERSION.to_string(),
            schema_version: SCHEMA_VERSION.to_string(),
            paused,
            config_file: self.loaded.file_read.then(|| self.loaded.path.display().to_string()),
            config_errors: self.config_errors.clone(),
            providers: probes,
        }
    }

    /// Probes every provider on its own thread, in chain order, within the timeout.
    fn probe_all(&self) -> Vec<ProviderProbe> {
        let timeout = self.timeout;
        let started = Instant::now();
        let (tx, rx) = std::sync::mpsc::channel();
        for (i, p) in self.chain.iter().enumerate() {
            let (tx, p) = (tx.clone(), Arc::clone(p));
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let probe = p.health(timeout);
                let _ = tx.send((i, probe, millis(t0.elapsed())));
            });
        }
        drop(tx);
        let mut results: Vec<Option<(providers::Probe, f64)>> = vec![None; self.chain.len()];
        let deadline = started + timeout + Duration::from_millis(50);
        while results.iter().any(Option::is_none) {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok((i, probe, ms)) => results[i] = Some((probe, ms)),
                Err(_) => break,
            }
        }
        self.chain
            .iter()
            .zip(results)
            .enumerate()
            .map(|(i, (p, r))| {
                let (probe, latency_ms) = r.unwrap_or_else(|| {
                    (providers::Probe::Down(providers::Failure::timeout(timeout)), millis(started.elapsed()))
                });
                ProviderProbe {
                    name: p.name().to_string(),
                    role: if i == 0 { Role::Primary } else { Role::Fallback },
                    ok: probe.ok(),
                    latency_ms,
                    detail: probe.detail().map(String::from),
                    failure: probe.failure().cloned(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::{Duration, Instant};

    use super::super::testing::{Scripted, gateway};
    use super::*;
    use crate::calibration::Calibration;
    use crate::providers::{Cause, Failure, Probe, Provider};

    /// A probe that takes `delay` (ok if it is waited for).
    fn sleeps(name: &'static str, delay: Duration) -> Arc<Scripted> {
        Scripted::probed(name, move || {
            std::thread::sleep(delay);
            Probe::Up(None)
        })
    }

    /// Probes that meet: each is ok only if all `n` are probed at once (each waits up to 3 s for
    /// the others), so probing one after another shows as failures whatever the machine's speed.
    fn meets(name: &'static str, meeting: Arc<(Mutex<usize>, Condvar)>, n: usize) -> Arc<Scripted> {
        Scripted::probed(name, move || {
            let (count, all_here) = &*meeting;
            let mut here = count.lock().unwrap();
            *here += 1;
            all_here.notify_all();
            let (here, _) = all_here.wait_timeout_while(here, Duration::from_secs(3), |h| *h < n).unwrap();
            let ok = *here >= n;
            if ok {
                Probe::Up(None)
            } else {
                Probe::Down(Failure::new(Cause::Other, format!("probed alone ({} of {n})", *here)))
            }
        })
    }

    #[test]
    fn health_is_degraded_when_only_a_fallback_is_up_and_bounded_by_the_timeout() {
        let down = Scripted::new("down", Err(Failure::new(Cause::Other, "x")));
        let up = Scripted::new("up", Ok(vec![]));
        // The pause flag is passed in (health() reads it from the install dir), so no file is touched.
        let h = gateway(&[down.clone(), up.clone()]).health_with_pause(false);
        assert_eq!(h.status, HealthStatus::Degraded);
        assert_eq!(
            h.providers.iter().map(|p| (p.role, p.ok)).collect::<Vec<_>>(),
            [(Role::Primary, false), (Role::Fallback, true)]
        );
        assert_eq!(gateway(&[up.clone(), down.clone()]).health_with_pause(false).status, HealthStatus::Ok);
        assert_eq!(gateway(&[down.clone(), down.clone()]).health_with_pause(false).status, HealthStatus::Down);
        assert_eq!(gateway(std::slice::from_ref(&up)).health_with_pause(true).status, HealthStatus::Paused);

        // A probe that hangs past the timeout is reported as down when the timeout is up.
        let loaded =
            crate::config::load_from("/nonexistent/system1.toml".into(), &[("SYSTEM1_TIMEOUT_S".into(), "0.2".into())]);
        let g = Gateway::with_chain(
            loaded,
            vec![sleeps("hangs", Duration::from_secs(30)) as Arc<dyn Provider>, up.clone()],
            Calibration::default(),
        );
        let started = Instant::now();
        let h = g.health_with_pause(false);
        // Generous: the 0.2 s timeout cut it, not the probe's 30 s.
        assert!(started.elapsed() < Duration::from_secs(10), "health waited {:?}", started.elapsed());
        assert_eq!(h.status, HealthStatus::Degraded);
        assert!(h.providers[0].detail.as_deref().is_some_and(|d| d.contains("no answer within 0.200 s")));

        // Probes run side by side: three that are each ok only when all three are probed at once.
        let loaded = crate::config::load_from("/nonexistent/system1.toml".into(), &[]);
        let meeting = Arc::new((Mutex::new(0), Condvar::new()));
        let chain: Vec<Arc<dyn Provider>> =
            ["a", "b", "c"].into_iter().map(|n| meets(n, meeting.clone(), 3) as Arc<dyn Provider>).collect();
        let h = Gateway::with_chain(loaded, chain, Calibration::default()).health_with_pause(false);
        assert_eq!(h.status, HealthStatus::Ok, "probes ran one after another: {h:?}");
        assert_eq!(h.providers.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["a", "b", "c"], "in chain order");
        assert!(h.providers.iter().all(|p| p.ok));
    }
}
