//! A scaled-down run of every benchmark scenario (`cargo bench -p kwas-tests --bench scheduler_perf_jobs`):
//! the same code path, checked for completeness rather than timed.

use kwas_tests::perf::{markdown, run, scenarios};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_benchmark_scenario_binds_every_pod() {
    let mut results = Vec::new();
    // A tenth of upstream's sizes on 100 nodes.
    for s in scenarios(100, 10) {
        let m = run(&s).await.unwrap();
        assert_eq!(m.pods, s.submission.pods());
        assert!(m.creation_to_bound <= m.submission_to_bound);
        assert!(m.pods_created <= m.submission_to_bound);
        assert!(m.pods_per_s() > 0.0);
        results.push(m);
    }
    let table = markdown(&results);
    assert_eq!(table.lines().count(), 2 + results.len(), "{table}");
}
