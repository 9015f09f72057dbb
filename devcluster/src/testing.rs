//! What tests of code that runs against devcluster share: the fast test configuration (pods start 20 ms
//! after binding, watch bookmarks every 200 ms, the built-in controllers sweep every 50 ms) and a small
//! topology. Every behaviour is the same as with the defaults, only sooner, so a test waits for
//! conditions rather than durations and still finishes quickly.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kwas_devcluster::Error> {
//! use kwas_devcluster::{DevCluster, testing};
//!
//! let cluster = DevCluster::start(testing::fast_config(testing::small_topology())).await?;
//! # cluster.shutdown().await;
//! # Ok(()) }
//! ```

use std::time::Duration;

use crate::{Capacity, DevClusterConfig, KubeletConfig, ServerSettings, Topology};

/// How long after binding the simulated kubelet starts a pod in the fast configuration.
pub const POD_START_DELAY: Duration = Duration::from_millis(20);

/// The fast test configuration on `topology` (everything else as [`DevClusterConfig::default`]).
pub fn fast_config(topology: Topology) -> DevClusterConfig {
    DevClusterConfig {
        topology,
        kubelet: KubeletConfig {
            start_delay: POD_START_DELAY,
            ..Default::default()
        },
        server: ServerSettings {
            bookmark_interval: Duration::from_millis(200),
            sweep_interval: Duration::from_millis(50),
            node_monitor_grace_period: Duration::from_millis(500),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A small topology: one block of 2 racks with 2 nodes each, 4 GPUs per node.
pub fn small_topology() -> Topology {
    Topology::grid(
        1,
        2,
        2,
        Capacity {
            gpus: 4,
            ..Default::default()
        },
    )
}
