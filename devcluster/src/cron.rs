//! Cron schedules as CronJobs write them (the standard five fields `minute hour day-of-month month
//! day-of-week` of robfig/cron's standard parser, which Kubernetes uses): numbers, `*` and `?`, ranges
//! `a-b`, steps `*/n` `a-b/n` `a/n`, lists, month and weekday names, and the descriptors `@yearly`
//! `@annually` `@monthly` `@weekly` `@daily` `@midnight` `@hourly` and `@every <duration>`. Day of month
//! and day of week combine like cron's: when both are restricted a day matching either runs.

use std::time::Duration;

use jiff::civil::DateTime;

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Day of month or day of week was `*` / `?`.
    dom_any: bool,
    dow_any: bool,
    /// `@every <duration>`.
    every: Option<Duration>,
}

const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn value(s: &str, names: &[&str], offset: u32) -> Option<u32> {
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
        return u32::try_from(i).ok().map(|i| i + offset);
    }
    s.parse().ok()
}

/// One field's bits; the second value says whether it was `*` / `?`.
fn field(spec: &str, min: u32, max: u32, names: &[&str], offset: u32) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut any = false;
    for part in spec.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s.parse().map_err(|_| format!("bad step {s:?}"))?;
                if step == 0 {
                    return Err(format!("step of range should be a positive number: {part}"));
                }
                (r, Some(step))
            }
            None => (part, None),
        };
        let (lo, hi) = if range == "*" || range == "?" {
            any = step.is_none();
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            let a = value(a, names, offset).ok_or_else(|| format!("failed to parse int from {a}"))?;
            let b = value(b, names, offset).ok_or_else(|| format!("failed to parse int from {b}"))?;
            (a, b)
        } else {
            let a = value(range, names, offset).ok_or_else(|| format!("failed to parse int from {range}"))?;
            (a, if step.is_some() { max } else { a })
        };
        if lo < min || hi > max || lo > hi {
            return Err(format!(
                "end of range ({hi}) above maximum ({max}) or beginning ({lo}) below minimum ({min}): {part}"
            ));
        }
        let step = step.unwrap_or(1);
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, any))
}

impl Schedule {
    /// Parses a schedule; the error reads like robfig/cron's.
    pub(crate) fn parse(spec: &str) -> Result<Schedule, String> {
        let spec = spec.trim();
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            return Err("cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into());
        }
        let expanded = match spec {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            _ => spec,
        };
        if let Some(d) = expanded.strip_prefix("@every ") {
            let every = kwas_api_types::duration::parse_go_duration(d.trim())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| format!("failed to parse duration @every {d}"))?;
            return Ok(Schedule {
                minutes: 0,
                hours: 0,
                days: 0,
                months: 0,
                weekdays: 0,
                dom_any: true,
                dow_any: true,
                every: Some(every),
            });
        }
        if expanded.starts_with('@') {
            return Err(format!("unrecognized descriptor: {expanded}"));
        }
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let [minute, hour, dom, month, dow] = fields.as_slice() else {
            return Err(format!("expected exactly 5 fields, found {}: {expanded}", fields.len()));
        };
        let (minutes, _) = field(minute, 0, 59, &[], 0)?;
        let (hours, _) = field(hour, 0, 23, &[], 0)?;
        let (days, dom_any) = field(dom, 1, 31, &[], 0)?;
        let (months, _) = field(month, 1, 12, MONTHS, 1)?;
        let (weekdays, dow_any) = field(dow, 0, 6, WEEKDAYS, 0)?;
        Ok(Schedule {
            minutes,
            hours,
            days,
            months,
            weekdays,
            dom_any,
            dow_any,
            every: None,
        })
    }

    fn day_matches(&self, t: DateTime) -> bool {
        let dom = self.days & (1 << t.day()) != 0;
        let dow = self.weekdays & (1 << t.weekday().to_sunday_zero_offset()) != 0;
        if self.dom_any || self.dow_any {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// The first activation strictly after `t` (in the schedule's civil time), within five years.
    pub(crate) fn next_after(&self, t: DateTime) -> Option<DateTime> {
        if let Some(every) = self.every {
            let span = jiff::SignedDuration::try_from(every).ok()?;
            return t.checked_add(span).ok();
        }
        let mut c = t
            .checked_add(jiff::Span::new().minutes(1))
            .ok()?
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?;
        let limit = t.checked_add(jiff::Span::new().years(5)).ok()?;
        while c <= limit {
            if self.months & (1 << c.month()) == 0 || !self.day_matches(c) {
                c = c.date().tomorrow().ok()?.to_datetime(jiff::civil::Time::midnight());
                continue;
            }
            if self.hours & (1 << c.hour()) == 0 {
                c = c
                    .with()
                    .minute(0)
                    .build()
                    .ok()?
                    .checked_add(jiff::Span::new().hours(1))
                    .ok()?;
                continue;
            }
            if self.minutes & (1 << c.minute()) == 0 {
                c = c.checked_add(jiff::Span::new().minutes(1)).ok()?;
                continue;
            }
            return Some(c);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    #[test]
    fn standard_fields_and_descriptors_parse() {
        for ok in [
            "*/1 * * * *",
            "0 0 * * *",
            "5 4 * * sun",
            "0 22 * * 1-5",
            "15 10 ? * MON-FRI",
            "@hourly",
            "@every 1h30m",
            "0,30 9-17/2 1,15 JAN-JUN *",
        ] {
            assert!(Schedule::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "* * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 7",
            "*/0 * * * *",
            "TZ=UTC * * * * *",
            "@often",
            "a * * * *",
        ] {
            assert!(Schedule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn next_activation_follows_cron() {
        let t = date(2026, 11, 24).at(19, 31, 12, 0);
        let next = |s: &str| Schedule::parse(s).unwrap().next_after(t).unwrap();
        assert_eq!(next("*/1 * * * *"), date(2026, 11, 24).at(19, 32, 0, 0));
        assert_eq!(next("0 0 * * *"), date(2026, 11, 25).at(0, 0, 0, 0));
        assert_eq!(next("30 9 * * mon"), date(2026, 11, 30).at(9, 30, 0, 0));
        // Both day fields restricted: either matches (the 1st, or a Sunday).
        assert_eq!(next("0 0 1 * sun"), date(2026, 11, 29).at(0, 0, 0, 0));
        assert!(Schedule::parse("0 0 30 2 *").unwrap().next_after(t).is_none());
    }
}
