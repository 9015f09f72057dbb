//! The simulated interconnect driver [`INTERCONNECT_DRIVER`] (`interconnect.kwas.dev`): multi-node
//! devices in the style of KEP-5729's motivation ("Modeling Topology and Multi-Node Logical Devices"),
//! such as an NVLink domain's IMEX channels. For every rack (`kwas.dev/rack`) holding nodes with DRA
//! GPUs it publishes one ResourceSlice `<rack>-interconnect.kwas.dev` whose `nodeSelector` is the rack,
//! with [`CHANNELS_PER_DOMAIN`] devices `channel-0` .. each carrying the attribute
//! `interconnectDomain` (the rack, as the GPUs' attribute of [`super::dra`]). A ResourceClaim for one
//! channel, shared by a PodGroup, pins every pod of the group to one rack: the allocation's node
//! selector is the slice's. Its DeviceClass [`INTERCONNECT_DEVICE_CLASS`] is created at start.
//!
//! The slices follow the racks (created with the rack's first GPU node, deleted with its last), checked
//! once per batch of node changes. Nodes without a rack label get no channel.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::api::{DeleteOptions, State};
use crate::kinds::dra::GROUP;
use crate::meta;
use crate::request::RequestContext;
use crate::store::GroupResource;

/// The interconnect driver's name.
pub const INTERCONNECT_DRIVER: &str = "interconnect.kwas.dev";
/// The DeviceClass of its channels.
pub const INTERCONNECT_DEVICE_CLASS: &str = "interconnect.kwas.dev";
/// Channels per rack: how many PodGroups' claims one rack can serve at once.
pub const CHANNELS_PER_DOMAIN: u32 = 4;

const MANAGER: &str = "interconnect.kwas.dev-controller";

/// Creates the channels' DeviceClass.
pub(crate) fn bootstrap(state: &mut State) {
    let Some(res) = state.builtin(GROUP, "deviceclasses") else {
        return;
    };
    let class = json!({
        "metadata": {"name": INTERCONNECT_DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == {INTERCONNECT_DRIVER:?}")}}]},
    });
    if let Err(e) = state.create(&res, "", class, &mut RequestContext::manager("kube-apiserver")) {
        tracing::warn!(error = %e, "creating the interconnect DeviceClass failed");
    }
}

/// The slice of a rack: `<rack>-interconnect.kwas.dev` when that is a valid object name, else a hash.
pub fn channel_slice_name(rack: &str) -> String {
    let plain = format!("{}-{INTERCONNECT_DRIVER}", rack.to_ascii_lowercase());
    let valid = plain.len() <= 253
        && plain
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && plain.starts_with(|c: char| c.is_ascii_alphanumeric());
    if valid && rack.chars().all(|c| !c.is_ascii_uppercase()) {
        plain
    } else {
        format!("domain-{:016x}-{INTERCONNECT_DRIVER}", hash(rack))
    }
}

fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Racks with at least one live node with DRA GPUs.
fn racks(state: &State) -> BTreeSet<String> {
    state
        .store
        .list(&GroupResource::new("", "nodes"), None)
        .iter()
        .filter(|n| !meta::is_deleting(n) && super::topology::node_gpus(n).count > 0)
        .filter_map(|n| {
            meta::string_map(n, "labels")
                .into_iter()
                .find(|(k, v)| k == kwas_api_types::names::labels::RACK && !v.is_empty())
                .map(|(_, v)| v)
        })
        .collect()
}

/// Publishes the channel slice of node `node`'s rack if it has none (a node being added: cheap, no
/// listing).
pub(crate) fn ensure_for_node(state: &mut State, node: &str) {
    let Some(n) = state.store.get(&GroupResource::new("", "nodes"), "", node) else {
        return;
    };
    if meta::is_deleting(&n) || super::topology::node_gpus(&n).count == 0 {
        return;
    }
    let Some(rack) = meta::string_map(&n, "labels")
        .into_iter()
        .find(|(k, v)| k == kwas_api_types::names::labels::RACK && !v.is_empty())
        .map(|(_, v)| v)
    else {
        return;
    };
    let res = GroupResource::new(GROUP, "resourceslices");
    if state.store.get(&res, "", &channel_slice_name(&rack)).is_none() {
        publish(state, &rack);
    }
}

fn publish(state: &mut State, rack: &str) {
    let Some(res) = state.builtin(GROUP, "resourceslices") else {
        return;
    };
    let devices: Vec<Value> = (0..CHANNELS_PER_DOMAIN)
        .map(|i| {
            json!({"name": format!("channel-{i}"), "attributes": {
                super::topology::DRA_ATTRIBUTE_INTERCONNECT_DOMAIN: {"string": rack}}})
        })
        .collect();
    let slice = json!({
        "metadata": {"name": channel_slice_name(rack)},
        "spec": {"driver": INTERCONNECT_DRIVER,
            "pool": {"name": rack, "generation": 1, "resourceSliceCount": 1},
            "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": kwas_api_types::names::labels::RACK, "operator": "In", "values": [rack]}]}]},
            "devices": devices},
    });
    if let Err(e) = state.create(&res, "", slice, &mut RequestContext::manager(MANAGER)) {
        tracing::debug!(rack, error = %e, "publishing a channel slice failed");
    }
}

/// Brings the channel slices in line with the racks.
pub(crate) fn sync(state: &mut State) {
    let Some(res) = state.builtin(GROUP, "resourceslices") else {
        return;
    };
    let want = racks(state);
    let existing: Vec<std::sync::Arc<Value>> = state
        .store
        .list(&GroupResource::new(GROUP, "resourceslices"), None)
        .into_iter()
        .filter(|s| s.pointer("/spec/driver").and_then(Value::as_str) == Some(INTERCONNECT_DRIVER))
        .collect();
    let mut have = BTreeSet::new();
    for s in &existing {
        let rack = s.pointer("/spec/pool/name").and_then(Value::as_str).unwrap_or_default();
        if want.contains(rack) && meta::name(s) == channel_slice_name(rack) {
            have.insert(rack.to_string());
        } else if let Err(e) = state.delete(&res, "", meta::name(s), &DeleteOptions::default()) {
            tracing::debug!(slice = meta::name(s), error = %e, "deleting a channel slice failed");
        }
    }
    for rack in want.difference(&have) {
        publish(state, rack);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_names_are_valid_for_any_rack_value() {
        assert_eq!(channel_slice_name("b0-r1"), "b0-r1-interconnect.kwas.dev");
        for odd in ["Rack_A", "_x", &"r".repeat(300)] {
            let n = channel_slice_name(odd);
            assert!(n.starts_with("domain-") && n.len() < 253, "{n}");
        }
        assert_ne!(channel_slice_name("Rack_A"), channel_slice_name("Rack_B"));
    }
}
