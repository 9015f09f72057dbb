//! # kwas-devcluster
//!
//! An embedded Kubernetes API server on loopback with simulated nodes and a simulated kubelet, so kwas
//! runs and is tested on one machine with no cluster. Filled in by the devcluster issue.
