//! Fault injection for resilience tests: per resource and verb, an error rate (with the HTTP code to
//! answer), a rate of requests that take effect but whose response is lost, added latency, and a rate at
//! which open watch streams are dropped.
//!
//! Decisions come from one random generator seeded by [`FaultConfig::seed`], consumed in request order:
//! the same sequence of requests under the same rules gets the same faults.

use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// The verbs rules can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// get.
    Get,
    /// list.
    List,
    /// watch.
    Watch,
    /// create (including binding and eviction).
    Create,
    /// update.
    Update,
    /// patch.
    Patch,
    /// delete.
    Delete,
    /// deletecollection.
    Deletecollection,
}

impl Verb {
    /// Parses a verb name.
    pub fn parse(s: &str) -> Option<Verb> {
        Some(match s {
            "get" => Verb::Get,
            "list" => Verb::List,
            "watch" => Verb::Watch,
            "create" => Verb::Create,
            "update" => Verb::Update,
            "patch" => Verb::Patch,
            "delete" => Verb::Delete,
            "deletecollection" => Verb::Deletecollection,
            _ => return None,
        })
    }
}

/// One fault rule. Empty `resources` / `verbs` match everything.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FaultRule {
    /// Plural resource names (`pods`, `podgroups`) this rule applies to.
    pub resources: Vec<String>,
    /// Verbs this rule applies to.
    pub verbs: Vec<Verb>,
    /// Subresources this rule applies to (`""` names the resource itself, `"binding"`, `"status"`); empty:
    /// the resource and all its subresources.
    pub subresources: Vec<String>,
    /// Probability in [0, 1] that a matching request fails.
    pub error_rate: f64,
    /// HTTP code of injected errors: 500 (InternalError, the default), 429 (TooManyRequests), 503, 504.
    pub error_code: u16,
    /// Latency added before a matching request is handled.
    #[serde(with = "millis")]
    pub latency: Duration,
    /// For watches: probability, per event sent, that the stream is cut right after it.
    pub drop_watch_rate: f64,
    /// Probability in [0, 1] that a matching request takes effect but its client gets an error anyway
    /// (the `errorCode`, 504 by default: a response lost after the commit), as when a connection breaks
    /// between the server's write and its answer.
    pub lost_response_rate: f64,
}

mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// A fault configuration: a seed and rules (the first matching rule applies).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FaultConfig {
    /// Seed of the decision sequence.
    pub seed: u64,
    /// Rules, first match wins.
    pub rules: Vec<FaultRule>,
}

impl FaultRule {
    fn matches(&self, resource: &str, subresource: &str, verb: Verb) -> bool {
        (self.resources.is_empty() || self.resources.iter().any(|r| r == resource))
            && (self.verbs.is_empty() || self.verbs.contains(&verb))
            && (self.subresources.is_empty() || self.subresources.iter().any(|s| s == subresource))
    }
}

/// What to do to one request.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// Added latency.
    pub latency: Duration,
    /// An error to answer with instead of handling the request.
    pub error: Option<ApiError>,
    /// An error to answer with after handling the request.
    pub lost_response: Option<ApiError>,
}

/// The live fault injector of a cluster.
#[derive(Debug)]
pub struct Faults {
    inner: Mutex<(FaultConfig, fastrand::Rng)>,
    injected: std::sync::atomic::AtomicU64,
}

impl Faults {
    /// An injector with a configuration.
    pub fn new(config: FaultConfig) -> Self {
        let rng = fastrand::Rng::with_seed(config.seed);
        Faults {
            inner: Mutex::new((config, rng)),
            injected: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Replaces the configuration and restarts the decision sequence from its seed.
    pub fn set(&self, config: FaultConfig) {
        let rng = fastrand::Rng::with_seed(config.seed);
        *self.inner.lock() = (config, rng);
    }

    /// Removes every rule.
    pub fn clear(&self) {
        self.set(FaultConfig::default());
    }

    /// The current configuration.
    pub fn config(&self) -> FaultConfig {
        self.inner.lock().0.clone()
    }

    /// How many faults (errors, lost responses, dropped watches) were injected since the cluster started.
    pub fn injected(&self) -> u64 {
        self.injected.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn count(&self) {
        self.injected.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Decides the fate of one request to `resource` (or one of its subresources).
    pub fn decide(&self, resource: &str, verb: Verb) -> Decision {
        self.decide_sub(resource, "", verb)
    }

    /// Decides the fate of one request to `resource`'s `subresource` (`""`: the resource itself).
    pub fn decide_sub(&self, resource: &str, subresource: &str, verb: Verb) -> Decision {
        let mut guard = self.inner.lock();
        let (config, rng) = &mut *guard;
        let Some(rule) = config.rules.iter().find(|r| r.matches(resource, subresource, verb)) else {
            return Decision::default();
        };
        let mut d = Decision {
            latency: rule.latency,
            ..Default::default()
        };
        let error = |code: u16| {
            let msg = format!("injected fault for {verb:?} {resource}").to_lowercase();
            match code {
                429 => ApiError::too_many_requests(msg),
                503 => ApiError::new(503, "ServiceUnavailable", msg, None),
                504 => ApiError::timeout(msg),
                _ => ApiError::internal(msg),
            }
        };
        if rule.error_rate > 0.0 && rng.f64() < rule.error_rate {
            d.error = Some(error(rule.error_code));
        } else if rule.lost_response_rate > 0.0 && rng.f64() < rule.lost_response_rate {
            d.lost_response = Some(error(if rule.error_code == 0 { 504 } else { rule.error_code }));
        }
        drop(guard);
        if d.error.is_some() || d.lost_response.is_some() {
            self.count();
        }
        d
    }

    /// Whether a watch on `resource` is cut after the event it just sent.
    pub fn drop_watch(&self, resource: &str) -> bool {
        let mut guard = self.inner.lock();
        let (config, rng) = &mut *guard;
        let cut = match config.rules.iter().find(|r| r.matches(resource, "", Verb::Watch)) {
            Some(rule) if rule.drop_watch_rate > 0.0 => rng.f64() < rule.drop_watch_rate,
            _ => false,
        };
        drop(guard);
        if cut {
            self.count();
        }
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(seed: u64) -> FaultConfig {
        FaultConfig {
            seed,
            rules: vec![FaultRule {
                resources: vec!["pods".into()],
                verbs: vec![Verb::Create],
                error_rate: 0.5,
                error_code: 429,
                ..Default::default()
            }],
        }
    }

    #[test]
    fn decisions_are_deterministic_by_seed() {
        let run = |seed| {
            let f = Faults::new(config(seed));
            (0..64)
                .map(|_| f.decide("pods", Verb::Create).error.is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let failures = run(7).iter().filter(|x| **x).count();
        assert!((16..=48).contains(&failures), "{failures}");
    }

    #[test]
    fn a_lost_response_comes_after_the_request_took_effect() {
        let f = Faults::new(FaultConfig {
            seed: 3,
            rules: vec![FaultRule {
                lost_response_rate: 1.0,
                ..Default::default()
            }],
        });
        let d = f.decide("pods", Verb::Create);
        assert!(d.error.is_none());
        assert_eq!(d.lost_response.map(|e| e.code()), Some(504));
    }

    #[test]
    fn rules_match_resource_and_verb() {
        let f = Faults::new(FaultConfig {
            rules: vec![FaultRule {
                error_rate: 1.0,
                ..config(1).rules[0].clone()
            }],
            seed: 1,
        });
        let e = f.decide("pods", Verb::Create).error.unwrap();
        assert_eq!(e.code(), 429);
        assert!(f.decide("pods", Verb::Get).error.is_none());
        assert!(f.decide("nodes", Verb::Create).error.is_none());
        f.clear();
        assert!(f.decide("pods", Verb::Create).error.is_none());
    }
}
