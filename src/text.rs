//! How system1 writes things for people, once for every module: a clipped string, XML escaping,
//! a URL without its user info, a percentage, a number rounded to some decimals, a count with its
//! noun, a progress meter on the terminal, the system1 commands a message tells someone to run, and
//! the timestamp every written file uses.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::paths;

/// `t` as every file system1 writes a time in: RFC 3339 in UTC to the millisecond,
/// `2026-11-30T09:15:02.125Z` (the form of Claude Code's transcripts too).
pub fn timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The time now, as [`timestamp`] writes it.
pub fn now() -> String {
    timestamp(chrono::Utc::now())
}

/// `s` in at most `max_chars` characters: a longer one keeps its head and ends in `…`.
pub fn ellipsis(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `s` made safe to print on a terminal and to quote: control characters (an escape sequence's
/// ESC, a bell, a carriage return, newlines, C1 controls) and the invisible ones that reorder or
/// hide text (bidi overrides, zero-width marks) are written as `\u{..}` escapes, and once the
/// result holds `max_chars` characters the rest is cut, with a note of how much. For text from
/// outside (an engine's error body or rationale, a server's model names, a file's or a
/// transcript's fields), which could otherwise retitle or clear the terminal or fill a tool result.
/// Its own output comes back unchanged when it fits in `max_chars`.
pub fn printable(s: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars.saturating_mul(2)));
    let mut shown = 0;
    for (at, c) in s.char_indices() {
        let escaped = needs_escape(c).then(|| escape(c));
        let width = escaped.as_ref().map_or(1, String::len);
        if shown + width > max_chars {
            out.push_str(&format!("… ({} more bytes)", s.len() - at));
            break;
        }
        shown += width;
        match escaped {
            Some(e) => out.push_str(&e),
            None => out.push(c),
        }
    }
    out
}

/// Whether `c` is written as an escape: a control character, or an invisible one that reorders
/// or hides text (bidi overrides and isolates, zero-width marks, a byte order mark).
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

fn escape(c: char) -> String {
    format!("\\u{{{:x}}}", c as u32)
}

/// `s` as every command prints it, the last guard after [`printable`] at the points where text
/// from outside comes in: the characters [`printable`] escapes are escaped here too, except the
/// newlines (CRLF too) and tabs that lay out a command's own output. Nothing system1 prints on
/// stdout or as an error is meant to drive the terminal, so whatever slipped through unquoted (a
/// config value, a transcript's field) still cannot retitle, clear or rewrite it. Borrowed when
/// nothing changes.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    // A carriage return that ends a line (CSV's CRLF) moves nothing; alone it rewrites the line.
    let unsafe_at = |at: usize, c: char| match c {
        '\n' | '\t' => false,
        '\r' => !s[at + 1..].starts_with('\n'),
        c => needs_escape(c),
    };
    if !s.char_indices().any(|(at, c)| unsafe_at(at, c)) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for (at, c) in s.char_indices() {
        if unsafe_at(at, c) { out.push_str(&escape(c)) } else { out.push(c) }
    }
    std::borrow::Cow::Owned(out)
}

/// `s` safe inside XML text and double-quoted attribute values.
pub fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A URL as it may be shown: a user name or password in it (`http://user:pw@host`) becomes
/// `***`. Endpoint URLs are printed by `config show`, `doctor` and the health tool, whose answer
/// goes into the model's context; anything that is not such a URL comes back as it was.
pub fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://***{}", &rest[at..]),
        None => url.to_string(),
    }
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

/// A question as it is matched, by the local engine's heads and by calibration fits alike: lower
/// case, runs of white space as one space, trimmed.
pub fn question_key(question: &str) -> String {
    question.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// `n` and its noun, singular for one: `count(1, "session")` is `1 session`, `count(2, "spawn")`
/// `2 spawns`.
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// `count` for a noun whose plural is not the singular and an s: `count_as(1, "entry", "entries")`
/// is `1 entry`.
pub fn count_as(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// How a message names the system1 binary, so that a command it prints runs as printed: `system1`
/// when that is what `system1` on PATH runs; else the installed binary by its path (`~/...` under
/// the home folder on Unix, quoted for a shell when needed) or, before it is installed, the binary
/// that is running. `system1 install` puts the binary in the install dir, not on PATH.
pub fn binary() -> &'static str {
    static SHOWN: OnceLock<String> = OnceLock::new();
    SHOWN.get_or_init(|| {
        let installed = paths::installed_binary();
        if installed.is_file() {
            return if binary_on_path(&installed) { "system1".to_string() } else { shell_path(&installed) };
        }
        let running = std::env::current_exe().unwrap_or(installed);
        if binary_on_path(&running) {
            return "system1".to_string();
        }
        // The path the user ran it by, when it names this binary (a link to a build, say): the
        // resolved path is one they never typed.
        match std::env::args_os().next().map(std::path::PathBuf::from) {
            Some(typed) if typed.components().count() > 1 && paths::same_file(&typed, &running) => {
                if typed.is_absolute() { shell_path(&typed) } else { shell_quote(&typed.display().to_string()) }
            }
            _ => shell_path(&running),
        }
    })
}

/// Whether `system1` on PATH is the binary at `bin`.
pub fn binary_on_path(bin: &Path) -> bool {
    let name = if cfg!(windows) { "system1.exe" } else { "system1" };
    paths::find_on_path(&[name]).is_some_and(|found| paths::same_file(&found, bin))
}

/// A system1 command line as a message prints it: [`binary`], then `args`.
pub fn command(args: &str) -> String {
    format!("{} {args}", binary())
}

/// A path as a shell takes it: `~/rest` for a plain path under the home folder (Unix shells
/// expand a leading `~/`), else the whole path, quoted when it needs it.
pub fn shell_path(p: &Path) -> String {
    let home = paths::home();
    if !cfg!(windows)
        && let Ok(rest) = p.strip_prefix(&home)
        && !home.as_os_str().is_empty()
        && !rest.as_os_str().is_empty()
        && is_plain(&rest.display().to_string())
    {
        return format!("~/{}", rest.display());
    }
    shell_quote(&p.display().to_string())
}

/// Whether `s` needs no quotes in a POSIX shell, cmd.exe or PowerShell.
fn is_plain(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/\\._-:+@,".contains(c))
}

/// `s` as one word for a POSIX shell (cmd.exe on Windows): as it is when plain, else quoted.
pub fn shell_quote(s: &str) -> String {
    if is_plain(s) {
        s.to_string()
    } else if cfg!(windows) {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `s` as one word for PowerShell: as it is when plain, else single-quoted.
pub fn powershell_quote(s: &str) -> String {
    if is_plain(s) { s.to_string() } else { format!("'{}'", s.replace('\'', "''")) }
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
    fn printable_escapes_controls_and_caps_what_it_shows() {
        assert_eq!(printable("plain text, ünïcode", 100), "plain text, ünïcode");
        assert_eq!(printable("\u{1b}]0;t\u{7}\r\n\u{202e}x", 100), "\\u{1b}]0;t\\u{7}\\u{d}\\u{a}\\u{202e}x");
        assert_eq!(printable("abcdef", 3), "abc… (3 more bytes)");
        // The cap counts what is shown, escapes included: a run of escapes cannot swell past it.
        let many = "\u{1b}".repeat(1000);
        let shown = printable(&many, 30);
        assert_eq!(shown, format!("{}… (995 more bytes)", "\\u{1b}".repeat(5)));
        // What commands print keeps its lines and tabs, and nothing else that moves the terminal.
        assert_eq!(terminal_safe("a\tb\nc,d\r\n"), "a\tb\nc,d\r\n");
        assert!(matches!(terminal_safe("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(terminal_safe("x\u{1b}[2J\r\u{7}\n\u{202e}y"), "x\\u{1b}[2J\\u{d}\\u{7}\n\\u{202e}y");
        // Its own output comes back as it was.
        let once = printable("a\u{1b}b", 100);
        assert_eq!(printable(&once, 100), once);
    }

    #[test]
    fn user_info_is_never_shown() {
        assert_eq!(without_userinfo("http://me:hunter2@127.0.0.1:8765/x"), "http://***@127.0.0.1:8765/x");
        assert_eq!(without_userinfo("https://token@engine.example"), "https://***@engine.example");
        assert_eq!(without_userinfo("http://a:b@c@localhost"), "http://***@localhost");
        assert_eq!(without_userinfo("http://127.0.0.1:8765/me@example"), "http://127.0.0.1:8765/me@example");
        assert_eq!(without_userinfo("not a url"), "not a url");
    }

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
