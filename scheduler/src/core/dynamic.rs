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
    /// Which pods count (see [`Snapshot::add_placed`]).
    counted: Counted,
    /// The nodes the constraint counts pods on.
    eligible: std::sync::Arc<Eligible>,
    /// Domain id -> whether it has an eligible node.
    present: Vec<bool>,
    /// Fewer domains than `minDomains` have an eligible node: the global minimum is 0.
    below_min_domains: bool,
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
    /// Own required affinity: the term's domains and those holding a matching pod.
    affinity: Vec<(std::sync::Arc<DomainIndex>, Vec<bool>)>,
    /// Some placed pod matches a required affinity term.
    affinity_matched: bool,
    /// The pod matches all its required affinity terms itself: while no placed pod matches any, they
    /// are waived (the first pod of a group that wants to be together).
    affinity_self_match: bool,
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
        let mut affinity_matched = false;
        for t in &spec.affinity.required {
            let index = self.domains_of(&t.key);
            let mut allowed = vec![false; index.values.len()];
            for (q, n) in self.placed_matching(&t.selector, |ns| t.namespaces.contains(ns, |n| self.ns_labels(n))) {
                if q != pid
                    && let Some(d) = index.domain(n)
                {
                    allowed[d] = true;
                    affinity_matched = true;
                }
            }
            affinity.push((index, allowed));
        }
        let affinity_self_match = !spec.affinity.required.is_empty()
            && spec
                .affinity
                .required
                .iter()
                .all(|t| self.term_matches_pod(t, &namespace, labels));
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
        // Which of a spec's terms select this pod, once per spec (pods of one template share one:
        // `Snapshot::intern_dynamic`): anti-affinity terms, then preferred and required affinity terms.
        let super::snapshot::InterPodArgs(hard_weight, ignore_preferred) = self.inter_pod_args;
        let mut selects: HashMap<*const DynamicSpec, (Vec<bool>, Vec<bool>)> = HashMap::new();
        for &q in &self.affinity_pods {
            if q == pid {
                continue;
            }
            let qi = self.pod(q);
            let (Some(node), false) = (qi.placed_node(), qi.terminating) else {
                continue;
            };
            let Some(qd) = qi.dynamic.as_ref() else { continue };
            let preferred: &[_] = if ignore_preferred { &[] } else { &qd.affinity.preferred };
            let (anti_selects, soft_selects) = selects.entry(std::sync::Arc::as_ptr(qd)).or_insert_with(|| {
                let anti = qd
                    .affinity
                    .anti_required
                    .iter()
                    .map(|t| self.term_matches_pod(t, &namespace, labels))
                    .collect();
                let soft = preferred
                    .iter()
                    .map(|(_, t)| t)
                    .chain(&qd.affinity.required)
                    .map(|t| self.term_matches_pod(t, &namespace, labels))
                    .collect();
                (anti, soft)
            });
            for (t, _) in qd
                .affinity
                .anti_required
                .iter()
                .zip(anti_selects.iter())
                .filter(|(_, m)| **m)
            {
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
            for ((w, t), _) in preferred
                .iter()
                .map(|(w, t)| (*w, t))
                .chain(qd.affinity.required.iter().map(|t| (hard_weight, t)))
                .zip(soft_selects.iter())
                .filter(|(_, m)| **m)
            {
                self.add_soft(&mut soft_affinity, &t.key, node, w);
            }
        }
        // Own preferred terms.
        for (w, t) in &spec.affinity.preferred {
            for (q, n) in self.placed_matching(&t.selector, |ns| t.namespaces.contains(ns, |x| self.ns_labels(x))) {
                if q == pid {
                    continue;
                }
                self.add_soft(&mut soft_affinity, &t.key, n, *w);
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
            affinity_matched,
            affinity_self_match,
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
        let eligible: std::sync::Arc<Eligible> =
            match self.spread_eligible.get(&(sid, c.honor_affinity, c.honor_taints)) {
                Some((e, v)) if *e == epoch => v.clone(),
                _ => std::sync::Arc::new(self.eligible(sid, c.honor_affinity, c.honor_taints)),
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
        let mut state = SpreadState {
            max_skew: c.max_skew,
            hard: c.hard,
            index,
            counted: c.counted.clone(),
            eligible,
            below_min_domains: c.min_domains.is_some_and(|m| domains < m),
            present,
            counts,
            min: 0,
            self_match,
            weight: ((domains + 2) as f64).ln(),
        };
        state.update_min();
        state
    }

    /// Updates `prepared`, the dynamic state of pending pod `pid`, for pod `q` placed on `node` since
    /// it was computed (upstream's `PreFilterExtensions.AddPod` for InterPodAffinity and
    /// PodTopologySpread): the result equals [`Snapshot::prepare_dynamic`] run now. `pid` only gives the
    /// namespace and labels the state was computed for, so the state of one pod serves another pending
    /// pod of the same class with the same namespace, labels and constraints (see
    /// `Cycle::prepared_for`).
    pub(crate) fn add_placed(&self, prepared: &mut Prepared, pid: u32, q: u32, node: u32) {
        let (p, qi) = (self.pod(pid), self.pod(q));
        if qi.terminating {
            return;
        }
        let term_selects_q = |t: &Term| {
            t.selector.matches(&qi.labels) && t.namespaces.contains(&qi.key.namespace, |n| self.ns_labels(n))
        };
        let spec = prepared.spec.clone();
        for (t, (index, allowed)) in spec.affinity.required.iter().zip(&mut prepared.affinity) {
            if term_selects_q(t)
                && let Some(d) = index.domain(node)
            {
                allowed[d] = true;
                prepared.affinity_matched = true;
            }
        }
        for (t, (index, forbidden)) in spec.affinity.anti_required.iter().zip(&mut prepared.anti) {
            if term_selects_q(t)
                && let Some(d) = index.domain(node)
            {
                forbidden[d] = true;
            }
        }
        // `q`'s own terms towards the pod, as `prepare_dynamic` reads them from every pod with terms.
        if let Some(qd) = qi.dynamic.as_ref().filter(|_| self.affinity_pods.contains(&q)) {
            for t in &qd.affinity.anti_required {
                if !self.term_matches_pod(t, &prepared.namespace, &p.labels) {
                    continue;
                }
                let at = match prepared.existing_anti.iter().position(|(i, _)| i.key == t.key) {
                    Some(at) => at,
                    None => {
                        let index = self.domains_of(&t.key);
                        let forbidden = vec![false; index.values.len()];
                        prepared.existing_anti.push((index, forbidden));
                        prepared.existing_anti.len() - 1
                    }
                };
                let (index, forbidden) = &mut prepared.existing_anti[at];
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
                if self.term_matches_pod(t, &prepared.namespace, &p.labels) {
                    self.add_soft(&mut prepared.soft_affinity, &t.key, node, w);
                }
            }
        }
        for (w, t) in &spec.affinity.preferred {
            if term_selects_q(t) {
                self.add_soft(&mut prepared.soft_affinity, &t.key, node, *w);
            }
        }
        for s in &mut prepared.spread {
            let counts = match &s.counted {
                Counted::Selector(sel) => qi.key.namespace == p.key.namespace && sel.matches(&qi.labels),
                Counted::SameOwner(uid) => {
                    qi.key.namespace == p.key.namespace
                        && qi
                            .dynamic
                            .as_ref()
                            .and_then(|d| d.owner.as_ref())
                            .is_some_and(|(u, _)| u == uid)
                }
            };
            if counts
                && s.eligible.get(node as usize).copied().unwrap_or(false)
                && let Some(d) = s.index.domain(node)
            {
                s.counts[d] += 1;
                s.update_min();
            }
        }
    }

    /// Adds weight `w` to the domain of `node` for `key` (a key gets an entry once a node has it).
    fn add_soft(&self, soft: &mut Vec<(std::sync::Arc<DomainIndex>, Vec<i64>)>, key: &str, node: u32, w: i64) {
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
    }
}

impl SpreadState {
    /// The lowest count over the domains with an eligible node (0 below `minDomains`).
    fn update_min(&mut self) {
        self.min = if self.below_min_domains {
            0
        } else {
            self.counts
                .iter()
                .zip(&self.present)
                .filter(|(_, p)| **p)
                .map(|(c, _)| *c)
                .min()
                .unwrap_or(0)
        };
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
        let waived = !self.affinity_matched && self.affinity_self_match;
        for (index, allowed) in self.affinity.iter().filter(|_| !waived) {
            if !index
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::core::journal::Journal;
    use crate::core::model::PodKey;
    use crate::core::testing::{node, pod_with};

    /// What a [`Prepared`] decides with, in a form that does not depend on the order entries were made.
    type Summary = (
        Vec<Vec<bool>>,
        bool,
        Vec<Vec<bool>>,
        BTreeMap<String, Vec<bool>>,
        BTreeMap<String, Vec<i64>>,
        Vec<(Vec<i64>, i64, i64)>,
    );

    fn summary(p: &Prepared) -> Summary {
        (
            p.affinity.iter().map(|(_, a)| a.clone()).collect(),
            !p.affinity_matched && p.affinity_self_match,
            p.anti.iter().map(|(_, a)| a.clone()).collect(),
            p.existing_anti
                .iter()
                .map(|(i, f)| (i.key.clone(), f.clone()))
                .collect(),
            p.soft_affinity
                .iter()
                .map(|(i, w)| (i.key.clone(), w.clone()))
                .collect(),
            p.spread
                .iter()
                .map(|s| (s.counts.clone(), s.min, s.self_match))
                .collect(),
        )
    }

    /// A pod of kind `k`: labels `app` in {a, b} (or none), and a mix of required / preferred
    /// (anti-)affinity by hostname or zone, hard / soft spread by selector, or the default spread of a
    /// controller owner.
    fn pod(name: &str, k: u8) -> k8s_openapi::api::core::v1::Pod {
        let mut p = serde_json::to_value(pod_with("ns", name, None, &[("cpu", "100m")])).unwrap();
        let app = ["a", "b", ""][usize::from(k % 3)];
        if !app.is_empty() {
            p["metadata"]["labels"] = json!({"app": app});
        }
        let key = if k & 4 != 0 { "zone" } else { "kubernetes.io/hostname" };
        let term = |v: &str| json!({"labelSelector": {"matchLabels": {"app": v}}, "topologyKey": key});
        let mut affinity = serde_json::Map::new();
        if k & 8 != 0 {
            affinity.insert(
                "podAntiAffinity".into(),
                json!({"requiredDuringSchedulingIgnoredDuringExecution": [term("a")],
                       "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "podAffinityTerm": term("b")}]}),
            );
        }
        if k & 16 != 0 {
            affinity.insert(
                "podAffinity".into(),
                json!({"requiredDuringSchedulingIgnoredDuringExecution": [term(if app.is_empty() { "a" } else { app })],
                       "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term("a")}]}),
            );
        }
        if !affinity.is_empty() {
            p["spec"]["affinity"] = serde_json::Value::Object(affinity);
        }
        match (k >> 5) & 3 {
            1 => {
                p["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "a"}}, "minDomains": 3}]);
            }
            2 => {
                p["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 2, "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}]);
            }
            3 => {
                p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                    "uid": "rs-1", "controller": true}]);
            }
            _ => {}
        }
        serde_json::from_value(p).unwrap()
    }

    proptest! {
        /// A pending pod's dynamic state kept up to date by [`Snapshot::add_placed`] as other pods are
        /// placed equals the state computed anew, for the pod it was computed for and for another
        /// pending pod of the same template.
        #[test]
        fn a_prepared_state_kept_up_to_date_equals_a_fresh_one(
            nodes in 1usize..7,
            running in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..10),
            template in any::<u8>(),
            placed in proptest::collection::vec((any::<u8>(), any::<u8>()), 1..10),
        ) {
            let mut snap = Snapshot::new();
            for n in 0..nodes {
                let zone = format!("z{}", n % 3);
                let labels: &[(&str, &str)] = if n == 4 { &[] } else { &[("zone", zone.as_str())] };
                snap.upsert_node(&node(&format!("n{n}"), "8", "8Gi", labels)).unwrap();
            }
            for (i, (k, n)) in running.iter().enumerate() {
                let mut p = pod(&format!("r{i}"), *k);
                p.spec.as_mut().unwrap().node_name = Some(format!("n{}", usize::from(*n) % nodes));
                p.status = Some(k8s_openapi::api::core::v1::PodStatus { phase: Some("Running".into()), ..Default::default() });
                snap.upsert_pod(&p).unwrap();
            }
            for name in ["t0", "t1"] {
                snap.upsert_pod(&pod(name, template)).unwrap();
            }
            for (i, (k, _)) in placed.iter().enumerate() {
                snap.upsert_pod(&pod(&format!("q{i}"), *k)).unwrap();
            }
            let id = |snap: &Snapshot, name: &str| snap.pod_id(&PodKey::new("ns", name)).unwrap();
            let (t0, t1) = (id(&snap, "t0"), id(&snap, "t1"));
            let mut kept = snap.prepare_dynamic_indexed(t0);
            let mut journal = Journal::new();
            for (i, (_, n)) in placed.iter().enumerate() {
                let q = id(&snap, &format!("q{i}"));
                let node = snap.node_id(&format!("n{}", usize::from(*n) % nodes)).unwrap();
                journal.assume_id(&mut snap, q, node);
                snap.add_placed(&mut kept, t0, q, node);
                prop_assert_eq!(summary(&kept), summary(&snap.prepare_dynamic_indexed(t0)), "after q{}", i);
            }
            // t0 placed: the state serves t1.
            let node = snap.node_id("n0").unwrap();
            journal.assume_id(&mut snap, t0, node);
            snap.add_placed(&mut kept, t0, t0, node);
            prop_assert_eq!(summary(&kept), summary(&snap.prepare_dynamic_indexed(t1)));
            journal.revert_all(&mut snap);
        }
    }
}
