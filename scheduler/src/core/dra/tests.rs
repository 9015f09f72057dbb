use k8s_openapi::api::resource::v1::ResourceSlice;
use proptest::prelude::*;
use serde_json::json;

use super::cel::{self, Attr, DeviceView, Exprs, Match, precheck};
use super::*;

fn slice(name: &str, pool: &str, generation: i64, count: i64, devices: &[&str]) -> ResourceSlice {
    let devices: Vec<_> = devices.iter().map(|d| json!({"name": d})).collect();
    serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"driver": "d.example.com", "nodeName": "n1",
                 "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}, "devices": devices}}))
    .unwrap()
}

#[test]
fn only_complete_pools_of_the_newest_generation_count() {
    let mut s = DraState::default();
    s.upsert_slice(&slice("old", "p", 1, 1, &["a"]));
    s.upsert_slice(&slice("new-1", "p", 2, 2, &["b"]));
    s.prepare();
    assert!(
        s.devices.is_empty(),
        "generation 2 is incomplete (1 of 2 slices), generation 1 is stale"
    );
    s.upsert_slice(&slice("new-2", "p", 2, 2, &["c"]));
    s.prepare();
    let names: Vec<&str> = s.devices.iter().map(|d| d.key.2.as_str()).collect();
    assert_eq!(names, vec!["b", "c"]);
    s.remove_slice("new-2");
    s.prepare();
    assert!(s.devices.is_empty());
}

#[test]
fn a_claims_devices_are_held_across_slice_changes() {
    let mut s = DraState::default();
    s.upsert_slice(&slice("s", "p", 1, 1, &["a", "b"]));
    s.prepare();
    let claim: ResourceClaim = serde_json::from_value(json!({"metadata": {"namespace": "ns", "name": "c", "uid": "u"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "k"}}]}},
        "status": {"allocation": {"devices": {"results": [{"request": "r", "driver": "d.example.com", "pool": "p", "device": "b"}]}}}}))
    .unwrap();
    s.upsert_claim(&claim);
    assert_eq!(s.in_use, vec![0, 1]);
    // New devices sort before it: indices move, the holding follows.
    s.upsert_slice(&slice("s", "p", 2, 1, &["0", "a", "b"]));
    s.prepare();
    assert_eq!(s.in_use, vec![0, 0, 1]);
    s.remove_claim("ns", "c");
    assert_eq!(s.in_use, vec![0, 0, 0]);
}

#[test]
fn expressions_over_upstreams_length_are_refused_before_parsing() {
    assert!(precheck("device.driver == \"x\"").is_ok());
    assert_eq!(
        precheck(&"a".repeat(10 * 1024 + 1)).unwrap_err(),
        "Too long: may not be more than 10240 bytes"
    );
}

fn budget() -> Budget {
    Budget::new(u64::MAX, u64::MAX)
}

#[test]
fn selectors_see_upstreams_environment() {
    let mut e = Exprs::default();
    let attrs: BTreeMap<String, Attr> = [
        ("d.example.com/model".to_string(), Attr::String("A100".into())),
        ("d.example.com/cores".to_string(), Attr::Int(108)),
        ("other.example.com/fast".to_string(), Attr::Bool(true)),
        ("d.example.com/driverVersion".to_string(), Attr::Version("1.2.3".into())),
    ]
    .into();
    let cap: BTreeMap<String, String> = [("d.example.com/memory".to_string(), "40Gi".to_string())].into();
    let view = DeviceView {
        driver: "d.example.com",
        attributes: &attrs,
        capacity: &cap,
        allow_multiple_allocations: false,
    };
    for (expr, want) in [
        ("device.driver == 'd.example.com'", Match::Yes),
        ("device.attributes['d.example.com'].model == 'A100'", Match::Yes),
        ("device.attributes['d.example.com'].cores > 100", Match::Yes),
        ("device.attributes['other.example.com'].fast", Match::Yes),
        (
            "device.capacity['d.example.com'].memory.compareTo(quantity('32Gi')) > 0",
            Match::Yes,
        ),
        (
            "device.capacity['d.example.com'].memory.isLessThan(quantity('32Gi'))",
            Match::No,
        ),
        (
            "device.attributes['d.example.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
            Match::Yes,
        ),
        ("device.allowMultipleAllocations", Match::No),
    ] {
        let sel = e.intern(expr);
        assert_eq!(e.matches(&sel, 0, &view, &mut budget()), want, "{expr}");
    }
    let sel = e.intern("device.attributes['d.example.com'].nope == 1");
    assert_eq!(
        e.matches(&sel, 0, &view, &mut budget()),
        Match::Error("no such key: nope".into())
    );
    let sel = e.intern("device.driver");
    assert_eq!(
        e.matches(&sel, 0, &view, &mut budget()),
        Match::Error("must evaluate to bool or the unknown type, not string".into())
    );
    let sel = e.intern("device.driver ==");
    assert!(sel.error().unwrap().starts_with("compilation failed"));
}

#[test]
fn a_selector_past_the_cost_limit_fails_without_allocating_and_compiled_selectors_are_freed() {
    let mut e = Exprs::default();
    let attrs = BTreeMap::new();
    let cap = BTreeMap::new();
    let view = DeviceView {
        driver: "d",
        attributes: &attrs,
        capacity: &cap,
        allow_multiple_allocations: false,
    };
    let sel = e.intern("lists.range(1000000000000).size() > 0");
    assert_eq!(
        e.matches(&sel, 0, &view, &mut budget()),
        Match::Error("operation cancelled: actual cost limit exceeded".into())
    );
    // Budget-limited: no verdict, and nothing cached.
    let mut small = Budget::new(1000, u64::MAX);
    let slow = e.intern("lists.range(100000).all(i, i >= 0)");
    assert_eq!(e.matches(&slow, 1, &view, &mut small), Match::OutOfBudget);
    assert!(small.exhausted());
    assert_eq!(e.matches(&slow, 1, &view, &mut budget()), Match::Yes);
    drop(sel);
    drop(slow);
    for i in 0..200 {
        let _ = e.intern(&format!("device.driver == 'd{i}'"));
    }
    assert!(e.live() < 2, "selectors without users are freed");
}

#[test]
fn taints_need_tolerations() {
    let taints = vec![("k".to_string(), "v".to_string(), "NoSchedule".to_string())];
    assert!(!tolerated(&taints, &[]));
    assert!(tolerated(
        &taints,
        &[("k".into(), "Equal".into(), "v".into(), String::new())]
    ));
    assert!(tolerated(
        &taints,
        &[(String::new(), "Exists".into(), String::new(), String::new())]
    ));
    assert!(!tolerated(
        &taints,
        &[("k".into(), "Equal".into(), "w".into(), String::new())]
    ));
    assert!(tolerated(&[("k".into(), "v".into(), "None".into())], &[]));
}

#[test]
fn names_are_qualified_with_the_driver() {
    assert_eq!(cel::qualify("model", "d.example.com"), "d.example.com/model");
    assert_eq!(cel::qualify("x.io/model", "d.example.com"), "x.io/model");
    assert_eq!(kwas_cel::dra::split("x.io/model", "d"), ("x.io", "model"));
    assert_eq!(kwas_cel::dra::split("model", "d"), ("d", "model"));
}

proptest! {
    /// Requests at their type's limits never panic: out-of-range counts are invalid claims, the rest
    /// parse.
    #[test]
    fn counts_at_the_limits(count in prop_oneof![Just(i64::MIN), Just(-1i64), Just(0), Just(1), Just(32), Just(33), Just(i64::MAX), any::<i64>()]) {
        let mut s = DraState::default();
        let claim: ResourceClaim = serde_json::from_value(json!({"metadata": {"namespace": "ns", "name": "c"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "k", "count": count}}]}}})).unwrap();
        s.upsert_claim(&claim);
        let c = s.claim(s.claim_id("ns", "c").unwrap()).unwrap();
        prop_assert_eq!(c.invalid.is_none(), (1..=32).contains(&count));
    }

    /// Arbitrary expressions never panic the compiler or the evaluator.
    #[test]
    fn arbitrary_expressions(expr in ".{0,200}") {
        let mut e = Exprs::default();
        let sel = e.intern(&expr);
        let (attrs, cap) = (BTreeMap::new(), BTreeMap::new());
        let view = DeviceView { driver: "d", attributes: &attrs, capacity: &cap, allow_multiple_allocations: false };
        let _ = e.matches(&sel, 0, &view, &mut budget());
    }
}

#[test]
fn the_most_complex_accepted_expressions_run_on_a_small_stack() {
    // Compiling grows its own stack and evaluation grows it on demand: a caller with a 512 KiB stack
    // (tokio's worker threads have 2 MiB) is safe, even unoptimized.
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let mut e = Exprs::default();
            let (attrs, cap) = (BTreeMap::new(), BTreeMap::new());
            let view = DeviceView {
                driver: "d",
                attributes: &attrs,
                capacity: &cap,
                allow_multiple_allocations: false,
            };
            let chain = vec!["true"; 500].join(" && ");
            let nested = format!("{}true{}", "(".repeat(240), ")".repeat(240));
            let deeper = format!("{}true{}", "(".repeat(251), ")".repeat(251));
            let sel = e.intern(&deeper);
            assert!(sel.error().unwrap().contains("recursion limit"), "{:?}", sel.error());
            let sums = format!("{} == 240", vec!["1"; 240].join(" + "));
            let mut results = Vec::new();
            for expr in [chain, nested, sums] {
                assert!(precheck(&expr).is_ok(), "{expr}");
                let sel = e.intern(&expr);
                results.push(e.matches(&sel, 0, &view, &mut Budget::new(u64::MAX, u64::MAX)));
            }
            results
        })
        .unwrap();
    let results = handle.join().expect("no stack overflow");
    assert_eq!(results, vec![Match::Yes, Match::Yes, Match::Yes]);
}

/// Random selectors built from what users write and what attackers try: comparisons, string and regex
/// calls, ranges, nested comprehensions, deep boolean chains.
fn selector() -> impl Strategy<Value = String> {
    // Mostly sizes that stay within the write-time estimate, some that do not (those are skipped).
    let n = prop_oneof![
        4 => prop_oneof![Just(0u64), Just(1), Just(10), Just(100)],
        1 => prop_oneof![Just(1000u64), Just(100_000), Just(1_000_000_000_000)],
    ];
    let leaf = prop_oneof![
        Just("device.driver == 'gpu.kwas.dev'".to_string()),
        n.clone()
            .prop_map(|n| format!("device.attributes['gpu.kwas.dev'].index < {n}")),
        Just("device.attributes['gpu.kwas.dev'].model.startsWith('K')".to_string()),
        Just("device.attributes['gpu.kwas.dev'].model.matches('^K[0-9]+$')".to_string()),
        Just("device.capacity['gpu.kwas.dev'].memory.compareTo(quantity('40Gi')) >= 0".to_string()),
        n.clone().prop_map(|n| format!("lists.range({n}).size() >= 0")),
        n.clone()
            .prop_map(|n| format!("'abc'.replace('b', 'xxxx').size() > {n}")),
        Just("true".to_string()),
    ];
    leaf.prop_recursive(4, 32, 2, move |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} && {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} || {b})")),
            inner.clone().prop_map(|a| format!("!({a})")),
            (n.clone(), inner.clone()).prop_map(|(n, a)| format!("lists.range({n}).all(i, {a})")),
            (n.clone(), inner.clone()).prop_map(|(n, a)| format!("lists.range({n}).exists(i, {a} && i >= 0)")),
            (inner.clone(), 1usize..60).prop_map(|(a, k)| vec![a; k].join(" && ")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, max_global_rejects: 2000, ..ProptestConfig::default() })]

    /// Any selector kube-apiserver accepts (estimated cost at most 1,000,000), evaluated over 10,000
    /// devices, finishes within the pod's budget: it decides every device or stops at the budget, and
    /// never runs longer than that budget's worth of work.
    #[test]
    fn any_selector_accepted_at_write_time_finishes_over_ten_thousand_devices_within_its_budget(expr in selector()) {
        prop_assume!(kwas_cel::dra::validate(&expr).is_ok());
        let attrs: Vec<BTreeMap<String, Attr>> = (0..10_000)
            .map(|i| {
                [
                    ("gpu.kwas.dev/model".to_string(), Attr::String("KW100".into())),
                    ("gpu.kwas.dev/index".to_string(), Attr::Int(i)),
                ]
                .into()
            })
            .collect();
        let cap: BTreeMap<String, String> = [("gpu.kwas.dev/memory".to_string(), "80Gi".to_string())].into();
        let mut e = Exprs::default();
        let sel = e.intern(&expr);
        let mut b = Budget::default();
        let t = std::time::Instant::now();
        let mut decided = 0u32;
        for (d, a) in attrs.iter().enumerate() {
            let view = DeviceView { driver: "gpu.kwas.dev", attributes: a, capacity: &cap, allow_multiple_allocations: false };
            match e.matches(&sel, d as u32, &view, &mut b) {
                Match::OutOfBudget => break,
                _ => decided += 1,
            }
        }
        prop_assert!(decided == 10_000 || b.left() == 0);
        prop_assert!(t.elapsed() < std::time::Duration::from_secs(20), "{expr}: {:?}", t.elapsed());
    }
}
