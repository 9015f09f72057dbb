//! Response bodies in the negotiated encoding: JSON (the default) or the Kubernetes protobuf form for
//! clients that ask for it first (client-go's typed clients, kubectl's generators). An object that has no
//! complete protobuf form (a field the v1.37 schema snapshot lacks, see `protobuf::SCHEMA_GAPS`) is
//! answered in JSON when the client accepts JSON too, as client-go always does: never with the field
//! dropped.

use std::borrow::Cow;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::protobuf::{self, Wire};
use crate::resource::ResourceInfo;

/// A body with its content type and `Warning` headers.
pub(super) fn bytes_response(
    code: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
    warnings: &[String],
) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = code;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    for h in warning_headers(warnings) {
        r.headers_mut().append(header::WARNING, h);
    }
    r
}

/// The total length, in characters, of the warning text a response carries before every warning is cut
/// (kube-apiserver's `truncateAtTotalRunes`, `pkg/endpoints/filters/warning.go`).
const WARNING_TOTAL_CHARS: usize = 4 * 1024;
/// How long each warning may be once the total is exceeded (`truncateItemRunes`).
const WARNING_ITEM_CHARS: usize = 256;

/// The `Warning` headers for a request's warnings, as kube-apiserver's warning recorder writes them
/// (`pkg/endpoints/filters/warning.go`), replayed in the order the warnings were added:
/// - empty texts are skipped, and a text equal to an earlier one is dropped (the first is kept);
/// - a text with control characters is dropped (`net.NewWarningHeader` refuses it);
/// - while the texts fit in 4096 characters in total, each is sent whole; the first one that does not
///   fit switches to truncation: every warning so far is sent again cut to 256 characters, and later ones
///   are cut to 256 and added until 4096 characters are written, after which the rest are dropped.
///
/// Each header is `299 - "<text>"`, with only `"` and `\` escaped (Go's `makeQuotedString`).
pub(super) fn warning_headers(warnings: &[String]) -> Vec<HeaderValue> {
    let mut recorded: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut ordered: Vec<&str> = Vec::new();
    let mut headers = Vec::new();
    let mut written: usize = 0;
    let mut truncating = false;
    for text in warnings.iter().map(String::as_str) {
        if text.is_empty() {
            continue;
        }
        if truncating && written >= WARNING_TOTAL_CHARS {
            break;
        }
        if !recorded.insert(text) {
            continue;
        }
        ordered.push(text);
        let chars = text.chars().count();
        let (text, chars) = if truncating && chars > WARNING_ITEM_CHARS {
            (cut(text), WARNING_ITEM_CHARS)
        } else {
            (text, chars)
        };
        let Some(header) = warning_header(text) else {
            continue;
        };
        if truncating || written.saturating_add(chars) <= WARNING_TOTAL_CHARS {
            written = written.saturating_add(chars);
            headers.push(header);
            continue;
        }
        truncating = true;
        written = 0;
        headers.clear();
        tracing::debug!("exceeded max warning header size, truncating");
        for text in &ordered {
            let chars = text.chars().count().min(WARNING_ITEM_CHARS);
            if let Some(header) = warning_header(cut(text)) {
                written = written.saturating_add(chars);
                headers.push(header);
            }
        }
    }
    headers
}

/// `text` cut to its first [`WARNING_ITEM_CHARS`] characters.
fn cut(text: &str) -> &str {
    match text.char_indices().nth(WARNING_ITEM_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// `299 - "<text>"`, or `None` for a text with control characters (Go's `unicode.IsControl`: C0, DEL and
/// C1), which kube-apiserver drops.
fn warning_header(text: &str) -> Option<HeaderValue> {
    if text.chars().any(char::is_control) {
        return None;
    }
    let mut v = String::with_capacity(text.len() + 8);
    v.push_str("299 - \"");
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            v.push('\\');
        }
        v.push(c);
    }
    v.push('"');
    HeaderValue::from_bytes(v.as_bytes()).ok()
}

/// The JSON of an object as the resource serves it.
pub(super) fn json_of(res: &ResourceInfo, obj: &Value) -> String {
    if res.needs_conversion(obj) {
        serde_json::to_string(&res.present(obj)).unwrap_or_default()
    } else {
        serde_json::to_string(obj).unwrap_or_default()
    }
}

/// The object as the resource serves it (converted from its stored version when they differ).
pub(super) fn presented<'a>(res: &ResourceInfo, obj: &'a Value) -> Cow<'a, Value> {
    if res.needs_conversion(obj) {
        Cow::Owned(res.present(obj))
    } else {
        Cow::Borrowed(obj)
    }
}

fn encoding_failed(what: &str, e: &protobuf::ProtoError) -> ApiError {
    tracing::error!(%what, error = %e, "a response could not be encoded as protobuf");
    ApiError::internal(format!("{what} could not be encoded as protobuf: {e}"))
}

/// One object.
pub(super) fn object(
    code: StatusCode,
    wire: Wire,
    res: &ResourceInfo,
    obj: &Value,
    warnings: &[String],
) -> Result<Response, ApiError> {
    match wire {
        Wire::Json => Ok(bytes_response(
            code,
            "application/json",
            json_of(res, obj).into_bytes(),
            warnings,
        )),
        Wire::Protobuf { json_fallback } => match protobuf::encode(&presented(res, obj)) {
            Ok(body) => Ok(bytes_response(code, protobuf::MEDIA_TYPE, body, warnings)),
            Err(e) if json_fallback => {
                tracing::warn!(kind = %res.kind, error = %e, "answering JSON: the object has no complete protobuf form");
                object(code, Wire::Json, res, obj, warnings)
            }
            Err(e) => Err(encoding_failed(&res.kind, &e)),
        },
    }
}

/// A list of objects with its `ListMeta`.
pub(super) fn list<T: std::ops::Deref<Target = Value>>(
    wire: Wire,
    res: &ResourceInfo,
    items: &[T],
    metadata: &Value,
) -> Result<Response, ApiError> {
    let kind = format!("{}List", res.kind);
    match wire {
        Wire::Json => {
            let mut body = String::with_capacity(64 + items.len() * 512);
            body.push_str("{\"kind\":");
            body.push_str(&serde_json::to_string(&kind).unwrap_or_default());
            body.push_str(",\"apiVersion\":");
            body.push_str(&serde_json::to_string(&res.api_version()).unwrap_or_default());
            body.push_str(",\"metadata\":");
            body.push_str(&metadata.to_string());
            body.push_str(",\"items\":[");
            for (i, o) in items.iter().enumerate() {
                if i > 0 {
                    body.push(',');
                }
                body.push_str(&json_of(res, o));
            }
            body.push_str("]}");
            Ok(bytes_response(
                StatusCode::OK,
                "application/json",
                body.into_bytes(),
                &[],
            ))
        }
        Wire::Protobuf { json_fallback } => {
            let value = json!({
                "metadata": metadata,
                "items": items.iter().map(|o| presented(res, o).into_owned()).collect::<Vec<_>>(),
            });
            match protobuf::encode_as(&res.api_version(), &kind, &value) {
                Ok(body) => Ok(bytes_response(StatusCode::OK, protobuf::MEDIA_TYPE, body, &[])),
                Err(e) if json_fallback => {
                    tracing::warn!(%kind, error = %e, "answering JSON: the list has no complete protobuf form");
                    list(Wire::Json, res, items, metadata)
                }
                Err(e) => Err(encoding_failed(&kind, &e)),
            }
        }
    }
}

/// A `meta/v1` `Status` (errors, and the success of a subresource create).
pub(super) fn status(code: StatusCode, wire: Wire, status: &Value) -> Response {
    if let Wire::Protobuf { .. } = wire {
        match protobuf::encode_as("v1", "Status", status) {
            Ok(body) => return bytes_response(code, protobuf::MEDIA_TYPE, body, &[]),
            Err(e) => tracing::error!(error = %e, "a Status could not be encoded as protobuf; answering JSON"),
        }
    }
    bytes_response(code, "application/json", status.to_string().into_bytes(), &[])
}

/// An error as its `Status`.
pub(super) fn error(e: &ApiError, wire: Wire) -> Response {
    let code = StatusCode::from_u16(e.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::to_value(&*e.0).unwrap_or_default();
    let mut r = status(code, wire, &body);
    // `Retry-After` carries the Status' hint, as kube-apiserver sends it (none when the hint is 0).
    if let Some(after) =
        e.0.details
            .as_ref()
            .and_then(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
        && let Ok(h) = HeaderValue::from_str(&after.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, h);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(warnings: &[String]) -> Vec<String> {
        warning_headers(warnings)
            .iter()
            .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
            .collect()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn warnings_are_deduplicated_by_exact_text_and_keep_their_order() {
        let got = texts(&strings(&["b", "a", "b", "", "A", "a"]));
        assert_eq!(got, ["299 - \"b\"", "299 - \"a\"", "299 - \"A\""]);
    }

    #[test]
    fn quotes_and_backslashes_are_escaped_and_other_text_is_kept_as_is() {
        let got = texts(&strings(&[r#"unknown field "spec.foo""#, r"a\b", "déjà vu ✓"]));
        assert_eq!(
            got,
            [
                r#"299 - "unknown field \"spec.foo\"""#,
                r#"299 - "a\\b""#,
                "299 - \"déjà vu ✓\"",
            ]
        );
    }

    #[test]
    fn warnings_with_control_characters_are_dropped() {
        let got = texts(&strings(&["line\nbreak", "tab\there", "del\u{7f}", "c1\u{85}", "fine"]));
        assert_eq!(got, ["299 - \"fine\""]);
    }

    #[test]
    fn warnings_within_the_total_budget_are_sent_whole() {
        let long = "x".repeat(1000);
        let warnings: Vec<String> = (0..4).map(|i| format!("{i}{long}")).collect();
        let got = texts(&warnings);
        assert_eq!(got.len(), 4);
        assert!(
            got.iter().all(|h| h.len() == 1001 + 8),
            "{:?}",
            got.iter().map(String::len).collect::<Vec<_>>()
        );
    }

    #[test]
    fn past_the_total_budget_every_warning_is_cut_to_256_characters_until_the_budget_is_spent() {
        // Five warnings of 1000 characters: the fifth does not fit in 4096, so all five are replayed cut
        // to 256 (1280 written), then later ones are cut and added until 4096 characters are written.
        let warnings: Vec<String> = (0..40).map(|i| format!("{i:02}{}", "é".repeat(998))).collect();
        let got = texts(&warnings);
        let bodies: Vec<String> = got
            .iter()
            .map(|h| h.trim_start_matches("299 - \"").trim_end_matches('"').to_string())
            .collect();
        assert!(bodies.iter().all(|b| b.chars().count() == 256));
        assert!(
            bodies
                .iter()
                .enumerate()
                .all(|(i, b)| b.starts_with(&format!("{i:02}")))
        );
        // 16 x 256 = 4096: the 17th is not added.
        assert_eq!(bodies.len(), 16);
    }

    #[test]
    fn short_warnings_past_the_budget_are_kept_whole_and_the_last_may_overshoot() {
        let mut warnings = vec!["a".repeat(4000)];
        warnings.extend((0..100).map(|i| format!("short {i} {}", "y".repeat(90))));
        let got = texts(&warnings);
        // The second warning (100 characters) does not fit: the first is replayed cut to 256, then short
        // ones are added whole until 4096 characters are written.
        assert_eq!(got[0].len(), 256 + 8);
        let total: usize = got.iter().map(|h| h.len() - 8).sum();
        assert!((4096..4096 + 256).contains(&total), "{total}");
    }
}
