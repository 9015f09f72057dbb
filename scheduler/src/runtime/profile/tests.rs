use std::time::Duration;

use super::*;
use crate::core::{ScoreWeights, ScoringStrategy};
use crate::runtime::config::{LeaseConfig, RuntimeConfig};

fn load(text: &str) -> Result<SchedulerProfile, ProfileError> {
    SchedulerProfile::from_yaml(text)
}

fn err(text: &str) -> ProfileError {
    match load(text) {
        Ok(p) => panic!("expected an error, got {p:?}"),
        Err(e) => e,
    }
}

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

#[test]
fn an_empty_profile_is_upstreams_default_profile() {
    let p = load(&format!("{HEAD}profiles:\n- schedulerName: kwas-scheduler\n")).unwrap();
    assert_eq!(p.scheduler_names, vec!["kwas-scheduler"]);
    assert_eq!(p.scoring, ScoringStrategy::LeastAllocated);
    assert_eq!(p.weights, ScoreWeights::UPSTREAM);
    assert_eq!(
        p.args.scoring_resources,
        Some(vec![("cpu".to_string(), 1), ("memory".to_string(), 1)])
    );
    assert_eq!(p.args.default_spread_constraints, None);
    assert_eq!(p.args.hard_pod_affinity_weight, 1);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(p, SchedulerProfile::upstream_default(vec!["kwas-scheduler".into()]));

    // No profiles at all: one named default-scheduler, as upstream defaults it.
    let p = load(HEAD).unwrap();
    assert_eq!(p.scheduler_names, vec![DEFAULT_SCHEDULER_NAME]);
}

#[test]
fn the_bundled_profiles_load() {
    for (file, text) in [
        (
            "upstream-default.yaml",
            include_str!("../../../../deploy/scheduler/profiles/upstream-default.yaml"),
        ),
        (
            "kwas-bin-packing.yaml",
            include_str!("../../../../deploy/scheduler/profiles/kwas-bin-packing.yaml"),
        ),
    ] {
        let p = load(text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(p.scheduler_names, vec!["kwas-scheduler"], "{file}");
        assert!(p.warnings.is_empty(), "{file}: {:?}", p.warnings);
    }
    let kwas = load(include_str!(
        "../../../../deploy/scheduler/profiles/kwas-bin-packing.yaml"
    ))
    .unwrap();
    assert_eq!(kwas.scoring, ScoringStrategy::MostAllocated);
    assert_eq!(kwas.weights, ScoreWeights::default());
    assert_eq!(
        kwas.args.scoring_resources,
        Some(vec![
            ("cpu".into(), 1),
            ("memory".into(), 1),
            ("nvidia.com/gpu".into(), 3)
        ])
    );
}

#[test]
fn score_plugins_weights_and_strategy() {
    let p = load(&format!(
        "{HEAD}profiles:
- schedulerName: kwas-scheduler
  plugins:
    score:
      disabled:
      - name: '*'
      enabled:
      - name: NodeResourcesFit
        weight: 5
      - name: PodTopologySpread
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
        - name: nvidia.com/gpu
          weight: 3
"
    ))
    .unwrap();
    assert_eq!(p.scoring, ScoringStrategy::MostAllocated);
    assert_eq!(
        p.weights,
        ScoreWeights {
            node_resources_fit: 5,
            balanced_allocation: 0,
            node_affinity: 0,
            taint_toleration: 0,
            inter_pod_affinity: 0,
            pod_topology_spread: 1,
        }
    );
    assert_eq!(
        p.args.scoring_resources,
        Some(vec![("cpu".to_string(), 1), ("nvidia.com/gpu".to_string(), 3)])
    );

    // multiPoint disables a score-only plugin and re-weights another.
    let p = load(&format!(
        "{HEAD}profiles:
- plugins:
    multiPoint:
      enabled:
      - name: TaintToleration
        weight: 7
      disabled:
      - name: NodeResourcesBalancedAllocation
      - name: ImageLocality
"
    ))
    .unwrap();
    assert_eq!(p.weights.taint_toleration, 7);
    assert_eq!(p.weights.balanced_allocation, 0);
    assert_eq!(p.weights.node_affinity, 2);
}

#[test]
fn spread_defaults_and_inter_pod_arguments() {
    let p = load(&format!(
        "{HEAD}profiles:
- schedulerName: a
  pluginConfig:
  - name: PodTopologySpread
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: PodTopologySpreadArgs
      defaultingType: List
      defaultConstraints:
      - maxSkew: 1
        topologyKey: kwas.dev/rack
        whenUnsatisfiable: DoNotSchedule
      - maxSkew: 2
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: 10
      ignorePreferredTermsOfExistingPods: true
"
    ))
    .unwrap();
    let d = p.args.default_spread_constraints.clone().unwrap();
    assert_eq!(d.len(), 2);
    assert!(d[0].hard && d[0].key == "kwas.dev/rack" && d[0].max_skew == 1);
    assert!(!d[1].hard);
    assert_eq!(p.args.hard_pod_affinity_weight, 10);
    assert!(p.args.ignore_preferred_terms_of_existing_pods);

    // An empty List turns the defaults off.
    let p = load(&format!(
        "{HEAD}profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n"
    ))
    .unwrap();
    assert_eq!(p.args.default_spread_constraints, Some(Vec::new()));
}

#[test]
fn what_cannot_be_honoured_is_an_error_naming_the_field() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "profiles:\n- plugins:\n    scor: {}\n",
            "profiles[0].plugins.scor",
            "unknown field `scor`",
        ),
        (
            "profiles:\n- plugins:\n    filter:\n      disabled:\n      - name: NodePorts\n",
            "profiles[0].plugins.filter.disabled[0].name",
            "Forbidden",
        ),
        (
            "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n",
            "profiles[0].plugins.multiPoint.disabled[0].name",
            "Forbidden",
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: Coscheduling\n",
            "profiles[0].plugins.score.enabled[0].name",
            "not an in-tree plugin",
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodePorts\n",
            "profiles[0].plugins.score.enabled[0].name",
            "not a score plugin",
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeAffinity\n        weight: -1\n",
            "profiles[0].plugins.score.enabled[0].weight",
            "must be a positive number",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.type",
            "Unsupported value",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        resources:\n        - name: cpu\n          weight: 101\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
            "range 1-100",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      ignoredResources: [example.com/foo]\n",
            "profiles[0].pluginConfig[0].args.ignoredResources",
            "Forbidden",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        typo: x\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.typo",
            "unknown field `typo`",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: zone\n        whenUnsatisfiable: DoNotSchedule\n",
            "profiles[0].pluginConfig[0].args.defaultConstraints",
            "\"System\"",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 0\n        topologyKey: zone\n        whenUnsatisfiable: DoNotSchedule\n",
            "profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew",
            "greater than zero",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: zone\n        whenUnsatisfiable: DoNotSchedule\n        labelSelector: {}\n",
            "profiles[0].pluginConfig[0].args.defaultConstraints[0].labelSelector",
            "Forbidden",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 101\n",
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
            "[0-100]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}\n",
            "profiles[0].pluginConfig[0].args.addedAffinity",
            "Forbidden",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodePorts\n    args:\n      x: 1\n",
            "profiles[0].pluginConfig[0].args",
            "takes no arguments",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n  - name: NodeResourcesFit\n",
            "profiles[0].pluginConfig[1].name",
            "Duplicate value",
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: a\n",
            "profiles[1].schedulerName",
            "Duplicate value",
        ),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    score:\n      disabled:\n      - name: NodeAffinity\n",
            "profiles[1]",
            "different plugins",
        ),
        ("extenders:\n- urlPrefix: http://x\n", "extenders", "Forbidden"),
        ("podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds", "range"),
        (
            "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
            "podMaxBackoffSeconds",
            "at least",
        ),
        (
            "leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 15s\n",
            "leaderElection.renewDeadline",
            "less than",
        ),
        (
            "leaderElection:\n  retryPeriod: soon\n",
            "leaderElection.retryPeriod",
            "positive duration",
        ),
        (
            "leaderElection:\n  resourceLock: endpoints\n",
            "leaderElection.resourceLock",
            "Unsupported value",
        ),
    ];
    for (body, path, detail) in cases {
        let e = err(&format!("{HEAD}{body}"));
        assert_eq!(e.path, *path, "{body}\n{e}");
        assert!(e.detail.contains(detail), "{body}\n{e}");
    }
    let e = err("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n");
    assert_eq!(e.path, "apiVersion");
    let e = err("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n");
    assert_eq!(e.path, "kind");
    let e = err("apiVersion: [\n");
    assert_eq!(e.path, "<file>");
    let e = err("- 1\n- 2\n");
    assert_eq!(e.path, "<file>");
}

#[test]
fn upstream_internals_are_accepted_with_a_warning() {
    let p = load(&format!(
        "{HEAD}parallelism: 16
percentageOfNodesToScore: 50
clientConnection:
  qps: 50
profiles:
- schedulerName: kwas-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args:
      minCandidateNodesPercentage: 10
      minCandidateNodesAbsolute: 100
"
    ))
    .unwrap();
    assert_eq!(p.warnings.len(), 4, "{:?}", p.warnings);
    assert!(p.warnings.iter().any(|w| w.contains("percentageOfNodesToScore")));
}

#[test]
fn several_profiles_with_the_same_settings_answer_for_every_name() {
    let p = load(&format!(
        "{HEAD}profiles:\n- schedulerName: kwas-scheduler\n- schedulerName: gang-scheduler\n"
    ))
    .unwrap();
    assert_eq!(p.scheduler_names, vec!["kwas-scheduler", "gang-scheduler"]);
}

#[test]
fn applying_a_profile_to_the_runtime_configuration() {
    let p = load(&format!(
        "{HEAD}podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 30
leaderElection:
  leaderElect: true
  resourceName: my-scheduler
  resourceNamespace: sched
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 4s
profiles:
- schedulerName: my-scheduler
"
    ))
    .unwrap();
    let mut c = RuntimeConfig {
        leader_election: Some(LeaseConfig::new("kwas-system", "kwas-scheduler", "me")),
        ..RuntimeConfig::default()
    };
    p.apply(&mut c);
    assert_eq!(c.scheduler_names, vec!["my-scheduler"]);
    assert_eq!(c.core.scoring, ScoringStrategy::LeastAllocated);
    assert_eq!(c.core.weights, ScoreWeights::UPSTREAM);
    assert_eq!(c.backoff.initial, Duration::from_secs(2));
    assert_eq!(c.backoff.max, Duration::from_secs(30));
    let lease = c.leader_election.unwrap();
    assert_eq!(
        (lease.namespace.as_str(), lease.name.as_str(), lease.identity.as_str()),
        ("sched", "my-scheduler", "me")
    );
    assert_eq!(lease.lease_duration, Duration::from_secs(30));
    assert_eq!(lease.renew_deadline, Duration::from_secs(20));
    assert_eq!(lease.retry_period, Duration::from_secs(4));

    let off = load(&format!("{HEAD}leaderElection:\n  leaderElect: false\n")).unwrap();
    let mut c = RuntimeConfig {
        leader_election: Some(LeaseConfig::new("kwas-system", "kwas-scheduler", "me")),
        ..RuntimeConfig::default()
    };
    off.apply(&mut c);
    assert!(c.leader_election.is_none());
}

mod props {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any weight a YAML integer can hold: accepted when positive (0 defaults to 1), an error
        /// naming the field otherwise; never a panic.
        #[test]
        fn plugin_weights_at_the_limits(w in prop_oneof![Just(i64::MIN), Just(-1i64), Just(0), Just(1), Just(i64::from(i32::MAX)), Just(i64::from(i32::MAX) + 1), Just(i64::MAX), any::<i64>()]) {
            let text = format!("{HEAD}profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeAffinity\n        weight: {w}\n");
            match load(&text) {
                Ok(p) => {
                    prop_assert!((0..=i64::from(i32::MAX)).contains(&w));
                    prop_assert_eq!(p.weights.node_affinity, w.max(1));
                }
                Err(e) => {
                    prop_assert!(!(0..=i64::from(i32::MAX)).contains(&w));
                    prop_assert!(e.path.starts_with("profiles[0].plugins.score.enabled[0]"), "{}", e);
                }
            }
        }

        /// Resource weights and skews at their type's limits never panic.
        #[test]
        fn arguments_at_the_limits(w in any::<i64>(), skew in any::<i64>(), hard in any::<i64>()) {
            let text = format!("{HEAD}profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        resources:
        - name: cpu
          weight: {w}
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: {skew}
        topologyKey: zone
        whenUnsatisfiable: DoNotSchedule
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: {hard}
");
            let ok = (1..=100).contains(&w) && skew > 0 && skew <= i64::from(i32::MAX) && (0..=100).contains(&hard);
            prop_assert_eq!(load(&text).is_ok(), ok);
        }
    }
}
