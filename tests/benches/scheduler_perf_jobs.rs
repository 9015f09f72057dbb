//! End-to-end throughput of kwas on devcluster for upstream scheduler_perf's gang workloads, submitted as
//! Jobs and JobSets: pods/s from the first pod's creation to the last bind, and from the first Job
//! submission to the last bind (see `kwas_tests::perf`).
//!
//! ```sh
//! cargo bench -p kwas-tests --bench scheduler_perf_jobs                      # every scenario, 1000 nodes
//! cargo bench -p kwas-tests --bench scheduler_perf_jobs -- --nodes 5000      # upstream's 5000 nodes
//! cargo bench -p kwas-tests --bench scheduler_perf_jobs -- TopologyAware     # a subset
//! cargo bench -p kwas-tests --bench scheduler_perf_jobs -- --divide 4        # a quarter of the Jobs
//! ```
//!
//! Everything runs in one process on this machine (API server, controllers, scheduler and the clients
//! creating the Jobs share its cores), on a 2-thread runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kwas_tests::perf::{markdown, run, scenarios};

fn main() {
    let mut nodes = 1000;
    let mut divisor = 1;
    let mut filter: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--nodes" => {
                nodes = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--nodes takes a number")
            }
            "--divide" => {
                divisor = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--divide takes a number")
            }
            "--bench" => {}
            other if other.starts_with('-') => {}
            other => filter = Some(other.to_string()),
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut results = Vec::new();
    for s in scenarios(nodes, divisor) {
        if filter.as_ref().is_some_and(|f| !s.name.contains(f.as_str())) {
            continue;
        }
        let m = rt.block_on(run(&s)).unwrap();
        eprintln!(
            "{}: {} pods bound {:.2} s after the first pod's creation, {:.2} s after the first Job's",
            m.name,
            m.pods,
            m.creation_to_bound.as_secs_f64(),
            m.submission_to_bound.as_secs_f64()
        );
        for client in [kwas_stack::CONTROLLERS_USER_AGENT, kwas_stack::SCHEDULER_USER_AGENT] {
            eprintln!(
                "  {client}: {:.2} API requests per pod ({})",
                m.requests_per_pod(client),
                m.request_breakdown(client).join(", ")
            );
        }
        results.push(m);
    }
    print!("{}", markdown(&results));
}
