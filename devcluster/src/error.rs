//! Errors: [`ApiError`], a Kubernetes `Status` the API returns to clients, and [`Error`], what the library's
//! own entry points (start, node management, configuration) return.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

/// An error the API server answers with: a complete `meta/v1` `Status` object with the same reason, code,
/// message and details kube-apiserver would send, so kubectl, kube-rs and the Python client print it as
/// they would from a real cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError(pub Box<Status>);

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message(), self.code())
    }
}

impl std::error::Error for ApiError {}

impl From<Status> for ApiError {
    fn from(status: Status) -> Self {
        ApiError(Box::new(status))
    }
}

/// One field-level cause of an `Invalid` error, rendered like Kubernetes' `field.Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldCause {
    /// The field path, such as `spec.containers[0].image`.
    pub field: String,
    /// The `StatusCause` reason, such as `FieldValueRequired`.
    pub reason: &'static str,
    /// The rendered message without the field path, such as `Required value`.
    pub message: String,
}

impl From<&workloadbuilder::FieldError> for FieldCause {
    fn from(e: &workloadbuilder::FieldError) -> Self {
        FieldCause {
            field: e.field.to_string(),
            reason: e.error_type.cause_type(),
            message: e.body(),
        }
    }
}

impl From<&kwas_api_types::field::FieldError> for FieldCause {
    fn from(e: &kwas_api_types::field::FieldError) -> Self {
        FieldCause {
            field: e.field.clone(),
            reason: e.cause_type(),
            message: e.body(),
        }
    }
}

impl FieldCause {
    /// `<field>: Required value[: detail]`.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        FieldCause {
            field: field.into(),
            reason: "FieldValueRequired",
            message,
        }
    }

    /// `<field>: Invalid value: <value>: detail`.
    pub fn invalid(field: impl Into<String>, value: &serde_json::Value, detail: &str) -> Self {
        let value = render_value(value);
        let message = if detail.is_empty() {
            format!("Invalid value: {value}")
        } else {
            format!("Invalid value: {value}: {detail}")
        };
        FieldCause {
            field: field.into(),
            reason: "FieldValueInvalid",
            message,
        }
    }

    /// `<field>: Invalid value: detail`: the value omitted (`field.OmitValueType`), as kube-apiserver
    /// reports a failed CEL rule on an object or a list.
    pub fn invalid_omitted(field: impl Into<String>, detail: &str) -> Self {
        FieldCause {
            field: field.into(),
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {detail}"),
        }
    }

    /// `<field>: Internal error: detail`.
    pub fn internal(field: impl Into<String>, detail: &str) -> Self {
        FieldCause {
            field: field.into(),
            reason: "InternalError",
            message: format!("Internal error: {detail}"),
        }
    }

    /// `<field>: Forbidden: detail`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        FieldCause {
            field: field.into(),
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
        }
    }

    /// `<field>: Unsupported value: <value>: supported values: "a", "b"`.
    pub fn not_supported(field: impl Into<String>, value: &serde_json::Value, supported: &[&str]) -> Self {
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        FieldCause {
            field: field.into(),
            reason: "FieldValueNotSupported",
            message: format!("Unsupported value: {}: supported values: {list}", render_value(value)),
        }
    }

    /// `<field>: Duplicate value: <value>`.
    pub fn duplicate(field: impl Into<String>, value: &serde_json::Value) -> Self {
        FieldCause {
            field: field.into(),
            reason: "FieldValueDuplicate",
            message: format!("Duplicate value: {}", render_value(value)),
        }
    }

    /// The `field is immutable` error kube-apiserver reports for immutable fields.
    pub fn immutable(field: impl Into<String>, value: &serde_json::Value) -> Self {
        FieldCause::invalid(field, value, "field is immutable")
    }

    /// `<field>: Too long: must have at most <max> bytes`.
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        FieldCause {
            field: field.into(),
            reason: "FieldValueTooLong",
            message: format!("Too long: must have at most {max} bytes"),
        }
    }

    /// `<field>: Too many: <actual>: must have at most <max> items` (`field.TooMany`).
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        FieldCause {
            field: field.into(),
            reason: "FieldValueTooMany",
            message: format!("Too many: {actual}: must have at most {max} items"),
        }
    }

    /// `<field>: Not found: <value>[: detail]` (`field.NotFound`, with the detail callers add).
    pub fn not_found(field: impl Into<String>, value: &serde_json::Value, detail: &str) -> Self {
        let mut message = format!("Not found: {}", render_value(value));
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldCause {
            field: field.into(),
            reason: "FieldValueNotFound",
            message,
        }
    }
}

/// Renders a value the way Go's `field.Error` does: strings quoted, numbers and booleans bare, objects as
/// compact JSON.
fn render_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => format!("{s:?}"),
        serde_json::Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

impl ApiError {
    /// Builds an error from its parts.
    pub fn new(code: u16, reason: &str, message: impl Into<String>, details: Option<StatusDetails>) -> Self {
        ApiError(Box::new(Status {
            code: Some(i32::from(code)),
            details,
            message: Some(message.into()),
            metadata: Default::default(),
            reason: if reason.is_empty() {
                None
            } else {
                Some(reason.to_string())
            },
            status: Some("Failure".to_string()),
        }))
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        self.0.code.and_then(|c| u16::try_from(c).ok()).unwrap_or(500)
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        self.0.message.as_deref().unwrap_or("")
    }

    /// The machine-readable reason (`NotFound`, `Conflict`, ...).
    pub fn reason(&self) -> &str {
        self.0.reason.as_deref().unwrap_or("")
    }

    fn details(group: &str, kind: &str, name: &str) -> Option<StatusDetails> {
        Some(StatusDetails {
            group: if group.is_empty() {
                None
            } else {
                Some(group.to_string())
            },
            kind: Some(kind.to_string()),
            name: if name.is_empty() { None } else { Some(name.to_string()) },
            ..Default::default()
        })
    }

    /// `pods "x" not found` (404 NotFound).
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
            Self::details(group, plural, name),
        )
    }

    /// `pods "x" already exists` (409 AlreadyExists).
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
            Self::details(group, plural, name),
        )
    }

    /// `Operation cannot be fulfilled on pods "x": <detail>` (409 Conflict).
    pub fn conflict(group: &str, plural: &str, name: &str, detail: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {detail}",
                qualified(group, plural)
            ),
            Self::details(group, plural, name),
        )
    }

    /// The optimistic-concurrency conflict for a stale `resourceVersion`.
    pub fn stale(group: &str, plural: &str, name: &str) -> Self {
        Self::conflict(
            group,
            plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// `Kind.group "name" is invalid: causes` (422 Invalid), the way kube-apiserver renders a
    /// `field.ErrorList`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<FieldCause>) -> Self {
        let rendered: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        let body = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let message = format!("{} \"{name}\" is invalid: {body}", qualified(group, kind));
        let mut details = Self::details(group, kind, name).unwrap_or_default();
        details.causes = Some(
            causes
                .into_iter()
                .map(|c| StatusCause {
                    field: Some(c.field),
                    message: Some(c.message),
                    reason: Some(c.reason.into()),
                })
                .collect(),
        );
        ApiError::new(422, "Invalid", message, Some(details))
    }

    /// `pods "x" is forbidden: detail` (403 Forbidden).
    pub fn forbidden(group: &str, plural: &str, name: &str, detail: &str) -> Self {
        let subject = if name.is_empty() {
            qualified(group, plural)
        } else {
            format!("{} \"{name}\"", qualified(group, plural))
        };
        ApiError::new(
            403,
            "Forbidden",
            format!("{subject} is forbidden: {detail}"),
            Self::details(group, plural, name),
        )
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message, None)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        ApiError::new(405, "MethodNotAllowed", message, None)
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got {content_type:?})"
            ),
            None,
        )
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(message: impl Into<String>) -> Self {
        ApiError::new(413, "RequestEntityTooLarge", message, None)
    }

    /// 410 Expired: a resourceVersion or continue token older than the retained window.
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message, None)
    }

    /// 404 for a path no resource is served at.
    pub fn path_not_found() -> Self {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
            None,
        )
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        let details = StatusDetails {
            causes: Some(vec![StatusCause {
                field: None,
                message: Some(message.clone()),
                reason: Some("UnexpectedServerResponse".into()),
            }]),
            ..Default::default()
        };
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
            Some(details),
        )
    }

    /// 429 TooManyRequests with a retry hint.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        let details = StatusDetails {
            retry_after_seconds: Some(1),
            ..Default::default()
        };
        ApiError::new(429, "TooManyRequests", message, Some(details))
    }

    /// 429 TooManyRequests with one cause (`reason`, `message`) and a retry hint in seconds (none when 0),
    /// as `errors.NewTooManyRequests` plus a cause builds it (a refused eviction).
    pub fn too_many_requests_because(message: &str, retry_after_seconds: i32, reason: &str, cause: String) -> Self {
        let details = StatusDetails {
            causes: Some(vec![StatusCause {
                field: None,
                message: Some(cause),
                reason: Some(reason.to_string()),
            }]),
            retry_after_seconds: (retry_after_seconds > 0).then_some(retry_after_seconds),
            ..Default::default()
        };
        ApiError::new(429, "TooManyRequests", message, Some(details))
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        ApiError::new(504, "Timeout", message, None)
    }
}

/// `resource.group`, or `resource` for the core group.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// Errors of the library's own entry points.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The topology or fault configuration is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The kube-rs client could not be built.
    #[error("cannot build a client: {0}")]
    Client(String),
    /// The API server refused an operation.
    #[error("{0}")]
    Api(#[from] ApiError),
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
