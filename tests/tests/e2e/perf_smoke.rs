//! A scaled-down run of every benchmark scenario (`cargo bench -p kwas-e2e --bench scheduler_perf_jobs`):
//! the same code path, checked for completeness rather than timed.

use kwas_e2e::perf::{Scenario, Submission, markdown, run, scenarios};

/// `scenarios(nodes)` at a tenth of upstream's sizes on 100 nodes (10 racks of 10).
fn small() -> Vec<Scenario> {
    scenarios(1000)
        .into_iter()
        .map(|mut s| {
            s.racks = 10;
            s.nodes_per_rack = 10;
            s.submission = match s.submission {
                Submission::GangJobs { jobs, size, rack } => Submission::GangJobs {
                    jobs: jobs / 10,
                    size,
                    rack,
                },
                Submission::JobSets { jobsets, groups, size } => Submission::JobSets {
                    jobsets: jobsets / 10,
                    groups,
                    size,
                },
                Submission::BasicJobs { jobs, size } => Submission::BasicJobs { jobs: jobs / 10, size },
            };
            s.name = format!("{} (a tenth, 100 nodes)", s.name);
            s
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_benchmark_scenario_binds_every_pod() {
    let mut results = Vec::new();
    for s in small() {
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
