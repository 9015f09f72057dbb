//! The Kubernetes protobuf wire format (`application/vnd.kubernetes.protobuf`), as client-go's typed
//! clients and kubectl's generators speak it: a `k8s\0` magic number, then a `runtime.Unknown` envelope
//! whose `typeMeta` names the kind and whose `raw` holds the object's message; lists are the kind's
//! `<Kind>List` message; watch streams are `meta/v1` `WatchEvent`s, each prefixed by its length (4 bytes,
//! big-endian), whose `object.raw` is an enveloped object.
//!
//! The transcoder is driven by the schema of every built-in kind (field numbers from the v1.37
//! `generated.proto` files, JSON names and Go pointer-ness from their Go types; see [`schema`]), so a
//! kind's codec is its message name, derived from its group, version and kind. Objects are stored as
//! JSON; protobuf is converted at the edge, both ways, and nothing is dropped silently: an unknown field
//! number in a request is reported per the request's `fieldValidation` (a warning by default), and a
//! stored field the schema does not know fails the response instead of vanishing. Custom resources have
//! no protobuf form (as in kube-apiserver): requests get 415, responses fall back to JSON when the client
//! accepts it.

mod codec;
mod schema;
mod wellknown;
mod wire;

use serde_json::Value;

use self::codec::{Decoder, Encoder};
use self::wire::Writer;

/// Fields k8s-openapi's v1.37 types have but the `generated.proto` snapshot the schema was generated from
/// (kubernetes/api at 10b39a39, 2026-07-24) lacks: their field numbers are not known here, so an object
/// that sets one has no complete protobuf form and is answered in JSON (see the HTTP layer), and a
/// protobuf request cannot carry it. Besides a Node's `runningInUserNamespace` these are two alpha DRA
/// fields: derived attributes of a device request and counter compatibility groups. The round-trip test
/// fails when a served kind gains a field outside this list.
#[cfg(test)]
pub(crate) const SCHEMA_GAPS: &[&str] = &[
    "k8s.io.api.core.v1.NodeSystemInfo.runningInUserNamespace",
    "k8s.io.api.resource.v1.ExactDeviceRequest.derivedAttributes",
    "k8s.io.api.resource.v1.DeviceSubRequest.derivedAttributes",
    "k8s.io.api.resource.v1.DeviceCounterConsumption.compatibilityGroups",
];

/// The protobuf media type.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream.
pub(crate) const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The magic number before every enveloped object.
pub(crate) const MAGIC: [u8; 4] = *b"k8s\0";

/// A protobuf encoding or decoding error, with the field path where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProtoError {
    /// The field path (`spec.containers[0].ports`), empty at the top.
    pub path: String,
    /// What went wrong.
    pub message: String,
    /// The body holds more than the decoder takes (a `413`, not a malformed body).
    pub too_large: bool,
}

impl ProtoError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        ProtoError {
            path: String::new(),
            message: message.into(),
            too_large: false,
        }
    }

    fn at(path: &str, message: impl Into<String>) -> Self {
        ProtoError {
            path: path.to_string(),
            message: message.into(),
            too_large: false,
        }
    }

    fn too_large(path: &str, message: impl Into<String>) -> Self {
        ProtoError {
            too_large: true,
            ..ProtoError::at(path, message)
        }
    }

    /// Sets the path if the error has none yet.
    fn under(mut self, path: &str) -> Self {
        if self.path.is_empty() {
            self.path = path.to_string();
        }
        self
    }
}

impl std::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The message name of `kind` in `apiVersion`, if the schema has it. `meta/v1` kinds (`Status`,
/// `DeleteOptions`, ...) are found under any group's version, as the apiserver accepts them there.
pub(crate) fn message_name(api_version: &str, kind: &str) -> Option<String> {
    let schema = schema::schema().ok()?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let own = schema::package(group, version).map(|p| format!("{p}.{kind}"));
    if let Some(name) = own.filter(|n| schema.message(n).is_some()) {
        return Some(name);
    }
    let meta = format!("k8s.io.apimachinery.pkg.apis.meta.v1.{kind}");
    schema.message(&meta).map(|_| meta)
}

/// Whether objects of this kind have a protobuf form.
pub(crate) fn supports(api_version: &str, kind: &str) -> bool {
    message_name(api_version, kind).is_some()
}

/// A decoded request body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decoded {
    /// The object, with `apiVersion` and `kind` from the envelope.
    pub object: Value,
    /// Field numbers the schema does not know (`spec: unknown field number 99 of ...PodSpec`), the first
    /// [`MAX_REPORTED_UNKNOWN`](crate::resource::decode::MAX_REPORTED_UNKNOWN) of them.
    pub unknown: Vec<String>,
    /// How many more unknown field numbers there were.
    pub unknown_more: usize,
}

/// Decodes an enveloped object (`k8s\0` + `runtime.Unknown`). A body with more than
/// [`MAX_LIST_ENTRIES`](crate::resource::decode::MAX_LIST_ENTRIES) repeated entries (list items, however
/// nested) is refused as soon as the entry past the limit is reached, before it is decoded
/// ([`ProtoError::too_large`]).
pub(crate) fn decode(body: &[u8]) -> Result<Decoded, ProtoError> {
    let mut tally = codec::Tally::default();
    let object = decode_envelope(body, 0, &mut tally)?;
    Ok(Decoded {
        object,
        unknown: tally.unknown,
        unknown_more: tally.unknown_more,
    })
}

fn decode_envelope(body: &[u8], depth: usize, tally: &mut codec::Tally) -> Result<Value, ProtoError> {
    let schema = schema::schema().map_err(ProtoError::new)?;
    let Some(data) = body.strip_prefix(&MAGIC) else {
        return Err(ProtoError::new(format!(
            "provided data does not appear to be a protobuf message, expected prefix {MAGIC:?}"
        )));
    };
    if data.is_empty() {
        return Err(ProtoError::new("empty body"));
    }
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    let (mut encoding, mut content_type) = (String::new(), String::new());
    for (n, v) in wellknown::fields(data)? {
        match n {
            1 => {
                for (m, tv) in wellknown::fields(v.bytes()?)? {
                    match m {
                        1 => api_version = tv.string()?,
                        2 => kind = tv.string()?,
                        _ => {}
                    }
                }
            }
            2 => raw = v.bytes()?,
            3 => encoding = v.string()?,
            4 => content_type = v.string()?,
            _ => {}
        }
    }
    if !encoding.is_empty() {
        return Err(ProtoError::new(format!("unsupported content encoding {encoding:?}")));
    }
    if !content_type.is_empty() && !content_type.starts_with(MEDIA_TYPE) {
        return Err(ProtoError::new(format!(
            "unsupported embedded content type {content_type:?}"
        )));
    }
    if kind.is_empty() {
        return Err(ProtoError::new("Object 'Kind' is missing in the protobuf envelope"));
    }
    if api_version.is_empty() {
        return Err(ProtoError::new(
            "Object 'apiVersion' is missing in the protobuf envelope",
        ));
    }
    let name = message_name(&api_version, &kind).ok_or_else(|| {
        ProtoError::new(format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\""
        ))
    })?;
    let mut decoder = Decoder { schema, tally };
    let body = decoder.message(&name, raw, "", depth)?.unwrap_or(Value::Null);
    let mut object = serde_json::Map::new();
    object.insert("apiVersion".into(), Value::String(api_version));
    object.insert("kind".into(), Value::String(kind));
    if let Value::Object(fields) = body {
        object.extend(fields);
    }
    Ok(Value::Object(object))
}

/// Encodes `object` as kind `kind` of `apiVersion`, enveloped.
pub(crate) fn encode_as(api_version: &str, kind: &str, object: &Value) -> Result<Vec<u8>, ProtoError> {
    let schema = schema::schema().map_err(ProtoError::new)?;
    let name = message_name(api_version, kind)
        .ok_or_else(|| ProtoError::new(format!("{kind} in {api_version} has no protobuf form")))?;
    let raw = Encoder { schema }.message(&name, object, "", 0)?;
    let mut type_meta = Writer::default();
    type_meta.bytes(1, api_version.as_bytes());
    type_meta.bytes(2, kind.as_bytes());
    let mut w = Writer::default();
    w.buf.extend_from_slice(&MAGIC);
    w.bytes(1, &type_meta.buf);
    w.bytes(2, &raw);
    w.bytes(3, b"");
    w.bytes(4, b"");
    Ok(w.buf)
}

/// Encodes an object that carries its own `apiVersion` and `kind`, enveloped.
pub(crate) fn encode(object: &Value) -> Result<Vec<u8>, ProtoError> {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    encode_as(api_version, kind, object)
}

/// One frame of a protobuf watch stream: the length, then a `WatchEvent` whose object is `object`
/// (already enveloped).
pub(crate) fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut raw = Writer::default();
    raw.bytes(1, object);
    let mut event = Writer::default();
    event.bytes(1, event_type.as_bytes());
    event.bytes(2, &raw.buf);
    let len = u32::try_from(event.buf.len()).unwrap_or(u32::MAX);
    let mut frame = Vec::with_capacity(event.buf.len() + 4);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event.buf);
    frame
}

/// Splits a protobuf watch stream into `(type, object)` events; the rest of an incomplete frame stays in
/// `buf`.
#[cfg(test)]
pub(crate) fn read_watch_frames(buf: &mut Vec<u8>) -> Result<Vec<(String, Value)>, ProtoError> {
    use self::wire::{Reader, WireType};
    let mut events = Vec::new();
    while let Some((len, rest)) = buf.split_first_chunk::<4>() {
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            break;
        }
        let frame = &rest[..len];
        let (mut ty, mut object) = (String::new(), Value::Null);
        let mut r = Reader::new(frame);
        while !r.is_empty() {
            match r.tag()? {
                (1, WireType::Len) => {
                    ty = String::from_utf8(r.bytes()?.to_vec()).map_err(|_| ProtoError::new("bad event type"))?
                }
                (2, WireType::Len) => {
                    let raw = wellknown::raw_field(r.bytes()?)?;
                    object = decode(raw)?.object;
                }
                (_, wire) => r.skip(wire)?,
            }
        }
        events.push((ty, object));
        buf.drain(..4 + len);
    }
    Ok(events)
}

/// How a response is encoded, from the request's `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// JSON (the default).
    Json,
    /// Protobuf, because the client listed it before JSON; `json_fallback` when it accepts JSON too (for
    /// kinds without a protobuf form, such as custom resources).
    Protobuf {
        /// The client also accepts JSON.
        json_fallback: bool,
    },
}

impl Wire {
    /// Negotiates from the `Accept` values: protobuf when it comes before JSON (or `*/*`).
    pub(crate) fn negotiate<'a>(accept: impl Iterator<Item = &'a str>) -> Wire {
        let (mut protobuf, mut json) = (None, None);
        for (i, range) in accept.flat_map(|v| v.split(',')).enumerate() {
            let media = range.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
            match media.as_str() {
                MEDIA_TYPE => protobuf = protobuf.or(Some(i)),
                "application/json" | "application/*" | "*/*" | "application/yaml" => json = json.or(Some(i)),
                _ => {}
            }
        }
        match (protobuf, json) {
            (Some(p), Some(j)) if p < j => Wire::Protobuf { json_fallback: true },
            (Some(_), None) => Wire::Protobuf { json_fallback: false },
            _ => Wire::Json,
        }
    }

    /// The encoding for objects of this kind: JSON when the kind has no protobuf form and the client
    /// accepts JSON.
    pub(crate) fn for_kind(self, api_version: &str, kind: &str) -> Result<Wire, ProtoError> {
        match self {
            Wire::Protobuf { json_fallback } if !supports(api_version, kind) => {
                if json_fallback {
                    Ok(Wire::Json)
                } else {
                    Err(ProtoError::new(format!("{kind} in {api_version} has no protobuf form")))
                }
            }
            other => Ok(other),
        }
    }
}

#[cfg(test)]
mod tests;
