//! One request as the resource handlers read it: query parameters, body decoding by media type, write,
//! list and delete options; the guard against requests a browser could make; supported field selectors.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, header};
use serde_json::Value;

use crate::api::{self, DeleteOptions, ListOptions, PatchType};
use crate::cluster::Shared;
use crate::error::ApiError;
use crate::faults::Verb;
use crate::protobuf::{self, Wire};
use crate::request::{FieldValidation, RequestContext};
use crate::resource::{Propagation, ResourceInfo};
use crate::selectors::{FieldSelector, LabelSelector};

pub(super) fn parse_query(q: Option<&str>) -> HashMap<String, String> {
    q.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

/// Refuses requests a web page could have made through the user's browser: a `Host` that is not a loopback
/// name (DNS rebinding: an attacker's domain resolving to 127.0.0.1) or an `Origin` that is not loopback
/// (a cross-site request). Clients such as kubectl, client-go, kube-rs and the Python client send neither.
/// A cluster started to accept remote clients skips the check (it has no authentication either way).
pub(super) fn guard(shared: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    if shared.remote_clients {
        return Ok(());
    }
    let host_of = |authority: &str| -> String {
        let authority = authority.trim();
        let host = if let Some(rest) = authority.strip_prefix('[') {
            rest.split(']').next().unwrap_or("")
        } else {
            authority.rsplit_once(':').map_or(authority, |(h, _)| h)
        };
        host.to_ascii_lowercase()
    };
    let loopback = |host: &str| {
        host == "localhost"
            || host.ends_with(".localhost")
            || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    };
    if let Some(h) = headers.get(header::HOST) {
        let host = host_of(h.to_str().unwrap_or(""));
        if !loopback(&host) {
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!("host {host:?} is not allowed: devcluster only answers requests addressed to loopback"),
                None,
            ));
        }
    }
    if let Some(o) = headers.get(header::ORIGIN) {
        let origin = o.to_str().unwrap_or("");
        let authority = origin.split_once("://").map_or("", |(_, a)| a);
        if !loopback(&host_of(authority)) {
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!("cross-origin request from {origin:?} refused"),
                None,
            ));
        }
    }
    Ok(())
}

pub(super) struct Request {
    pub(super) method: Method,
    pub(super) query: HashMap<String, String>,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
    /// The response encoding the client asked for.
    pub(super) wire: Wire,
    /// The connection the request came on, so a watch can close it.
    pub(super) connection: Option<super::serve::Connection>,
}

impl Request {
    pub(super) fn q(&self, k: &str) -> Option<&str> {
        self.query.get(k).map(String::as_str)
    }

    pub(super) fn content_type(&self) -> String {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json")
            .to_string()
    }

    /// The patch type of a PATCH request, from its Content-Type.
    pub(super) fn patch_type(&self) -> Result<PatchType, ApiError> {
        let ct = self.content_type();
        if ct.starts_with("application/json-patch+json") {
            Ok(PatchType::Json)
        } else if ct.starts_with("application/merge-patch+json") {
            Ok(PatchType::Merge)
        } else if ct.starts_with("application/strategic-merge-patch+json") {
            Ok(PatchType::Strategic)
        } else if ct.starts_with("application/apply-patch") {
            Ok(PatchType::Apply)
        } else {
            Err(ApiError::unsupported_media_type(&ct))
        }
    }

    pub(super) fn field_manager(&self) -> String {
        if let Some(m) = self.q("fieldManager") {
            return m.to_string();
        }
        let ua = self
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        ua.split('/').next().unwrap_or("").chars().take(128).collect()
    }

    pub(super) fn write_options(&self) -> Result<RequestContext, ApiError> {
        let field_validation = match self.q("fieldValidation") {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "fieldValidation parameter unsupported: {other}, valid values are: Ignore, Warn, Strict"
                )));
            }
        };
        Ok(RequestContext {
            dry_run: self.q("dryRun") == Some("All"),
            field_manager: self.field_manager(),
            field_validation,
            force: self.q("force") == Some("true"),
            ..Default::default()
        })
    }

    /// Decodes the body by its media type: JSON (also when none is given), YAML, or the Kubernetes protobuf
    /// envelope. Unknown protobuf field numbers are reported per `fieldValidation` (the first 100, as for
    /// JSON): an error when `Strict`, a warning in `warnings` when `Warn` (the default), nothing when
    /// `Ignore`. A protobuf body with more repeated entries than typed decoding takes is a 413.
    pub(super) fn body_value(&self, warnings: &mut Vec<String>) -> Result<Value, ApiError> {
        if self.body.is_empty() {
            return Ok(Value::Null);
        }
        // Bodies are decoded by their declared media type (none means JSON, as in kube-apiserver: the Python
        // client sends none); `text/plain` and the form types a web page can post without a CORS preflight
        // are refused. A cross-site request without a Content-Type still carries an `Origin`, which
        // [`guard`] refuses.
        let ct = match self.headers.get(header::CONTENT_TYPE) {
            Some(v) => v.to_str().unwrap_or("").to_string(),
            None => "application/json".to_string(),
        };
        let media_type = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let yaml = match media_type.as_str() {
            "application/json"
            | "application/json-patch+json"
            | "application/merge-patch+json"
            | "application/strategic-merge-patch+json" => false,
            "application/yaml" | "application/apply-patch+yaml" => true,
            protobuf::MEDIA_TYPE => return self.protobuf_body(&ct, warnings),
            _ => return Err(ApiError::unsupported_media_type(&ct)),
        };
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(v) => Ok(v),
            Err(json_err) if yaml => {
                let text = std::str::from_utf8(&self.body).map_err(|e| ApiError::bad_request(e.to_string()))?;
                serde_saphyr::from_str::<Value>(text)
                    .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e} (as JSON: {json_err})")))
            }
            Err(e) => Err(ApiError::bad_request(format!(
                "couldn't get version/kind; json parse error: {e}"
            ))),
        }
    }

    fn protobuf_body(&self, ct: &str, warnings: &mut Vec<String>) -> Result<Value, ApiError> {
        let decoded = protobuf::decode(&self.body).map_err(|e| {
            if e.too_large {
                ApiError::too_large(format!("Request entity too large: {e}"))
            } else if e.message.starts_with("no kind") {
                // Custom resources (and kinds devcluster does not serve) have no protobuf form.
                ApiError::unsupported_media_type(ct)
            } else {
                ApiError::bad_request(format!("the protobuf body does not decode: {e}"))
            }
        })?;
        if !decoded.unknown.is_empty() {
            match self.q("fieldValidation") {
                Some("Strict") => {
                    let mut list = decoded.unknown.join(", ");
                    if decoded.unknown_more > 0 {
                        list.push_str(&format!(", and {} more unknown fields", decoded.unknown_more));
                    }
                    return Err(ApiError::bad_request(format!("strict decoding error: {list}")));
                }
                Some("Ignore") => {}
                _ => warnings.extend(decoded.unknown),
            }
        }
        Ok(decoded.object)
    }

    pub(super) fn list_options(&self, res: &ResourceInfo) -> Result<ListOptions, ApiError> {
        let label_selector = LabelSelector::parse(self.q("labelSelector").unwrap_or(""))?;
        let field_selector = FieldSelector::parse(self.q("fieldSelector").unwrap_or(""))?;
        field_selector.check_supported(|f| supported_field(res, f))?;
        let limit = match self.q("limit") {
            Some(l) if !l.is_empty() => l
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?,
            _ => 0,
        };
        Ok(ListOptions {
            label_selector,
            field_selector,
            limit,
            continue_token: self.q("continue").map(str::to_string),
            resource_version: self.q("resourceVersion").map(str::to_string),
            resource_version_match: self.q("resourceVersionMatch").map(str::to_string),
        })
    }
}

/// The field selectors a resource supports: `metadata.name` and `metadata.namespace` everywhere, and what
/// its kind adds.
pub(super) fn supported_field(res: &ResourceInfo, field: &str) -> bool {
    matches!(field, "metadata.name" | "metadata.namespace") || res.strategy.supports_field(res, field)
}

pub(super) fn verb_of(method: &Method, name: bool, watch: bool) -> Verb {
    match (method.as_str(), name) {
        ("GET", _) if watch => Verb::Watch,
        ("GET", true) => Verb::Get,
        ("GET", false) => Verb::List,
        ("POST", _) => Verb::Create,
        ("PUT", _) => Verb::Update,
        ("PATCH", _) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        ("DELETE", false) => Verb::Deletecollection,
        _ => Verb::Get,
    }
}

pub(super) fn delete_options(req: &Request, warnings: &mut Vec<String>) -> Result<DeleteOptions, ApiError> {
    let body = req.body_value(warnings)?;
    let mut opts = if body.is_object() {
        DeleteOptions::from_body(&body)?
    } else {
        DeleteOptions::default()
    };
    if let Some(g) = req.q("gracePeriodSeconds").and_then(|g| g.parse().ok()) {
        opts.grace_period_seconds = Some(g);
    }
    if let Some(p) = req.q("propagationPolicy") {
        opts.propagation = Some(api::parse_propagation(p)?);
    }
    if let Some(o) = req.q("orphanDependents") {
        opts.propagation = Some(if o == "true" {
            Propagation::Orphan
        } else {
            Propagation::Background
        });
    }
    if req.q("dryRun") == Some("All") {
        opts.dry_run = true;
    }
    Ok(opts)
}
