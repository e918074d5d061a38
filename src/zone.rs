//! The time zone days, weeks and months are counted in (`system1 report --by day`, the statusline's
//! "today", `--since` and `--until` dates): UTC, a fixed offset, or a zone from the system's own
//! zoneinfo files: an IANA name (`Europe/Paris`), or the local zone from `TZ` and `/etc/localtime`,
//! the way the C library finds it. tz-rs reads the zoneinfo files and their rules for the years past
//! their last transition; nothing here needs a network or a bundled database.

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use tz::TimeZone;
use tz::timezone::TimeZoneSettings;

use crate::error::{Error, Result};

/// Seconds in a day.
const DAY: i64 = 86_400;
/// A zoneinfo file is a few kilobytes; one larger than this is not one.
const MAX_TZIF_BYTES: u64 = 1 << 20;
/// Where zoneinfo files are looked for, in order (what the C library and tz-rs search).
const ZONEINFO: &[&str] = &["/usr/share/zoneinfo", "/share/zoneinfo", "/etc/zoneinfo"];

/// Reads a zoneinfo file: a regular file of at most [`MAX_TZIF_BYTES`] (`TZ` may name any path,
/// and the status line reads it on every update: a FIFO must not hang it, nor `/dev/zero` fill it).
fn read_tzif(path: &str) -> std::result::Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    let path = std::path::Path::new(path);
    crate::fsutil::read_file(path, MAX_TZIF_BYTES, crate::fsutil::Links::Follow)
        .map_err(|e| format!("{} {e}", path.display()).into())
}

const SETTINGS: TimeZoneSettings<'static> = TimeZoneSettings::new(ZONEINFO, read_tzif);

/// A time zone and the name it is shown by.
#[derive(Debug, Clone)]
pub struct Zone {
    name: String,
    tz: TimeZone,
}

impl Zone {
    pub fn utc() -> Zone {
        Zone { name: "UTC".into(), tz: TimeZone::utc() }
    }

    /// This machine's zone: `TZ` when set, else `/etc/localtime`; UTC when neither reads.
    pub fn local() -> Zone {
        if let Some(tz) = std::env::var("TZ").ok().filter(|t| !t.trim().is_empty())
            && let Ok(zone) = Zone::named(&tz)
        {
            return zone;
        }
        match SETTINGS.parse_local() {
            Ok(tz) => Zone { name: local_name().unwrap_or_else(|| "local".into()), tz },
            Err(_) => Zone::utc(),
        }
    }

    /// `--timezone`: `UTC`, `local`, an offset (`+05:30`, `-08`), or a zone name from the system's
    /// zoneinfo (`Europe/Paris`; also a POSIX `TZ` rule).
    pub fn named(s: &str) -> Result<Zone> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("utc") || s == "Z" {
            return Ok(Zone::utc());
        }
        if s.eq_ignore_ascii_case("local") {
            return Ok(Zone::local());
        }
        if let Some(seconds) = offset(s) {
            let tz = TimeZone::fixed(seconds).map_err(|e| Error::usage(format!("--timezone {s:?}: {e}")))?;
            return Ok(Zone { name: s.to_string(), tz });
        }
        SETTINGS.parse_posix_tz(s).map(|tz| Zone { name: s.to_string(), tz }).map_err(|_| {
            Error::usage(format!(
                "--timezone {s:?}: not a time zone this machine knows (expected UTC, local, an offset such as +02:00, \
                 or a name from {} such as Europe/Paris)",
                ZONEINFO[0]
            ))
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The zone's offset from UTC at `unix` seconds, in seconds.
    pub fn offset_at(&self, unix: i64) -> i64 {
        self.tz.find_local_time_type(unix).map_or(0, |t| i64::from(t.ut_offset()))
    }

    /// The local day of `unix` seconds, counted from 1970-01-01.
    pub fn day_of(&self, unix: i64) -> i64 {
        (unix + self.offset_at(unix)).div_euclid(DAY)
    }

    /// When local `day` begins, in unix seconds. Where midnight falls into a gap (a clock moved
    /// forward at midnight), the first moment after it.
    pub fn start_of(&self, day: i64) -> i64 {
        let wall = day * DAY;
        let first = wall - self.offset_at(wall);
        let second = wall - self.offset_at(first);
        if self.day_of(second) == day { second } else { first.max(second) }
    }

    /// Today's local day.
    pub fn today(&self) -> i64 {
        self.day_of(chrono::Utc::now().timestamp())
    }
}

/// `+05:30`, `-0800`, `+2` as seconds east of UTC.
fn offset(s: &str) -> Option<i32> {
    let sign = match s.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = s[1..].chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || digits.len() > 4 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (h, m) = if digits.len() <= 2 { (&digits[..], "0") } else { digits.split_at(digits.len() - 2) };
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 18 && m < 60).then_some(sign * (h * 3600 + m * 60))
}

/// The name of the local zone: what `/etc/localtime` links to under a zoneinfo directory.
fn local_name() -> Option<String> {
    let target = std::fs::read_link("/etc/localtime").ok()?;
    let text = target.to_string_lossy();
    text.split_once("zoneinfo/").map(|(_, name)| name.to_string())
}

/// A day counted from 1970-01-01 as its date.
pub fn date(day: i64) -> NaiveDate {
    NaiveDate::from_num_days_from_ce_opt(i32::try_from(day + 719_163).unwrap_or(719_163)).unwrap_or_default()
}

/// A date as its day counted from 1970-01-01.
pub fn day(date: NaiveDate) -> i64 {
    i64::from(date.num_days_from_ce()) - 719_163
}

/// The Monday that starts `day`'s week (ISO 8601 weeks).
pub fn week_of(day: i64) -> i64 {
    day - i64::from(date(day).weekday().num_days_from_monday())
}

/// A `--since`/`--until` value: a date means its midnight in `zone` (`end_of_day` moves it to the
/// next midnight, so that `--until` takes the day whole); anything else must be an RFC 3339 time.
pub fn parse_when(s: &str, flag: &str, end_of_day: bool, zone: &Zone) -> Result<DateTime<Utc>> {
    if let Some(d) = date_in(s) {
        let midnight = zone.start_of(day(d) + i64::from(end_of_day));
        return Ok(DateTime::from_timestamp(midnight, 0).unwrap_or_default());
    }
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| Error::usage(format!("{flag} {s:?}: expected a date (2026-11-01) or an RFC 3339 time")))
}

/// The date a `--since`/`--until` value names, when it is one (not a time).
pub fn date_in(s: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn when_is_a_date_or_a_time() {
        let utc = Zone::utc();
        let at = |s, end| parse_when(s, "--since", end, &utc).map(|t| t.to_rfc3339());
        assert_eq!(at("2026-10-01", false).unwrap(), "2026-10-01T00:00:00+00:00");
        assert_eq!(at("2026-10-01", true).unwrap(), "2026-10-02T00:00:00+00:00");
        assert_eq!(at("2026-10-01T12:00:00+02:00", false).unwrap(), "2026-10-01T10:00:00+00:00");
        assert!(at("last week", false).unwrap_err().to_string().contains("--since"));
        // A date is the midnight of the zone's day; a time stands as written.
        let tokyo = Zone::named("+09:00").unwrap();
        let at = |s, end| parse_when(s, "--until", end, &tokyo).map(|t| t.to_rfc3339());
        assert_eq!(at("2026-10-01", true).unwrap(), "2026-10-01T15:00:00+00:00");
        assert_eq!(at("2026-10-01T12:00:00Z", true).unwrap(), "2026-10-01T12:00:00+00:00");
    }

    fn at(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp()
    }

    #[test]
    fn offsets_and_names_read_as_zones() {
        assert_eq!(offset("+05:30"), Some(19_800));
        assert_eq!(offset("-0800"), Some(-28_800));
        assert_eq!(offset("+2"), Some(7_200));
        assert_eq!(offset("+25"), None);
        assert_eq!(offset("Europe/Paris"), None);
        let tokyo = Zone::named("+09:00").unwrap();
        // 2026-11-10 20:00 UTC is the 11th in Tokyo.
        assert_eq!(date(tokyo.day_of(at("2026-11-10T20:00:00Z"))).to_string(), "2026-11-11");
        assert_eq!(date(Zone::utc().day_of(at("2026-11-10T20:00:00Z"))).to_string(), "2026-11-10");
        assert!(Zone::named("Nowhere/Special").unwrap_err().to_string().contains("--timezone"));
    }

    #[test]
    fn a_named_zone_follows_its_daylight_saving_rules() {
        // The system's zoneinfo is not on every machine this builds on; a POSIX rule is the same rules.
        let paris = Zone::named("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        assert_eq!(paris.offset_at(at("2026-07-01T12:00:00Z")), 7_200);
        assert_eq!(paris.offset_at(at("2026-12-01T12:00:00Z")), 3_600);
        // Midnight of 2026-07-01 in Paris is 22:00 UTC the day before.
        let day = super::day(NaiveDate::from_ymd_opt(2026, 7, 1).unwrap());
        assert_eq!(paris.start_of(day), at("2026-06-30T22:00:00Z"));
        assert_eq!(paris.day_of(at("2026-06-30T22:00:00Z")), day);
        assert_eq!(paris.day_of(at("2026-06-30T21:59:59Z")), day - 1);
        if std::path::Path::new("/usr/share/zoneinfo/Europe/Paris").exists() {
            let named = Zone::named("Europe/Paris").unwrap();
            assert_eq!(named.offset_at(at("2026-07-01T12:00:00Z")), 7_200);
            assert_eq!(named.name(), "Europe/Paris");
        }
    }

    #[test]
    fn weeks_start_on_monday() {
        let d = |s: &str| super::day(NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap());
        // 2026-11-10 is a Tuesday; its week began on Monday the 9th, and a Sunday's the Monday before.
        assert_eq!(date(week_of(d("2026-11-10"))).to_string(), "2026-11-09");
        assert_eq!(date(week_of(d("2026-11-09"))).to_string(), "2026-11-09");
        assert_eq!(date(week_of(d("2026-11-15"))).to_string(), "2026-11-09");
        assert_eq!(day(date(12_345)), 12_345);
    }
}
