//! Validation: string formats, object metadata, the API building blocks with allow-lists, resolved
//! `WorkloadItem` trees, and kube-apiserver's rules for Workload, PodGroup and CompositePodGroup.

pub mod api;
pub mod blocks;
pub mod meta;
pub mod strings;
pub mod tree;
