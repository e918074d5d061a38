//! How system1 writes things for people, once for every module: a clipped string, XML escaping,
//! a percentage, a number rounded to some decimals, and a progress meter on the terminal.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// `s` in at most `max_chars` characters: a longer one keeps its head and ends in `…`.
pub fn ellipsis(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `s` safe inside XML text and double-quoted attribute values.
pub fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A share as a percentage with `decimals` decimals: `pct(0.256, 0)` is `26%`.
pub fn pct(share: f64, decimals: usize) -> String {
    format!("{:.*}%", decimals, share * 100.0)
}

/// `x` rounded to `decimals` decimals (half away from zero), for figures written to JSON.
pub fn round(x: f64, decimals: i32) -> f64 {
    // Exact for the few decimals used: every power of ten up to 1e22 is a float.
    let scale = 10f64.powi(decimals);
    (x * scale).round() / scale
}

/// A one-line progress meter on stderr, redrawn in place; silent unless stderr is a terminal, so
/// that pipes and logs stay clean.
pub struct Meter {
    enabled: bool,
    started: Instant,
    quiet_for: Duration,
    every: Duration,
    /// When the line was last drawn.
    last: Option<Instant>,
}

impl Meter {
    /// A meter that redraws on every call.
    pub fn new() -> Meter {
        Meter::after(Duration::ZERO, Duration::ZERO)
    }

    /// A meter that stays quiet until the run has lasted `quiet_for` (short runs show nothing),
    /// then redraws at most once every `every`.
    pub fn after(quiet_for: Duration, every: Duration) -> Meter {
        Meter { enabled: std::io::stderr().is_terminal(), started: Instant::now(), quiet_for, every, last: None }
    }

    /// Redraws the line with `line()`, when it is time to.
    pub fn draw(&mut self, line: impl FnOnce() -> String) {
        if !self.enabled || self.started.elapsed() < self.quiet_for {
            return;
        }
        if self.last.is_some_and(|t| t.elapsed() < self.every) {
            return;
        }
        self.last = Some(Instant::now());
        eprint!("\r{}", line());
    }

    /// Ends the line, leaving it on screen.
    pub fn finish(&mut self) {
        if self.last.take().is_some() {
            eprintln!();
        }
    }

    /// Erases the line.
    pub fn clear(&mut self) {
        if self.last.take().is_some() {
            eprint!("\r{:60}\r", "");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ellipsis_keeps_at_most_the_characters_asked() {
        assert_eq!(ellipsis("short", 5), "short");
        assert_eq!(ellipsis("longer", 5), "long…");
        assert_eq!(ellipsis("ééééé-é", 3), "éé…", "characters, not bytes");
        assert_eq!(ellipsis("ab", 0), "…");
    }

    #[test]
    fn xml_escape_covers_text_and_attributes() {
        assert_eq!(xml_escape(r#"a<b & "c">"#), "a&lt;b &amp; &quot;c&quot;&gt;");
    }

    #[test]
    fn pct_writes_the_decimals_asked() {
        assert_eq!(pct(0.256, 0), "26%");
        assert_eq!(pct(0.2561, 1), "25.6%");
        assert_eq!(pct(1.0, 0), "100%");
    }

    #[test]
    fn round_is_the_scale_round_divide_it_replaces() {
        for x in [0.123456789, 2.0 / 3.0, 0.00049999, 1234.56785, -0.3333333] {
            assert_eq!(round(x, 3), (x * 1000.0).round() / 1000.0);
            assert_eq!(round(x, 4), (x * 1e4).round() / 1e4);
            assert_eq!(round(x, 6), (x * 1e6).round() / 1e6);
            assert_eq!(round(x, 1), (x * 10.0).round() / 10.0);
        }
    }
}
