//! Compile + validate cost of the library next to the cost of serializing the resulting Workload to JSON
//! (the ratio is the figure of merit: compiling should cost about as much as writing the object out).
//!
//! `cargo bench -p workloadbuilder --bench compile`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../tests/workloadbuilder/common/mod.rs"]
mod common;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use workloadbuilder::{WorkloadBuilder, WorkloadItem};

fn pair(c: &mut Criterion, name: &str, item: WorkloadItem) {
    let owner = common::owner_kind("jobset.x-k8s.io/v1alpha2", "JobSet", name);
    let builder = WorkloadBuilder::new(item).allow(common::allow_all());
    let workload = builder.build(name, "default", &owner).unwrap();
    let mut group = c.benchmark_group(name);
    group.bench_function("compile+validate", |b| {
        b.iter(|| black_box(builder.build(black_box(name), "default", &owner).unwrap()))
    });
    group.bench_function("serialize-json", |b| {
        b.iter(|| black_box(serde_json::to_vec(black_box(&workload)).unwrap()))
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    let job = common::parse_job("job-example-1.yaml");
    pair(c, "kep6089-job-example-1", common::job_item(&job).unwrap());
    let jobset = common::parse_jobset("jobset-option-b.yaml");
    pair(c, "kep6089-jobset-option-b", common::jobset_item(&jobset).unwrap());
    pair(c, "largest-allowed-tree", common::largest_item());
}

criterion_group!(compile, benches);
criterion_main!(compile);
