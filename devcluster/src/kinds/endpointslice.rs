//! discovery.k8s.io/v1 EndpointSlice, as kube-apiserver serves it (`pkg/registry/discovery/endpointslice`
//! and `pkg/apis/discovery/validation`):
//!
//! - `addressType` is required, one of `IPv4`, `IPv6`, `FQDN`, and immutable;
//! - at most 1,000 endpoints, each with 1 to 100 addresses valid for the address type (an IPv4 or IPv6
//!   address that is not unspecified, loopback, link-local or link-local multicast; a fully qualified
//!   domain name), a DNS-label `hostname`, a valid `nodeName`, at most 8 zone hints with valid, unique
//!   names;
//! - at most 20,000 ports (upstream raised the limit from 100 in v1.21), with unique DNS-label names (the
//!   empty name too is unique), a protocol of `TCP`, `UDP` or `SCTP` and a qualified `appProtocol`;
//! - `deprecatedTopology` cannot be written through v1 (dropped whenever the endpoints change), and
//!   `generation` moves when anything but the metadata changes, or the labels do;
//! - an empty `endpoints` or `ports` list reads back as `null`, as a Go client sees a slice kube-apiserver
//!   stored (protobuf in etcd keeps no empty lists);
//! - `kubectl get endpointslices` columns `NAME ADDRESSTYPE PORTS ENDPOINTS AGE`.
//!
//! The `kubernetes.io/service-name` label is optional. The EndpointSlice controller
//! (`controllers::endpointslice`) writes the slices of Services with selectors.

use std::net::{Ipv4Addr, Ipv6Addr};

use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::{Value, json};
use workloadbuilder::validation::strings;

use super::print::{age, col, name, text_cell};
use crate::error::{ApiError, FieldCause};
use crate::kinds::validate::invalid;
use crate::meta;
use crate::resource::{AdmitContext, ResourceInfo, Strategy};

/// The label naming a slice's Service (`discovery.LabelServiceName`).
pub(crate) const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming a slice's manager (`discovery.LabelManagedBy`).
pub(crate) const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// The label the controller puts on slices of headless Services (`v1.IsHeadlessService`).
pub(crate) const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";
/// The EndpointSlice controller's name, the value of [`LABEL_MANAGED_BY`] on its slices.
pub(crate) const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";

/// The address types a slice may have.
const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const MAX_ENDPOINTS: usize = 1000;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20_000;
const MAX_ZONE_HINTS: usize = 8;

/// The served resource.
pub(crate) fn resource() -> ResourceInfo {
    ResourceInfo::builtin(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
        EndpointSliceStrategy,
    )
}

#[derive(Debug)]
struct EndpointSliceStrategy;

/// The endpoints of a slice (none for `null`).
pub(crate) fn endpoints(slice: &Value) -> &[Value] {
    slice
        .get("endpoints")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The ports of a slice (none for `null`).
pub(crate) fn ports(slice: &Value) -> &[Value] {
    slice.get("ports").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// An empty or missing list as Go's JSON encoder writes a nil slice: `null`.
fn nil_when_empty(obj: &mut Value, field: &str) {
    let Some(m) = obj.as_object_mut() else { return };
    let empty = m.get(field).is_none_or(|v| v.as_array().is_none_or(Vec::is_empty));
    if empty {
        m.insert(field.into(), Value::Null);
    }
}

fn drop_deprecated_topology(obj: &mut Value) {
    for ep in obj
        .get_mut("endpoints")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(m) = ep.as_object_mut() {
            m.remove("deprecatedTopology");
        }
    }
}

impl Strategy for EndpointSliceStrategy {
    type Object = EndpointSlice;

    fn prepare(&self, cx: &mut AdmitContext<'_>, obj: &mut Value) -> Result<(), ApiError> {
        nil_when_empty(obj, "endpoints");
        nil_when_empty(obj, "ports");
        match cx.old {
            None => drop_deprecated_topology(obj),
            Some(old) => {
                // `dropTopologyOnV1`: kept only while the endpoints do not change.
                if old.get("endpoints") != obj.get("endpoints") {
                    drop_deprecated_topology(obj);
                }
                // The generation also moves when only the labels change (the generic step bumps it for
                // everything else).
                let content = |v: &Value| {
                    let mut m = v.as_object().cloned().unwrap_or_default();
                    for k in ["metadata", "apiVersion", "kind"] {
                        m.remove(k);
                    }
                    m
                };
                let labels = |v: &Value| meta::metadata(v).and_then(|m| m.get("labels")).cloned();
                if content(old) == content(obj) && labels(old) != labels(obj) {
                    let generation = meta::metadata(old)
                        .and_then(|m| m.get("generation"))
                        .and_then(Value::as_i64)
                        .unwrap_or(1);
                    meta::metadata_mut(obj).insert("generation".into(), json!(generation.saturating_add(1)));
                }
            }
        }
        Ok(())
    }

    fn validate(&self, cx: &mut AdmitContext<'_>, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        invalid(res, obj, validate_slice(obj))
    }

    fn validate_update(&self, cx: &mut AdmitContext<'_>, old: &Value, obj: &Value) -> Result<(), ApiError> {
        let res = cx.res;
        let mut causes = validate_slice(obj);
        let before = old.get("addressType").cloned().unwrap_or(Value::Null);
        let after = obj.get("addressType").cloned().unwrap_or(Value::Null);
        if before != after {
            causes.push(FieldCause::immutable("addressType", &after));
        }
        invalid(res, obj, causes)
    }

    fn columns(&self) -> Vec<Value> {
        vec![
            crate::resource::name_column(),
            col(
                "AddressType",
                "string",
                0,
                "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name.",
            ),
            col(
                "Ports",
                "string",
                0,
                "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports.",
            ),
            col(
                "Endpoints",
                "string",
                0,
                "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.",
            ),
            crate::resource::age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name(obj),
            text_cell(obj.get("addressType").and_then(Value::as_str).unwrap_or("")),
            text_cell(format_ports(ports(obj))),
            text_cell(format_endpoints(endpoints(obj))),
            age(obj),
        ]
    }
}

/// kubectl's `listWithMoreString`: the first three, `+ N more...`, or `<unset>`.
fn list_with_more(items: impl Iterator<Item = String>) -> String {
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut count = 0usize;
    for item in items {
        if list.len() < MAX {
            list.push(item);
        }
        count = count.saturating_add(1);
    }
    let joined = list.join(",");
    if count > MAX {
        format!("{joined} + {} more...", count - MAX)
    } else if joined.is_empty() {
        "<unset>".to_string()
    } else {
        joined
    }
}

/// `formatDiscoveryPorts`: each port's number, else its name, else `*`.
fn format_ports(ports: &[Value]) -> String {
    list_with_more(ports.iter().map(|p| match p.get("port").and_then(Value::as_i64) {
        Some(n) => n.to_string(),
        None => p.get("name").and_then(Value::as_str).unwrap_or("*").to_string(),
    }))
}

/// `formatDiscoveryEndpoints`: every endpoint's addresses.
fn format_endpoints(endpoints: &[Value]) -> String {
    list_with_more(endpoints.iter().flat_map(|e| {
        e.get("addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| a.as_str().unwrap_or("").to_string())
    }))
}

/// `ValidateEndpointSlice` (the metadata is validated by the generic admission step).
fn validate_slice(obj: &Value) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let address_type = obj.get("addressType").and_then(Value::as_str).unwrap_or("");
    if address_type.is_empty() {
        causes.push(FieldCause::required("addressType", ""));
    } else if !ADDRESS_TYPES.contains(&address_type) {
        causes.push(FieldCause::not_supported(
            "addressType",
            &json!(address_type),
            ADDRESS_TYPES,
        ));
    }
    validate_endpoints(endpoints(obj), address_type, &mut causes);
    validate_ports(ports(obj), &mut causes);
    causes
}

fn validate_endpoints(endpoints: &[Value], address_type: &str, causes: &mut Vec<FieldCause>) {
    if endpoints.len() > MAX_ENDPOINTS {
        causes.push(FieldCause::too_many("endpoints", endpoints.len(), MAX_ENDPOINTS));
        return;
    }
    for (i, ep) in endpoints.iter().enumerate() {
        let path = format!("endpoints[{i}]");
        let addresses = ep
            .get("addresses")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if addresses.is_empty() {
            causes.push(FieldCause::required(
                format!("{path}.addresses"),
                "must contain at least 1 address",
            ));
        } else if addresses.len() > MAX_ADDRESSES {
            causes.push(FieldCause::too_many(
                format!("{path}.addresses"),
                addresses.len(),
                MAX_ADDRESSES,
            ));
        }
        for (j, a) in addresses.iter().enumerate() {
            let a = a.as_str().unwrap_or("");
            let at = format!("{path}.addresses[{j}]");
            match address_type {
                "IPv4" => {
                    if parse_ip(a).is_none_or(|ip| to_ipv4(&ip).is_none()) {
                        causes.push(FieldCause::invalid(&at, &json!(a), "must be a valid IPv4 address"));
                    }
                    endpoint_ip(a, &at, causes);
                }
                "IPv6" => {
                    if parse_ip(a).is_none_or(|ip| to_ipv4(&ip).is_some()) {
                        causes.push(FieldCause::invalid(&at, &json!(a), "must be a valid IPv6 address"));
                    }
                    endpoint_ip(a, &at, causes);
                }
                "FQDN" => fully_qualified_domain_name(a, &at, causes),
                _ => {}
            }
        }
        if let Some(node) = ep.get("nodeName").and_then(Value::as_str) {
            for msg in strings::is_dns1123_subdomain(node) {
                causes.push(FieldCause::invalid(format!("{path}.nodeName"), &json!(node), &msg));
            }
        }
        if let Some(hostname) = ep.get("hostname").and_then(Value::as_str) {
            for msg in strings::is_dns1123_label(hostname) {
                causes.push(FieldCause::invalid(format!("{path}.hostname"), &json!(hostname), &msg));
            }
        }
        let zones = ep
            .pointer("/hints/forZones")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if zones.len() > MAX_ZONE_HINTS {
            causes.push(FieldCause::too_many(
                format!("{path}.hints.forZones"),
                zones.len(),
                MAX_ZONE_HINTS,
            ));
            continue;
        }
        let mut seen = std::collections::BTreeSet::new();
        for (j, z) in zones.iter().enumerate() {
            let zone = z.get("name").and_then(Value::as_str).unwrap_or("");
            let at = format!("{path}.hints.forZones[{j}].name");
            if !seen.insert(zone) {
                causes.push(FieldCause::duplicate(&at, &json!(zone)));
            }
            for msg in strings::is_valid_label_value(zone) {
                causes.push(FieldCause::invalid(&at, &json!(zone), &msg));
            }
        }
    }
}

fn validate_ports(ports: &[Value], causes: &mut Vec<FieldCause>) {
    if ports.len() > MAX_PORTS {
        causes.push(FieldCause::too_many("ports", ports.len(), MAX_PORTS));
        return;
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let path = format!("ports[{i}]");
        let port_name = p.get("name").and_then(Value::as_str).unwrap_or("");
        if !port_name.is_empty() {
            for msg in strings::is_dns1123_label(port_name) {
                causes.push(FieldCause::invalid(format!("{path}.name"), &json!(port_name), &msg));
            }
        }
        if !names.insert(port_name) {
            causes.push(FieldCause::duplicate(format!("{path}.name"), &json!(port_name)));
        }
        match p.get("protocol").and_then(Value::as_str) {
            None => causes.push(FieldCause::required(format!("{path}.protocol"), "")),
            Some(proto) if !PROTOCOLS.contains(&proto) => {
                causes.push(FieldCause::not_supported(
                    format!("{path}.protocol"),
                    &json!(proto),
                    PROTOCOLS,
                ));
            }
            Some(_) => {}
        }
        if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
            for msg in strings::is_qualified_name(app) {
                causes.push(FieldCause::invalid(format!("{path}.appProtocol"), &json!(app), &msg));
            }
        }
    }
}

/// An IP as Go's `ParseIPSloppy` reads it (IPv4 parts may have leading zeros).
fn parse_ip(s: &str) -> Option<std::net::IpAddr> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(std::net::IpAddr::V6);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(&parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(std::net::IpAddr::V4(Ipv4Addr::from(octets)))
}

/// Go's `ip.To4()`: IPv4 addresses and IPv4-mapped IPv6 ones.
fn to_ipv4(ip: &std::net::IpAddr) -> Option<Ipv4Addr> {
    match ip {
        std::net::IpAddr::V4(v4) => Some(*v4),
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    }
}

/// `ValidateEndpointIP`: no unspecified, loopback, link-local or link-local multicast address.
fn endpoint_ip(a: &str, path: &str, causes: &mut Vec<FieldCause>) {
    let Some(ip) = parse_ip(a) else {
        causes.push(FieldCause::invalid(path, &json!(a), "must be a valid IP address"));
        return;
    };
    let (unspecified, loopback, link_local, link_local_multicast) = match to_ipv4(&ip) {
        Some(v4) => {
            let o = v4.octets();
            (
                v4.is_unspecified(),
                v4.is_loopback(),
                v4.is_link_local(),
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        None => {
            let std::net::IpAddr::V6(v6) = ip else { return };
            let s = v6.segments();
            (
                v6.is_unspecified(),
                v6.is_loopback(),
                s[0] & 0xffc0 == 0xfe80,
                s[0] & 0xff0f == 0xff02,
            )
        }
    };
    if unspecified {
        causes.push(FieldCause::invalid(
            path,
            &json!(a),
            &format!("may not be unspecified ({a})"),
        ));
    }
    if loopback {
        causes.push(FieldCause::invalid(
            path,
            &json!(a),
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ));
    }
    if link_local {
        causes.push(FieldCause::invalid(
            path,
            &json!(a),
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ));
    }
    if link_local_multicast {
        causes.push(FieldCause::invalid(
            path,
            &json!(a),
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
}

/// `IsFullyQualifiedDomainName`: a DNS subdomain of at least two labels, a trailing dot allowed.
fn fully_qualified_domain_name(name: &str, path: &str, causes: &mut Vec<FieldCause>) {
    if name.is_empty() {
        causes.push(FieldCause::required(path, ""));
        return;
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = strings::is_dns1123_subdomain(name);
    if !errs.is_empty() {
        causes.push(FieldCause::invalid(path, &json!(name), &errs.join(",")));
        return;
    }
    if name.split('.').count() < 2 {
        causes.push(FieldCause::invalid(
            path,
            &json!(name),
            "should be a domain with at least two segments separated by dots",
        ));
        return;
    }
    for label in name.split('.') {
        let errs = strings::is_dns1123_label(label);
        if !errs.is_empty() {
            causes.push(FieldCause::invalid(path, &json!(label), &errs.join(",")));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::api::State;
    use crate::request::RequestContext;

    fn create(state: &mut State, body: Value) -> Result<std::sync::Arc<Value>, String> {
        let res = state.builtin("discovery.k8s.io", "endpointslices").unwrap();
        let mut body = body;
        body["metadata"]["generateName"] = json!("s-");
        state
            .create(&res, "default", body, &mut RequestContext::manager("t"))
            .map_err(|e| e.message().to_string())
    }

    fn endpoint(ip: &str) -> Value {
        json!({"addresses": [ip], "conditions": {"ready": true}})
    }

    #[test]
    fn slices_are_validated_like_kube_apiserver() {
        let mut state = State::new(100, Default::default());
        let ok = create(
            &mut state,
            json!({"addressType": "IPv4", "endpoints": [endpoint("10.1.2.3")],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}),
        )
        .unwrap();
        assert_eq!(ok["metadata"]["generation"], 1);
        let missing = create(&mut state, json!({"endpoints": []})).unwrap_err();
        assert!(missing.contains("addressType: Required value"), "{missing}");
        let bad = create(&mut state, json!({"addressType": "IP"})).unwrap_err();
        assert!(
            bad.contains(r#"addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6""#),
            "{bad}"
        );
        let many: Vec<Value> = (0..1001)
            .map(|i| endpoint(&format!("10.0.{}.{}", i / 250, i % 250 + 1)))
            .collect();
        let too_many = create(&mut state, json!({"addressType": "IPv4", "endpoints": many})).unwrap_err();
        assert!(
            too_many.contains("endpoints: Too many: 1001: must have at most 1000 items"),
            "{too_many}"
        );
        let addresses = create(
            &mut state,
            json!({"addressType": "IPv4", "endpoints": [{"addresses": []}, {"addresses": ["127.0.0.1", "fe80::1"]},
                {"addresses": ["10.0.0.1"], "hostname": "Not_A_Label"}]}),
        )
        .unwrap_err();
        for want in [
            "endpoints[0].addresses: Required value: must contain at least 1 address",
            "endpoints[1].addresses[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "endpoints[1].addresses[1]: Invalid value: \"fe80::1\": must be a valid IPv4 address",
            "endpoints[2].hostname: Invalid value: \"Not_A_Label\"",
        ] {
            assert!(addresses.contains(want), "{want} not in {addresses}");
        }
        let ports = create(
            &mut state,
            json!({"addressType": "IPv6", "endpoints": [endpoint("fd00::1")],
                "ports": [{"name": "", "port": 1, "protocol": "TCP"}, {"port": 2, "protocol": "ICMP"},
                    {"name": "UPPER", "protocol": "UDP"}, {"name": "x", "appProtocol": "-bad"}]}),
        )
        .unwrap_err();
        for want in [
            "ports[1].name: Duplicate value: \"\"",
            "ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "ports[2].name: Invalid value: \"UPPER\"",
            "ports[3].protocol: Required value",
            "ports[3].appProtocol: Invalid value: \"-bad\"",
        ] {
            assert!(ports.contains(want), "{want} not in {ports}");
        }
        let fqdn = create(
            &mut state,
            json!({"addressType": "FQDN", "endpoints": [{"addresses": ["example.com."]}, {"addresses": ["localhost"]}]}),
        )
        .unwrap_err();
        assert!(
            fqdn.contains("endpoints[1].addresses[0]: Invalid value: \"localhost\": should be a domain with at least two segments separated by dots"),
            "{fqdn}"
        );
        assert!(!fqdn.contains("endpoints[0]"), "{fqdn}");
    }

    #[test]
    fn address_type_is_immutable_and_labels_move_the_generation() {
        let mut state = State::new(100, Default::default());
        let created = create(
            &mut state,
            json!({"addressType": "IPv4", "endpoints": [endpoint("10.1.2.3")]}),
        )
        .unwrap();
        let res = state.builtin("discovery.k8s.io", "endpointslices").unwrap();
        let name = crate::meta::name(&created).to_string();
        let mut changed = (*created).clone();
        changed["addressType"] = json!("IPv6");
        changed["endpoints"] = json!([endpoint("fd00::1")]);
        let err = state
            .update(&res, "default", &name, changed, None, &mut RequestContext::manager("t"))
            .unwrap_err();
        assert!(
            err.message()
                .contains("addressType: Invalid value: \"IPv6\": field is immutable"),
            "{}",
            err.message()
        );
        let mut labelled = (*created).clone();
        labelled["metadata"]["labels"] = json!({"a": "b"});
        let updated = state
            .update(
                &res,
                "default",
                &name,
                labelled,
                None,
                &mut RequestContext::manager("t"),
            )
            .unwrap();
        assert_eq!(updated["metadata"]["generation"], 2);
        let mut moved = (*updated).clone();
        moved["endpoints"] = json!([endpoint("10.1.2.4")]);
        let updated = state
            .update(&res, "default", &name, moved, None, &mut RequestContext::manager("t"))
            .unwrap();
        assert_eq!(updated["metadata"]["generation"], 3);
    }

    #[test]
    fn empty_lists_read_back_as_null_and_topology_is_dropped() {
        let mut state = State::new(100, Default::default());
        let created = create(&mut state, json!({"addressType": "IPv4", "endpoints": [], "ports": []})).unwrap();
        assert_eq!(created["endpoints"], Value::Null);
        assert_eq!(created["ports"], Value::Null);
        assert!(created.as_object().unwrap().contains_key("endpoints"));
        let with_topology = create(
            &mut state,
            json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"], "deprecatedTopology": {"a": "b"}}]}),
        )
        .unwrap();
        assert!(with_topology["endpoints"][0].get("deprecatedTopology").is_none());
    }

    #[test]
    fn table_cells_list_ports_and_addresses_like_kubectl() {
        let mut state = State::new(100, Default::default());
        let eps: Vec<Value> = (1..=5).map(|i| endpoint(&format!("10.0.0.{i}"))).collect();
        let created = create(
            &mut state,
            json!({"addressType": "IPv4", "endpoints": eps,
                "ports": [{"name": "a", "port": 80, "protocol": "TCP"}, {"name": "b", "protocol": "TCP"}]}),
        )
        .unwrap();
        let res = state.builtin("discovery.k8s.io", "endpointslices").unwrap();
        let cells = res.strategy.cells(&res, &created);
        assert_eq!(cells[1], "IPv4");
        assert_eq!(cells[2], "80,b");
        assert_eq!(cells[3], "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...");
        let empty = create(&mut state, json!({"addressType": "IPv4"})).unwrap();
        let cells = res.strategy.cells(&res, &empty);
        assert_eq!(cells[2], "<unset>");
        assert_eq!(cells[3], "<unset>");
    }
}
