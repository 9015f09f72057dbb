//! The message of a group no topology domain could take, formatted here and parsed back here (the
//! CLI's `kwas why` reads it with [`PlacementMessage::from_str`](std::str::FromStr::from_str)):
//!
//! - `0/T KEY placements are available: KEY=v1, v2: why; KEY=v3, v4, v5 and 2 more: other why`: the
//!   domains tried, grouped by explanation (the most common first, at most three values listed each);
//! - `0/0 placements are available: no node has the topology label "KEY"`.
//!
//! Domain values and keys are node label values and keys (no spaces, commas or colons), so the text
//! splits back unambiguously as long as an explanation does not itself contain `; KEY=`.

use std::fmt;
use std::str::FromStr;

/// Domains that failed for the same reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainFailure {
    /// The first domain values with this explanation (at most three).
    pub values: Vec<String>,
    /// How many more domains share it (listed as ` and N more`).
    pub more: usize,
    /// The explanation.
    pub message: String,
}

/// Why no topology domain could take a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlacementMessage {
    /// No node has the constraint's label.
    NoDomains {
        /// The node label key.
        key: String,
    },
    /// Every domain tried failed.
    Unavailable {
        /// The node label key.
        key: String,
        /// The domains there were.
        total: usize,
        /// The failures, grouped by explanation.
        failures: Vec<DomainFailure>,
    },
}

/// Values listed per explanation.
const SHOWN: usize = 3;
const AVAILABLE: &str = " placements are available";
const NO_DOMAINS: &str = "0/0 placements are available: no node has the topology label ";

impl PlacementMessage {
    /// The message for `total` domains of `key` that failed with `failures` (domain value,
    /// explanation): domains with the same explanation grouped, the most common explanation first
    /// (ties in the order they were tried).
    pub fn from_failures(key: &str, total: usize, failures: &[(String, String)]) -> Self {
        let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
        for (value, message) in failures {
            match by_reason.iter_mut().find(|(m, _)| *m == message.as_str()) {
                Some((_, values)) => values.push(value),
                None => by_reason.push((message.as_str(), vec![value.as_str()])),
            }
        }
        by_reason.sort_by_key(|r| std::cmp::Reverse(r.1.len()));
        let failures = by_reason
            .into_iter()
            .map(|(message, values)| DomainFailure {
                more: values.len().saturating_sub(SHOWN),
                values: values.into_iter().take(SHOWN).map(str::to_string).collect(),
                message: message.to_string(),
            })
            .collect();
        PlacementMessage::Unavailable {
            key: key.to_string(),
            total,
            failures,
        }
    }

    /// The node label key the message is about.
    pub fn key(&self) -> &str {
        match self {
            PlacementMessage::NoDomains { key } | PlacementMessage::Unavailable { key, .. } => key,
        }
    }
}

impl fmt::Display for PlacementMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlacementMessage::NoDomains { key } => write!(f, "{NO_DOMAINS}{key:?}"),
            PlacementMessage::Unavailable { key, total, failures } => {
                write!(f, "0/{total} {key}{AVAILABLE}")?;
                for (i, d) in failures.iter().enumerate() {
                    f.write_str(if i == 0 { ": " } else { "; " })?;
                    write!(f, "{key}={}", d.values.join(", "))?;
                    if d.more > 0 {
                        write!(f, " and {} more", d.more)?;
                    }
                    write!(f, ": {}", d.message)?;
                }
                Ok(())
            }
        }
    }
}

/// Text that is not a placement message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a placement message: {0}")]
pub struct ParseError(&'static str);

impl FromStr for PlacementMessage {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(quoted) = s.strip_prefix(NO_DOMAINS) {
            let key = quoted
                .strip_prefix('"')
                .and_then(|q| q.strip_suffix('"'))
                .filter(|k| !k.contains(['"', '\\']))
                .ok_or(ParseError("the label key is not quoted"))?;
            return Ok(PlacementMessage::NoDomains { key: key.to_string() });
        }
        let rest = s.strip_prefix("0/").ok_or(ParseError("no 0/T"))?;
        let (total, rest) = rest.split_once(' ').ok_or(ParseError("no label key"))?;
        let total = total.parse::<usize>().map_err(|_| ParseError("T is not a count"))?;
        let at = rest
            .find(AVAILABLE)
            .ok_or(ParseError("no \"placements are available\""))?;
        let key = &rest[..at];
        if key.is_empty() || key.contains(' ') {
            return Err(ParseError("no label key"));
        }
        let rest = &rest[at + AVAILABLE.len()..];
        let mut failures = Vec::new();
        if !rest.is_empty() {
            let first = format!(": {key}=");
            let body = rest.strip_prefix(first.as_str()).ok_or(ParseError("no KEY=values"))?;
            let separator = format!("; {key}=");
            for chunk in body.split(separator.as_str()) {
                let (values, message) = chunk.split_once(": ").unwrap_or((chunk, ""));
                let (values, more) = match values.rsplit_once(" and ") {
                    Some((v, n)) => match n.strip_suffix(" more").and_then(|n| n.parse::<usize>().ok()) {
                        Some(n) => (v, n),
                        None => (values, 0),
                    },
                    None => (values, 0),
                };
                failures.push(DomainFailure {
                    values: values.split(", ").map(str::to_string).collect(),
                    more,
                    message: message.to_string(),
                });
            }
        }
        Ok(PlacementMessage::Unavailable {
            key: key.to_string(),
            total,
            failures,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn f(v: &str, m: &str) -> (String, String) {
        (v.to_string(), m.to_string())
    }

    #[test]
    fn failures_are_grouped_by_reason_most_common_first() {
        let gpu = "minCount (4) cannot be satisfied: 0 scheduled, 3 remaining: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.";
        let m = PlacementMessage::from_failures("kwas.dev/rack", 5, &[f("r3", "other"), f("r1", gpu), f("r2", gpu)]);
        let text = m.to_string();
        assert_eq!(
            text,
            format!("0/5 kwas.dev/rack placements are available: kwas.dev/rack=r1, r2: {gpu}; kwas.dev/rack=r3: other")
        );
        assert_eq!(text.parse::<PlacementMessage>(), Ok(m));
    }

    #[test]
    fn past_three_domains_the_rest_are_counted() {
        let failures: Vec<_> = (0..5).map(|i| f(&format!("r{i}"), "full")).collect();
        let m = PlacementMessage::from_failures("rack", 5, &failures);
        assert_eq!(
            m.to_string(),
            "0/5 rack placements are available: rack=r0, r1, r2 and 2 more: full"
        );
        assert_eq!(m.to_string().parse::<PlacementMessage>(), Ok(m));
        let none = PlacementMessage::from_failures("rack", 0, &[]);
        assert_eq!(none.to_string(), "0/0 rack placements are available");
        assert_eq!(none.to_string().parse::<PlacementMessage>(), Ok(none));
        let no_label = PlacementMessage::NoDomains {
            key: "kwas.dev/rack".into(),
        };
        assert_eq!(
            no_label.to_string(),
            "0/0 placements are available: no node has the topology label \"kwas.dev/rack\""
        );
        assert_eq!(no_label.to_string().parse::<PlacementMessage>(), Ok(no_label));
    }

    #[test]
    fn other_text_is_refused() {
        for s in [
            "",
            "0/8 nodes are available: 8 Insufficient cpu.",
            "0/x rack placements are available",
            "1/2 rack placements are available",
        ] {
            assert!(s.parse::<PlacementMessage>().is_err(), "{s}");
        }
    }

    /// A node label key: an optional DNS-subdomain prefix (up to 253 characters) and a name (up to 63).
    fn label_key() -> impl Strategy<Value = String> {
        let name = "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?";
        let label = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";
        prop_oneof![
            name.prop_map(|n| n),
            (proptest::collection::vec(label, 1..5), name).prop_map(|(parts, n)| {
                let mut prefix = parts.join(".");
                prefix.truncate(253);
                let prefix = prefix.trim_end_matches(['.', '-']).to_string();
                if prefix.is_empty() { n } else { format!("{prefix}/{n}") }
            }),
            Just(format!(
                "{}.{}.{}.{}/{}",
                "a".repeat(63),
                "b".repeat(63),
                "c".repeat(63),
                "d".repeat(61),
                "e".repeat(63)
            )),
        ]
    }

    /// A node label value (up to 63 characters, possibly empty).
    fn label_value() -> impl Strategy<Value = String> {
        prop_oneof![
            "([a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?)?".prop_map(|v| v),
            Just("v".repeat(63)),
        ]
    }

    fn failure() -> impl Strategy<Value = DomainFailure> {
        (
            proptest::collection::vec(label_value(), 1..=3),
            0usize..10_000,
            "[ -~]{0,120}",
        )
            .prop_map(|(values, more, message)| {
                let more = if values.len() == SHOWN { more } else { 0 };
                DomainFailure { values, more, message }
            })
    }

    proptest! {
        #[test]
        fn format_then_parse_gives_the_message_back(
            key in label_key(),
            total in 0usize..100_000,
            failures in proptest::collection::vec(failure(), 0..6),
        ) {
            let separator = format!("; {key}=");
            prop_assume!(failures.iter().all(|d| !d.message.contains(&separator)));
            let m = PlacementMessage::Unavailable { key: key.clone(), total, failures };
            prop_assert_eq!(m.to_string().parse::<PlacementMessage>(), Ok(m));
            let none = PlacementMessage::NoDomains { key };
            prop_assert_eq!(none.to_string().parse::<PlacementMessage>(), Ok(none));
        }
    }
}
