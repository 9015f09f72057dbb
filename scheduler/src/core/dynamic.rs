//! The per-pod path for pods whose feasibility or score depends on other pods or on storage: host
//! ports, inter-pod affinity and anti-affinity (their own terms and, symmetrically, existing pods'),
//! topology spread, volumes. Such a pod cannot share a class-wide ranking (a pod placed on one node
//! changes what every node of its domain may take), so each placement first computes a [`Prepared`]
//! state from the snapshot as it is now, pods placed earlier in the same cycle included (upstream's
//! PreFilter), then filters and scores every node of the domain (Filter, Score with normalization).
//! Everything else (resources, static filters, static scores) is the same as the shared path's.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::filters::DynamicSpec;
use super::filters::inter_pod_affinity::Term;
use super::filters::pod_topology_spread::{Constraint, Counted, defaults, system_default_constraints};
use super::filters::volumes::{self, Resolved};
use super::framework::Reject;
use super::scores::MAX_SCORE;
use super::snapshot::{DomainIndex, Eligible, Snapshot};

/// A topology spread constraint evaluated for one pod.
#[derive(Debug)]
struct SpreadState {
    max_skew: i64,
    hard: bool,
    index: std::sync::Arc<DomainIndex>,
    /// Domain id -> matching pods on its eligible nodes.
    counts: Vec<i64>,
    /// The lowest count over the domains with an eligible node (0 while fewer than minDomains exist).
    min: i64,
    /// 1 when the pod matches its own selector.
    self_match: i64,
    /// The score's per-constraint weight (upstream: `log(domains + 2)`).
    weight: f64,
}

/// What a pod's dynamic constraints need, computed once per placement attempt.
#[derive(Debug)]
pub(crate) struct Prepared {
    spec: std::sync::Arc<DynamicSpec>,
    namespace: String,
    /// Own required affinity: the term's domains and those allowed (`None`: waived).
    affinity: Vec<(std::sync::Arc<DomainIndex>, Option<Vec<bool>>)>,
    /// Own required anti-affinity: the term's domains and those forbidden.
    anti: Vec<(std::sync::Arc<DomainIndex>, Vec<bool>)>,
    /// Existing pods' required anti-affinity matching this pod: key -> forbidden values.
    existing_anti: Vec<(std::sync::Arc<DomainIndex>, Vec<bool>)>,
    spread: Vec<SpreadState>,
    /// Soft inter-pod affinity contributions: key -> value -> weight.
    soft_affinity: Vec<(std::sync::Arc<DomainIndex>, Vec<i64>)>,
    volumes: Vec<Resolved>,
    /// The pod cannot be placed anywhere (a missing claim, an unbound immediate claim).
    pub(crate) pod_error: Option<String>,
    /// The pod uses something this scheduler cannot honour: never placed, reported distinctly.
    pub(crate) unsupported: Option<String>,
    /// Its ResourceClaims, resolved.
    pub(crate) claims: Vec<crate::core::dra::ResolvedClaim>,
}

impl Snapshot {
    /// Placed, non-terminating pods selected by `selector` in namespaces accepted by `ns_ok`, with their
    /// node.
    fn placed_matching<'s>(
        &'s self,
        term_selector: &'s super::filters::pod_selector::PodSelector,
        mut ns_ok: impl FnMut(&str) -> bool + 's,
    ) -> impl Iterator<Item = (u32, u32)> + 's {
        let candidates: Box<dyn Iterator<Item = u32> + 's> = match term_selector.equality() {
            Some((k, v)) => Box::new(
                self.pods_by_label
                    .get(&(k.to_string(), v.to_string()))
                    .into_iter()
                    .flatten()
                    .copied(),
            ),
            None if term_selector.is_null() => Box::new(std::iter::empty()),
            None => Box::new(self.pod_ids()),
        };
        candidates.filter_map(move |pid| {
            let p = self.pod(pid);
            let node = p.placed_node()?;
            (!p.terminating && ns_ok(&p.key.namespace) && term_selector.matches(&p.labels)).then_some((pid, node))
        })
    }

    fn ns_labels(&self, ns: &str) -> Option<BTreeMap<String, String>> {
        self.storage.namespaces.get(ns).cloned()
    }

    fn term_matches_pod(&self, term: &Term, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        term.namespaces.contains(namespace, |n| self.ns_labels(n)) && term.selector.matches(labels)
    }

    /// The pods placed on a node now (bound, assumed or placed in the simulation), not removed.
    pub(crate) fn pods_on(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        let n = self.node(node);
        n.pods.iter().chain(n.sim_pods.iter()).copied().filter(move |p| {
            let pi = self.pod(*p);
            !pi.sim_removed && pi.placed_node() == Some(node)
        })
    }

    /// Whether pod `pid` takes the per-pod path.
    pub(crate) fn needs_dynamic(&self, pid: u32) -> bool {
        let p = self.pod(pid);
        p.dynamic.is_some()
            || !p.claims.is_empty()
            || self
                .affinity_pods
                .iter()
                .any(|q| *q != pid && self.pod(*q).placed_node().is_some())
    }

    /// The fewest free devices the unallocated ones of `claims` need in all (an `All` request counts
    /// one): nodes with fewer are left out of a pod's ranking (`Snapshot::has_free_devices`); the
    /// allocator still decides each node the pod is tried on.
    pub(crate) fn devices_needed(&self, claims: &[crate::core::dra::ResolvedClaim]) -> usize {
        let mut need = 0usize;
        for r in claims {
            let Some(c) = self.dra.claim(r.id) else { continue };
            if c.allocated() {
                continue;
            }
            for req in &c.requests {
                let fewest = req
                    .alternatives
                    .iter()
                    .map(|a| a.count.map_or(1, |n| n as usize))
                    .min()
                    .unwrap_or(0);
                need = need.saturating_add(fewest);
            }
        }
        need
    }

    /// Computes `pid`'s dynamic state (upstream's PreFilter for the dynamic plugins).
    pub(crate) fn prepare_dynamic(&self, pid: u32) -> Prepared {
        let p = self.pod(pid);
        let spec = p.dynamic.clone().unwrap_or_default();
        let namespace = p.key.namespace.clone();
        let labels = &p.labels;

        // Own required affinity.
        let mut affinity = Vec::new();
        let mut any_match = false;
        for t in &spec.affinity.required {
            let index = self.domains_of(&t.key);
            let mut allowed = vec![false; index.values.len()];
            for (q, n) in self.placed_matching(&t.selector, |ns| t.namespaces.contains(ns, |n| self.ns_labels(n))) {
                if q != pid
                    && let Some(d) = index.domain(n)
                {
                    allowed[d] = true;
                    any_match = true;
                }
            }
            affinity.push((index, Some(allowed)));
        }
        if !any_match
            && !spec.affinity.required.is_empty()
            && spec
                .affinity
                .required
                .iter()
                .all(|t| self.term_matches_pod(t, &namespace, labels))
        {
            // The first pod of a group that wants to be together: nothing matches yet, it matches itself.
            for a in &mut affinity {
                a.1 = None;
            }
        }
        // Own required anti-affinity.
        let anti = spec
            .affinity
            .anti_required
            .iter()
            .map(|t| {
                let index = self.domains_of(&t.key);
                let mut forbidden = vec![false; index.values.len()];
                for (q, n) in self.placed_matching(&t.selector, |ns| t.namespaces.contains(ns, |n| self.ns_labels(n))) {
                    if q != pid
                        && let Some(d) = index.domain(n)
                    {
                        forbidden[d] = true;
                    }
                }
                (index, forbidden)
            })
            .collect();
        // Existing pods' terms towards this pod: required anti-affinity (filter), preferred terms (unless
        // `ignorePreferredTermsOfExistingPods`) and required affinity (score, `hardPodAffinityWeight`).
        let mut existing_anti: Vec<(std::sync::Arc<DomainIndex>, Vec<bool>)> = Vec::new();
        let mut soft_affinity: Vec<(std::sync::Arc<DomainIndex>, Vec<i64>)> = Vec::new();
        // Adds weight `w` to the domain of `node` for `key` (a key gets an entry once a node has it).
        let add_soft = |soft: &mut Vec<(std::sync::Arc<DomainIndex>, Vec<i64>)>, key: &str, node: u32, w: i64| {
            let at = match soft.iter().position(|(i, _)| i.key == key) {
                Some(at) => at,
                None => {
                    let index = self.domains_of(key);
                    if index.domain(node).is_none() {
                        return;
                    }
                    let weights = vec![0; index.values.len()];
                    soft.push((index, weights));
                    soft.len() - 1
                }
            };
            let (index, weights) = &mut soft[at];
            if let Some(d) = index.domain(node) {
                weights[d] = weights[d].saturating_add(w);
            }
        };
        for &q in &self.affinity_pods {
            if q == pid {
                continue;
            }
            let qi = self.pod(q);
            let (Some(node), false) = (qi.placed_node(), qi.terminating) else {
                continue;
            };
            let Some(qd) = qi.dynamic.as_ref() else { continue };
            for t in &qd.affinity.anti_required {
                if !self.term_matches_pod(t, &namespace, labels) {
                    continue;
                }
                let at = match existing_anti.iter().position(|(i, _)| i.key == t.key) {
                    Some(at) => at,
                    None => {
                        let index = self.domains_of(&t.key);
                        let forbidden = vec![false; index.values.len()];
                        existing_anti.push((index, forbidden));
                        existing_anti.len() - 1
                    }
                };
                let (index, forbidden) = &mut existing_anti[at];
                if let Some(d) = index.domain(node) {
                    forbidden[d] = true;
                }
            }
            let super::snapshot::InterPodArgs(hard_weight, ignore_preferred) = self.inter_pod_args;
            let preferred: &[_] = if ignore_preferred { &[] } else { &qd.affinity.preferred };
            for (w, t) in preferred
                .iter()
                .map(|(w, t)| (*w, t))
                .chain(qd.affinity.required.iter().map(|t| (hard_weight, t)))
            {
                if self.term_matches_pod(t, &namespace, labels) {
                    add_soft(&mut soft_affinity, &t.key, node, w);
                }
            }
        }
        // Own preferred terms.
        for (w, t) in &spec.affinity.preferred {
            for (q, n) in self.placed_matching(&t.selector, |ns| t.namespaces.contains(ns, |x| self.ns_labels(x))) {
                if q == pid {
                    continue;
                }
                add_soft(&mut soft_affinity, &t.key, n, *w);
            }
        }
        // Topology spread: the pod's own constraints, else the cluster defaults for pods of a controller.
        let spread = self
            .spread_constraints(pid)
            .iter()
            .map(|c| self.spread_state(pid, c))
            .collect();
        // Volumes.
        // ResourceClaims (DynamicResources' PreFilter).
        let (claims, claim_problem) = if p.claims.is_empty() {
            (Vec::new(), None)
        } else {
            match self.resolve_claims(pid) {
                Ok(c) => (c, None),
                Err(e) => (Vec::new(), Some(e)),
            }
        };
        let unsupported = match &claim_problem {
            Some(crate::core::dra::ClaimProblem::Unsupported(m)) => Some(m.clone()),
            _ => None,
        };
        let (volumes, pod_error) = match volumes::prefilter(&self.storage, &namespace, &spec.claims) {
            Ok(v) => (v, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        let pod_error = pod_error.or(match claim_problem {
            Some(crate::core::dra::ClaimProblem::Waiting(m)) => Some(m),
            _ => None,
        });
        Prepared {
            spec,
            namespace,
            affinity,
            anti,
            existing_anti,
            spread,
            soft_affinity,
            volumes,
            pod_error,
            unsupported,
            claims,
        }
    }

    /// The spread constraints of pod `pid`: its own, else the cluster defaults for pods of a controller.
    fn spread_constraints(&self, pid: u32) -> std::borrow::Cow<'_, [Constraint]> {
        let p = self.pod(pid);
        let Some(spec) = p.dynamic.as_ref() else {
            return std::borrow::Cow::Owned(Vec::new());
        };
        if !spec.spread.is_empty() {
            return std::borrow::Cow::Borrowed(spec.spread.as_slice());
        }
        let d = self.default_spread.clone().unwrap_or_else(system_default_constraints);
        std::borrow::Cow::Owned(defaults(&d, spec.owner.as_ref().map(|(u, k)| (u.as_str(), k.as_str()))))
    }

    /// [`Snapshot::prepare_dynamic`] with the spread constraints' indexes built first.
    pub(crate) fn prepare_dynamic_indexed(&mut self, pid: u32) -> Prepared {
        self.ensure_spread(pid);
        self.prepare_dynamic(pid)
    }

    /// Builds (once per node epoch) the domain indexes and eligible nodes pod `pid`'s PreFilter reads
    /// (its spread constraints, the inter-pod terms' keys), so it counts pods without walking every
    /// node.
    fn ensure_spread(&mut self, pid: u32) {
        if self.pod(pid).dynamic.is_none() && self.affinity_pods.is_empty() {
            return;
        }
        let epoch = self.node_epoch;
        let sid = self.classes.classes[self.pod(pid).class as usize].static_id;
        let wanted: Vec<(String, bool, bool)> = self
            .spread_constraints(pid)
            .iter()
            .map(|c| (c.key.clone(), c.honor_affinity, c.honor_taints))
            .collect();
        // Inter-pod terms' keys: the pod's own and those of every pod with terms (`affinity_keys`).
        let keys: Vec<String> = self
            .affinity_keys
            .iter()
            .cloned()
            .chain(wanted.iter().map(|w| w.0.clone()))
            .collect();
        for key in keys {
            if self.spread_index.get(&key).is_none_or(|(e, _)| *e != epoch) {
                let index = std::sync::Arc::new(DomainIndex::build(self, &key));
                self.spread_index.insert(key, (epoch, index));
            }
        }
        for (key, honor_affinity, honor_taints) in wanted {
            let _ = key;
            let k = (sid, honor_affinity, honor_taints);
            if self.spread_eligible.get(&k).is_none_or(|(e, _)| *e != epoch) {
                let eligible = std::sync::Arc::new(self.eligible(sid, honor_affinity, honor_taints));
                self.spread_eligible.insert(k, (epoch, eligible));
            }
        }
    }

    /// The nodes a constraint with these policies counts for pods of static class `sid`.
    fn eligible(&self, sid: u32, honor_affinity: bool, honor_taints: bool) -> Eligible {
        let static_spec = &self.classes.statics[sid as usize].spec;
        let mut out = vec![false; self.node_slots()];
        for &n in &self.node_order {
            let view = self.node(n).view();
            let affinity_ok = !honor_affinity || static_spec.affinity.filter(&view).is_ok();
            let taints_ok = !honor_taints || static_spec.tolerations.filter(&view).is_ok();
            let ok = affinity_ok && taints_ok;
            if let Some(slot) = out.get_mut(n as usize) {
                *slot = ok;
            }
        }
        out
    }

    /// The domains of topology key `key`: the cached index (`ensure_spread`), or built here.
    fn domains_of(&self, key: &str) -> std::sync::Arc<DomainIndex> {
        match self.spread_index.get(key) {
            Some((e, i)) if *e == self.node_epoch => i.clone(),
            _ => std::sync::Arc::new(DomainIndex::build(self, key)),
        }
    }

    fn spread_state(&self, pid: u32, c: &Constraint) -> SpreadState {
        let p = self.pod(pid);
        let sid = self.classes.classes[p.class as usize].static_id;
        let epoch = self.node_epoch;
        // The cached index and eligible nodes (`ensure_spread`), or built here.
        let index = self.domains_of(&c.key);
        let built;
        let eligible: &Eligible = match self.spread_eligible.get(&(sid, c.honor_affinity, c.honor_taints)) {
            Some((e, v)) if *e == epoch => v,
            _ => {
                built = self.eligible(sid, c.honor_affinity, c.honor_taints);
                &built
            }
        };
        // Domains with an eligible node.
        let mut present = vec![false; index.values.len()];
        for &n in &self.node_order {
            if eligible.get(n as usize).copied().unwrap_or(false)
                && let Some(d) = index.domain(n)
            {
                present[d] = true;
            }
        }
        let mut counts = vec![0i64; index.values.len()];
        let mut count_pod = |q: u32, n: u32| {
            if q != pid
                && eligible.get(n as usize).copied().unwrap_or(false)
                && let Some(d) = index.domain(n)
            {
                counts[d] += 1;
            }
        };
        let self_match = match &c.counted {
            Counted::Selector(sel) => {
                let ns = p.key.namespace.clone();
                for (q, n) in self.placed_matching(sel, move |x| x == ns) {
                    count_pod(q, n);
                }
                i64::from(sel.matches(&p.labels))
            }
            Counted::SameOwner(uid) => {
                for q in self.pod_ids() {
                    let qi = self.pod(q);
                    let same = qi
                        .dynamic
                        .as_ref()
                        .and_then(|d| d.owner.as_ref())
                        .is_some_and(|(u, _)| u == uid);
                    if same
                        && !qi.terminating
                        && qi.key.namespace == p.key.namespace
                        && let Some(n) = qi.placed_node()
                    {
                        count_pod(q, n);
                    }
                }
                1
            }
        };
        let domains = present.iter().filter(|x| **x).count() as i64;
        let min = if c.min_domains.is_some_and(|m| domains < m) {
            0
        } else {
            counts
                .iter()
                .zip(&present)
                .filter(|(_, p)| **p)
                .map(|(c, _)| *c)
                .min()
                .unwrap_or(0)
        };
        SpreadState {
            max_skew: c.max_skew,
            hard: c.hard,
            index,
            counts,
            min,
            self_match,
            weight: ((domains + 2) as f64).ln(),
        }
    }
}

impl Prepared {
    /// The dynamic filters on one node, in upstream's plugin order.
    pub(crate) fn check(&self, snap: &Snapshot, node: u32) -> Result<(), Reject> {
        let n = snap.node(node);
        let view = n.view();
        if !self.spec.ports.is_empty() {
            for q in snap.pods_on(node) {
                if let Some(qd) = snap.pod(q).dynamic.as_ref()
                    && qd.ports.iter().any(|a| self.spec.ports.iter().any(|b| a.clashes(b)))
                {
                    return Err(Reject::NodePorts);
                }
            }
        }
        if !self.volumes.is_empty() {
            let mut on_node: HashMap<String, BTreeSet<(String, String)>> = HashMap::new();
            if snap.storage.csi_limits.contains_key(&n.name) {
                for q in snap.pods_on(node) {
                    let qi = snap.pod(q);
                    for claim in qi.dynamic.iter().flat_map(|d| d.claims.iter()) {
                        let key = (qi.key.namespace.clone(), claim.clone());
                        let driver = snap.storage.claims.get(&key).and_then(|c| {
                            c.volume_name
                                .as_ref()
                                .and_then(|v| snap.storage.volumes.get(v))
                                .and_then(|v| v.csi_driver.clone())
                                .or_else(|| {
                                    c.storage_class
                                        .as_ref()
                                        .and_then(|s| snap.storage.classes.get(s))
                                        .map(|k| k.provisioner.clone())
                                })
                        });
                        if let Some(d) = driver {
                            on_node.entry(d).or_default().insert(key);
                        }
                    }
                }
            }
            volumes::filter(&snap.storage, &self.namespace, &self.volumes, &view, &on_node)?;
        }
        for s in self.spread.iter().filter(|s| s.hard) {
            let Some(d) = s.index.domain(node) else {
                return Err(Reject::SpreadMissingLabel);
            };
            let count = s.counts.get(d).copied().unwrap_or(0);
            if count + s.self_match - s.min > s.max_skew {
                return Err(Reject::Spread);
            }
        }
        for (index, allowed) in &self.affinity {
            if let Some(allowed) = allowed
                && !index
                    .domain(node)
                    .is_some_and(|d| allowed.get(d).copied().unwrap_or(false))
            {
                return Err(Reject::PodAffinity);
            }
        }
        for (index, forbidden) in &self.anti {
            if index
                .domain(node)
                .is_some_and(|d| forbidden.get(d).copied().unwrap_or(false))
            {
                return Err(Reject::PodAntiAffinity);
            }
        }
        for (index, forbidden) in &self.existing_anti {
            if index
                .domain(node)
                .is_some_and(|d| forbidden.get(d).copied().unwrap_or(false))
            {
                return Err(Reject::ExistingAntiAffinity);
            }
        }
        Ok(())
    }

    /// The raw InterPodAffinity score of a node (normalized across nodes by the caller).
    pub(crate) fn affinity_raw(&self, node: u32) -> i64 {
        self.soft_affinity
            .iter()
            .filter_map(|(index, weights)| index.domain(node).and_then(|d| weights.get(d)))
            .fold(0i64, |a, w| a.saturating_add(*w))
    }

    /// The raw PodTopologySpread score of a node (lower is better; `None` when the node lacks a key).
    pub(crate) fn spread_raw(&self, node: u32) -> Option<f64> {
        let mut total = 0.0;
        let mut any = false;
        for s in self.spread.iter().filter(|s| !s.hard) {
            any = true;
            let d = s.index.domain(node)?;
            let count = s.counts.get(d).copied().unwrap_or(0);
            total += (count + s.self_match) as f64 * s.weight + (s.max_skew - 1) as f64;
        }
        any.then_some(total)
    }

    /// Whether the pod has soft constraints to score.
    pub(crate) fn scores_anything(&self) -> bool {
        !self.soft_affinity.is_empty() || self.spread.iter().any(|s| !s.hard)
    }
}

/// Normalizes raw InterPodAffinity scores between the lowest and highest node (upstream's
/// `NormalizeScore`).
pub(crate) fn normalize_affinity(raw: &[i64]) -> Vec<i64> {
    let (min, max) = (
        raw.iter().copied().min().unwrap_or(0),
        raw.iter().copied().max().unwrap_or(0),
    );
    raw.iter()
        .map(|r| {
            if max == min {
                0
            } else {
                (r - min).saturating_mul(MAX_SCORE) / (max - min)
            }
        })
        .collect()
}

/// Normalizes raw PodTopologySpread scores (lower raw is better): `MAX * (max + min - s) / max`, nodes
/// without the constraint's key score 0.
pub(crate) fn normalize_spread(raw: &[Option<f64>]) -> Vec<i64> {
    let present: Vec<f64> = raw.iter().flatten().copied().collect();
    let max = present.iter().copied().fold(f64::MIN, f64::max);
    let min = present.iter().copied().fold(f64::MAX, f64::min);
    raw.iter()
        .map(|r| match r {
            None => 0,
            Some(_) if max <= 0.0 => MAX_SCORE,
            Some(s) => ((MAX_SCORE as f64) * (max + min - s) / max).round() as i64,
        })
        .collect()
}
