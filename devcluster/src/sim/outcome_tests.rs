//! The outcome grammar: every documented form, the selectors' precedence, attempts, defaults, and
//! arbitrary input (never a panic, out-of-range codes rejected).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn outcome(pairs: &[(&str, &str)]) -> (Outcome, Vec<String>) {
    Outcome::from_annotations(|k| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v))
}

fn code(o: &Outcome, index: Option<u32>, container: &str, attempt: u32) -> i32 {
    o.of(index, container, attempt).0
}

#[test]
fn a_bare_code_applies_to_every_container_index_and_attempt() {
    let (o, problems) = outcome(&[(SIM_EXIT_CODE, "42")]);
    assert!(problems.is_empty());
    for (i, c, a) in [(None, "main", 0), (Some(3), "side", 7)] {
        assert_eq!(o.of(i, c, a), (42, "Error".to_string()));
    }
}

#[test]
fn per_container_entries_choose_by_name_and_others_fall_back() {
    let (o, _) = outcome(&[(SIM_EXIT_CODE, "main=42, sidecar=0")]);
    assert_eq!(code(&o, None, "main", 0), 42);
    assert_eq!(o.of(None, "sidecar", 0), (0, "Completed".to_string()));
    assert_eq!(code(&o, None, "other", 0), 0);
    let (o, _) = outcome(&[(SIM_EXIT_CODE, "main=42"), (SIM_EXIT_PHASE, "Failed")]);
    assert_eq!(code(&o, None, "other", 0), 1);
}

#[test]
fn per_index_entries_match_only_pods_of_that_index() {
    let (o, _) = outcome(&[(SIM_EXIT_CODE, "0:0,1:42")]);
    assert_eq!(code(&o, Some(0), "main", 0), 0);
    assert_eq!(code(&o, Some(1), "main", 0), 42);
    assert_eq!(code(&o, Some(2), "main", 0), 0);
    assert_eq!(code(&o, None, "main", 0), 0);
}

#[test]
fn the_most_specific_entry_wins() {
    let (o, problems) = outcome(&[(SIM_EXIT_CODE, "7,main=8,1:9,1:main=10")]);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(code(&o, Some(1), "main", 0), 10);
    assert_eq!(code(&o, Some(1), "side", 0), 9);
    assert_eq!(code(&o, Some(2), "main", 0), 8);
    assert_eq!(code(&o, None, "main", 0), 8);
    assert_eq!(code(&o, Some(2), "side", 0), 7);
}

#[test]
fn attempts_walk_the_sequence_and_repeat_its_last_value() {
    let (o, _) = outcome(&[(SIM_EXIT_CODE, "1:42/42/0")]);
    let codes: Vec<i32> = (0..5).map(|a| code(&o, Some(1), "main", a)).collect();
    assert_eq!(codes, [42, 42, 0, 0, 0]);
    assert_eq!(code(&o, Some(1), "main", u32::MAX), 0);
}

#[test]
fn reasons_use_the_same_selectors_and_default_like_a_kubelet() {
    let (o, problems) = outcome(&[(SIM_EXIT_CODE, "1/0"), (SIM_EXIT_REASON, "main=OOMKilled/Completed")]);
    assert!(problems.is_empty());
    assert_eq!(o.of(None, "main", 0), (1, "OOMKilled".into()));
    assert_eq!(o.of(None, "main", 1), (0, "Completed".into()));
    assert_eq!(o.of(None, "side", 0), (1, "Error".into()));
}

#[test]
fn an_oom_kill_without_an_exit_code_exits_137() {
    let (o, _) = outcome(&[(SIM_EXIT_REASON, "OOMKilled")]);
    assert_eq!(o.of(None, "main", 0), (137, "OOMKilled".into()));
}

#[test]
fn the_exit_phase_annotation_still_means_exit_code_1() {
    let (o, _) = outcome(&[(SIM_EXIT_PHASE, "Failed")]);
    assert_eq!(o.of(None, "main", 0), (1, "Error".into()));
    let (o, _) = outcome(&[]);
    assert_eq!(o.of(None, "main", 0), (0, "Completed".into()));
}

#[test]
fn invalid_values_are_reported_and_ignored_as_a_whole() {
    for bad in [
        "",
        " ",
        "256",
        "-1",
        "+1",
        "1.5",
        "0x10",
        "99999999999999999999999999",
        "1,,2",
        "1:",
        "a:1",
        "1:2:3",
        "Main=1",
        "-x=1",
        "main=",
        "1/",
        "/1",
        "1,1",
        "main=1,main=2",
        "0:1,0:2",
        "2147483648:1",
        "1 2",
    ] {
        let (o, problems) = outcome(&[(SIM_EXIT_CODE, bad), (SIM_EXIT_PHASE, "Failed")]);
        assert_eq!(problems.len(), 1, "{bad:?}: {problems:?}");
        assert!(problems[0].contains(SIM_EXIT_CODE), "{}", problems[0]);
        assert_eq!(o.of(Some(0), "main", 0), (1, "Error".into()), "{bad:?}");
    }
    for bad in ["", "oom killed", "1Error", "Error!", &"E".repeat(129)] {
        let (o, problems) = outcome(&[(SIM_EXIT_REASON, bad)]);
        assert_eq!(problems.len(), 1, "{bad:?}");
        assert_eq!(o.of(None, "main", 0), (0, "Completed".into()));
    }
    let (_, problems) = outcome(&[(SIM_EXIT_PHASE, "Crashed")]);
    assert_eq!(problems.len(), 1);
}

#[test]
fn limits_are_inclusive() {
    assert!(parse_exit_codes("0,2147483647:255").is_ok());
    assert!(
        parse_exit_codes(&format!("{}0", "0/".repeat(2047))).is_ok(),
        "4095 characters"
    );
    assert!(
        parse_exit_codes(&format!("{}0", "0/".repeat(2048))).is_err(),
        "over MAX_LEN"
    );
    assert!(parse_reasons(&"E".repeat(128)).is_ok());
    let long = "a".repeat(63);
    assert!(parse_exit_codes(&format!("{long}=1")).is_ok());
    assert!(parse_exit_codes(&format!("{long}a=1")).is_err());
}

#[test]
fn the_completion_index_comes_from_the_annotation_or_the_label() {
    let by_annotation = json!({"metadata": {"annotations": {JOB_COMPLETION_INDEX: "3"}}});
    let by_label = json!({"metadata": {"labels": {JOB_COMPLETION_INDEX: "4"}}});
    let garbage = json!({"metadata": {"annotations": {JOB_COMPLETION_INDEX: "-1"}}});
    assert_eq!(pod_completion_index(&by_annotation), Some(3));
    assert_eq!(pod_completion_index(&by_label), Some(4));
    assert_eq!(pod_completion_index(&garbage), None);
}

#[test]
fn the_attempt_base_adds_both_failure_counts_and_ignores_garbage() {
    let pod = |f: &str, i: &str| json!({"metadata": {"annotations": {JOB_INDEX_FAILURE_COUNT: f, JOB_INDEX_IGNORED_FAILURE_COUNT: i}}});
    assert_eq!(attempt_base(&json!({})), 0);
    assert_eq!(attempt_base(&pod("2", "1")), 3);
    assert_eq!(attempt_base(&pod("x", "1")), 1);
    assert_eq!(attempt_base(&pod("2147483647", "2147483647")), u32::MAX - 1);
    assert_eq!(attempt_base(&pod("99999999999", "-4")), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,64}", attempt in any::<u32>(), index in proptest::option::of(any::<u32>())) {
        let (o, _) = outcome(&[(SIM_EXIT_CODE, &text), (SIM_EXIT_REASON, &text)]);
        let (code, reason) = o.of(index, "main", attempt);
        prop_assert!((0..=255).contains(&code));
        prop_assert!(!reason.is_empty());
    }

    #[test]
    fn grammar_shaped_text_never_panics(text in "[0-9a-z:=/, -]{0,40}", attempt in 0u32..8) {
        let (o, _) = outcome(&[(SIM_EXIT_CODE, &text)]);
        let (code, _) = o.of(Some(1), "main", attempt);
        prop_assert!((0..=255).contains(&code));
    }

    #[test]
    fn every_number_in_range_is_accepted_and_every_other_rejected(n in any::<u64>()) {
        let parsed = parse_exit_codes(&n.to_string());
        prop_assert_eq!(parsed.is_ok(), n <= 255);
        if let Ok(rules) = parsed {
            prop_assert_eq!(rules.lookup(None, "c", 0).copied().map(u64::from), Some(n));
        }
    }

    #[test]
    fn a_sequence_yields_its_values_in_order(codes in proptest::collection::vec(0u8..=255, 1..20), extra in 0u32..5) {
        let text = codes.iter().map(u8::to_string).collect::<Vec<_>>().join("/");
        let rules = parse_exit_codes(&format!("5:c={text}")).unwrap();
        for (a, c) in codes.iter().enumerate() {
            prop_assert_eq!(rules.lookup(Some(5), "c", u32::try_from(a).unwrap()), Some(c));
        }
        let past = u32::try_from(codes.len()).unwrap() + extra;
        prop_assert_eq!(rules.lookup(Some(5), "c", past), codes.last());
        prop_assert_eq!(rules.lookup(Some(6), "c", 0), None);
    }
}
