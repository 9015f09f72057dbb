//! The API server's request counter, as kube-apiserver's `apiserver_request_total`: one count per served
//! resource request, by the client's `User-Agent`, verb, group, resource and subresource. It shows how much
//! each component costs the API server (requests per pod of a benchmark) without a metrics pipeline.

use std::collections::BTreeMap;

use parking_lot::Mutex;

/// What one count is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKey {
    /// The client's `User-Agent` up to the first `/` (`kube-scheduler`, `kubectl`), empty when it sent none.
    pub client: String,
    /// kube-apiserver's verb label: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `DELETE`,
    /// `DELETECOLLECTION`.
    pub verb: &'static str,
    /// The API group, empty for the core group.
    pub group: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource, empty for the resource itself.
    pub subresource: String,
}

/// The counts since the cluster started. Counting takes a lock of its own, never the state's.
#[derive(Debug, Default)]
pub struct RequestCounts(Mutex<BTreeMap<RequestKey, u64>>);

impl RequestCounts {
    /// Count one request.
    pub fn record(&self, key: RequestKey) {
        let mut counts = self.0.lock();
        let n = counts.entry(key).or_insert(0);
        *n = n.saturating_add(1);
    }

    /// Every count so far, ordered by key.
    pub fn snapshot(&self) -> Vec<(RequestKey, u64)> {
        self.0.lock().iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

/// The component name of a `User-Agent` header: what comes before the first `/` or space
/// (`kubectl/v1.37.0 (linux/amd64)` is `kubectl`), at most 64 bytes so that no client can grow the table's
/// keys without bound.
pub fn client_of(user_agent: Option<&str>) -> String {
    let ua = user_agent.unwrap_or("");
    let name = ua.split(['/', ' ']).next().unwrap_or("");
    let mut end = name.len().min(64);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_component_is_the_user_agent_before_its_version() {
        assert_eq!(
            client_of(Some("kubectl/v1.37.0 (linux/amd64) kubernetes/abc")),
            "kubectl"
        );
        assert_eq!(client_of(Some("kube-scheduler")), "kube-scheduler");
        assert_eq!(client_of(None), "");
        assert_eq!(client_of(Some(&"é".repeat(100))).len(), 64);
    }

    #[test]
    fn counts_add_up_per_key() {
        let counts = RequestCounts::default();
        let key = |verb| RequestKey {
            client: "kubectl".into(),
            verb,
            group: String::new(),
            resource: "pods".into(),
            subresource: String::new(),
        };
        counts.record(key("GET"));
        counts.record(key("GET"));
        counts.record(key("LIST"));
        let snap = counts.snapshot();
        assert_eq!(snap, vec![(key("GET"), 2), (key("LIST"), 1)]);
    }
}
