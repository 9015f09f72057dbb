use k8s_openapi::api::resource::v1::ResourceSlice;
use proptest::prelude::*;
use serde_json::json;

use super::cel::{self, Attr, DeviceView, Exprs, precheck};
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
fn hostile_expressions_are_refused_before_parsing() {
    assert!(precheck("device.driver == \"x\"").is_ok());
    assert!(precheck(&"(".repeat(251)).unwrap_err().contains("nests 251 deep"));
    assert!(precheck(&"1+".repeat(1001)).unwrap_err().contains("operators"));
    assert!(
        precheck(&"a".repeat(cel::MAX_EXPRESSION_LEN + 1))
            .unwrap_err()
            .contains("bytes long")
    );
    // Brackets inside strings do not count.
    assert!(precheck(&format!("\"{}\" == \"\"", "(".repeat(100))).is_ok());
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
        attributes: Some(&attrs),
        capacity: Some(&cap),
        allow_multiple_allocations: false,
    };
    for (expr, want) in [
        ("device.driver == 'd.example.com'", Ok(true)),
        ("device.attributes['d.example.com'].model == 'A100'", Ok(true)),
        ("device.attributes['d.example.com'].cores > 100", Ok(true)),
        ("device.attributes['other.example.com'].fast", Ok(true)),
        (
            "device.capacity['d.example.com'].memory.compareTo(quantity('32Gi')) > 0",
            Ok(true),
        ),
        (
            "device.capacity['d.example.com'].memory.isLessThan(quantity('32Gi'))",
            Ok(false),
        ),
        (
            "device.attributes['d.example.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
            Ok(true),
        ),
        ("device.allowMultipleAllocations", Ok(false)),
    ] {
        let id = e.intern(expr);
        assert_eq!(e.matches(id, 0, &view), want, "{expr}");
    }
    let id = e.intern("device.attributes['d.example.com'].nope == 1");
    assert!(e.matches(id, 0, &view).unwrap_err().contains("CEL runtime error"));
    let id = e.intern("1 + 1");
    assert!(e.matches(id, 0, &view).unwrap_err().contains("bool"));
    let id = e.intern("device.driver ==");
    assert!(e.error(id).unwrap().starts_with("compilation failed"));
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
    assert_eq!(cel::split("x.io/model", "d"), ("x.io", "model"));
    assert_eq!(cel::split("model", "d"), ("d", "model"));
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
        let id = e.intern(&expr);
        let attrs = BTreeMap::new();
        let view = DeviceView { driver: "d", attributes: Some(&attrs), capacity: None, allow_multiple_allocations: false };
        let _ = e.matches(id, 0, &view);
    }
}

#[test]
fn the_most_complex_accepted_expressions_run_on_a_small_stack() {
    // At the precheck's limits, compiling and evaluating run on a stack of their own: a caller with a
    // 512 KiB stack (tokio's worker threads have 2 MiB) is safe, even unoptimized.
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let mut e = Exprs::default();
            let attrs = BTreeMap::new();
            let view = DeviceView {
                driver: "d",
                attributes: Some(&attrs),
                capacity: None,
                allow_multiple_allocations: false,
            };
            let chain = vec!["true"; 500].join(" && ");
            // The parser itself stops at 96 levels, with an error.
            let nested = format!("{}true{}", "(".repeat(95), ")".repeat(95));
            let deeper = format!("{}true{}", "(".repeat(250), ")".repeat(250));
            let id = e.intern(&deeper);
            assert!(e.error(id).unwrap().contains("Recursion limit"), "{:?}", e.error(id));
            let sums = format!("{} == 999", vec!["1"; 999].join(" + "));
            let mut results = Vec::new();
            for expr in [chain, nested, sums] {
                assert!(precheck(&expr).is_ok(), "{expr}");
                let id = e.intern(&expr);
                results.push(e.matches(id, 0, &view));
            }
            results
        })
        .unwrap();
    let results = handle.join().expect("no stack overflow");
    assert_eq!(results, vec![Ok(true), Ok(true), Ok(true)]);
}
