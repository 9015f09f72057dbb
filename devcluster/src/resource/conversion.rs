//! Custom resource conversion by webhook (a CRD's `spec.conversion.strategy: Webhook`), as kube-apiserver's
//! `webhookConverter` does it: a `ConversionReview` (`apiextensions.k8s.io/v1`) with a fresh `uid` and the
//! `desiredAPIVersion`, the answer checked (its `uid`, `result.status`, one converted object of the desired
//! version and the same kind) and the object's metadata restored but for labels and annotations, which a
//! conversion may change. A failure reads `conversion webhook for <group>/<version>, Kind=<kind> failed:
//! <message>`, upstream's wording.
//!
//! Where the webhook is: devcluster has no TLS and no Service network, so it does not dial the webhook's
//! `clientConfig`; it calls the handler registered in-process for that address
//! ([`ConversionWebhooks`], `DevClusterConfig::conversion_webhooks`). A CRD whose webhook is not
//! registered is served, and every conversion through it fails as an unreachable webhook does upstream.
//!
//! When: devcluster keeps each custom resource in the version it was last written through and converts
//! when a client reads it through another (get, list, watch, the object a patch applies to); a write
//! through a version other than the storage version is converted to the storage version too, and refused
//! if that fails, as kube-apiserver refuses what it cannot store. Clients see what kube-apiserver shows
//! them; only the stored form differs.

use std::fmt;
use std::sync::Arc;

use kube::core::conversion::ConversionReview;
use serde_json::{Value, json};

/// A conversion webhook's handler: a `ConversionReview` request in, the review with its response out.
pub type ConversionHandler = Arc<dyn Fn(ConversionReview) -> ConversionReview + Send + Sync>;

/// Where a CRD's conversion webhook is, as its `spec.conversion.webhook.clientConfig` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookAddress {
    /// `clientConfig.service` (`port` defaults to 443, `path` to `/`).
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The Service's port.
        port: i32,
        /// The URL path.
        path: String,
    },
    /// `clientConfig.url`.
    Url(String),
}

impl WebhookAddress {
    /// The address of a CRD's `clientConfig`, if it names one.
    pub(crate) fn of_client_config(config: &Value) -> Option<Self> {
        if let Some(url) = config.get("url").and_then(Value::as_str) {
            return Some(WebhookAddress::Url(url.to_string()));
        }
        let service = config.get("service")?;
        let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(WebhookAddress::Service {
            namespace: text("namespace"),
            name: text("name"),
            port: service
                .get("port")
                .and_then(Value::as_i64)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(443),
            path: Some(text("path"))
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "/".into()),
        })
    }

    /// The URL kube-apiserver would post to.
    fn url(&self) -> String {
        match self {
            WebhookAddress::Service {
                namespace,
                name,
                port,
                path,
            } => format!("https://{name}.{namespace}.svc:{port}{path}?timeout=30s"),
            WebhookAddress::Url(u) => u.clone(),
        }
    }
}

/// The conversion webhooks devcluster reaches, by address.
#[derive(Clone, Default)]
pub struct ConversionWebhooks(Vec<(WebhookAddress, ConversionHandler)>);

impl fmt::Debug for ConversionWebhooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(a, _)| a)).finish()
    }
}

impl ConversionWebhooks {
    /// Answers conversions for CRDs whose webhook is at `address` with `handler`.
    pub fn register(&mut self, address: WebhookAddress, handler: ConversionHandler) {
        self.0.retain(|(a, _)| a != &address);
        self.0.push((address, handler));
    }

    /// Registers kwas' JobSet conversion (`jobset.x-k8s.io` v1alpha2 <-> v1,
    /// [`kwas_api_types::jobset::v1::review`]) at the address kwas' JobSet CRD names
    /// ([`kwas_api_types::jobset::CONVERSION_WEBHOOK`]), where kwas' controllers serve it on a real cluster.
    pub fn register_jobset(&mut self) {
        let (namespace, name, port, path) = kwas_api_types::jobset::CONVERSION_WEBHOOK;
        self.register(
            WebhookAddress::Service {
                namespace: namespace.into(),
                name: name.into(),
                port,
                path: path.into(),
            },
            Arc::new(kwas_api_types::jobset::v1::review),
        );
    }

    pub(crate) fn find(&self, address: &WebhookAddress) -> Option<ConversionHandler> {
        self.0.iter().find(|(a, _)| a == address).map(|(_, h)| h.clone())
    }
}

/// A served custom resource version's conversion webhook.
#[derive(Clone)]
pub(crate) struct WebhookConversion {
    /// Where the webhook is.
    pub address: WebhookAddress,
    /// Its handler, when registered.
    pub handler: Option<ConversionHandler>,
    /// The CRD's storage version (`group/version`).
    pub storage_api_version: String,
}

impl fmt::Debug for WebhookConversion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookConversion")
            .field("address", &self.address)
            .field("registered", &self.handler.is_some())
            .field("storage_api_version", &self.storage_api_version)
            .finish()
    }
}

impl WebhookConversion {
    /// `obj` converted to `desired` (`group/version`) by the webhook, or upstream's error message.
    pub(crate) fn convert(&self, obj: &Value, desired: &str) -> Result<Value, String> {
        let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if from == desired {
            return Ok(obj.clone());
        }
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let failed = |why: String| format!("conversion webhook for {from}, Kind={kind} failed: {why}");
        let Some(handler) = &self.handler else {
            return Err(failed(format!(
                "Post \"{}\": no conversion webhook is registered at this address in devcluster",
                self.address.url()
            )));
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let review: ConversionReview = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [obj]},
        }))
        .map_err(|e| failed(e.to_string()))?;
        let answer = handler(review);
        let Some(response) = answer.response else {
            return Err(failed("no response provided".into()));
        };
        if response.uid != uid {
            return Err(failed(format!("expected response.uid={uid:?}, got {:?}", response.uid)));
        }
        let success = matches!(
            response.result.status,
            Some(kube::core::response::StatusSummary::Success)
        );
        if !success {
            if response.result.message.is_empty() {
                return Err(failed(format!(
                    "response.result.status was '{}', not 'Success'",
                    response.result.status.map(|s| format!("{s:?}")).unwrap_or_default()
                )));
            }
            return Err(failed(response.result.message));
        }
        let mut objects = response.converted_objects;
        if objects.len() != 1 {
            return Err(failed(format!("returned {} objects, expected 1", objects.len())));
        }
        let mut converted = objects.remove(0);
        let got = converted.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if got != desired {
            return Err(failed(format!(
                "invalid converted object: wrong apiVersion {got:?}, expected {desired:?}"
            )));
        }
        if converted.get("kind").and_then(Value::as_str) != Some(kind) {
            return Err(failed(format!(
                "invalid converted object: kind changed, expected {kind:?}"
            )));
        }
        // Only labels and annotations may change (`restoreObjectMeta`).
        let mut metadata = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
        if let (Some(m), Some(new)) = (metadata.as_object_mut(), converted.get("metadata")) {
            for key in ["labels", "annotations"] {
                match new.get(key) {
                    Some(v) if v.is_object() => {
                        m.insert(key.into(), v.clone());
                    }
                    Some(Value::Null) | None => {
                        m.remove(key);
                    }
                    Some(_) => return Err(failed(format!("invalid metadata.{key} in the converted object"))),
                }
            }
        }
        if let Some(c) = converted.as_object_mut() {
            c.insert("metadata".into(), metadata);
        }
        Ok(converted)
    }
}
