//! The schema-driven transcoder: a protobuf message to the JSON value kube-apiserver would print for it,
//! and back. Field numbers, types and JSON names come from the [schema](super::schema); zero values are
//! dropped on decoding where the Go field is a non-pointer `omitempty` field (Go's JSON encoder drops
//! them too), kept where it is a pointer (presence is meaningful there).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Number, Value};

use super::ProtoError;
use super::schema::{Field, Label, Message, Route, Scalar, Schema, Special, Type};
use super::wellknown as wk;
use super::wire::{Reader, WireType, Writer, unzigzag, zigzag};
use crate::resource::decode::{MAX_LIST_ENTRIES, MAX_REPORTED_UNKNOWN};

/// How deep messages may nest (CRD schemas are recursive).
const MAX_DEPTH: usize = 64;

fn wire_of(s: Scalar) -> WireType {
    match s {
        Scalar::String | Scalar::Bytes => WireType::Len,
        Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => WireType::Fixed32,
        Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => WireType::Fixed64,
        _ => WireType::Varint,
    }
}

fn float(f: f64) -> Result<Value, ProtoError> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| ProtoError::new("NaN or infinite number"))
}

/// Reads one scalar of wire type `wire` as JSON.
fn read_scalar(s: Scalar, wire: WireType, r: &mut Reader<'_>) -> Result<Value, ProtoError> {
    if wire != wire_of(s) {
        return Err(ProtoError::new(format!("wire type {wire:?} does not match {s:?}")));
    }
    Ok(match s {
        Scalar::String => {
            let b = r.bytes()?;
            Value::String(
                std::str::from_utf8(b)
                    .map_err(|_| ProtoError::new("string is not valid UTF-8"))?
                    .to_string(),
            )
        }
        Scalar::Bytes => Value::String(BASE64.encode(r.bytes()?)),
        Scalar::Bool => Value::Bool(r.varint()? != 0),
        Scalar::Int32 => Value::from(r.varint()? as i64 as i32),
        Scalar::Int64 => Value::from(r.varint()? as i64),
        Scalar::Uint32 => Value::from(r.varint()? as u32),
        Scalar::Uint64 => Value::from(r.varint()?),
        Scalar::Sint32 => Value::from(unzigzag(r.varint()?) as i32),
        Scalar::Sint64 => Value::from(unzigzag(r.varint()?)),
        Scalar::Fixed32 => Value::from(r.fixed32()?),
        Scalar::Sfixed32 => Value::from(r.fixed32()? as i32),
        Scalar::Float => float(f64::from(f32::from_bits(r.fixed32()?)))?,
        Scalar::Fixed64 => Value::from(r.fixed64()?),
        Scalar::Sfixed64 => Value::from(r.fixed64()? as i64),
        Scalar::Double => float(f64::from_bits(r.fixed64()?))?,
    })
}

/// Writes one scalar from JSON (the tag is written by the caller).
fn write_scalar(s: Scalar, v: &Value, w: &mut Writer) -> Result<(), ProtoError> {
    let mismatch = || ProtoError::new(format!("expected {s:?}, got {v}"));
    let int = |lo: i64, hi: i64| -> Result<i64, ProtoError> {
        v.as_i64().filter(|i| (lo..=hi).contains(i)).ok_or_else(mismatch)
    };
    let uint = |hi: u64| -> Result<u64, ProtoError> { v.as_u64().filter(|u| *u <= hi).ok_or_else(mismatch) };
    match s {
        Scalar::String => {
            let b = v.as_str().ok_or_else(mismatch)?.as_bytes();
            w.varint(b.len() as u64);
            w.buf.extend_from_slice(b);
        }
        Scalar::Bytes => {
            let b = BASE64
                .decode(v.as_str().ok_or_else(mismatch)?)
                .map_err(|e| ProtoError::new(format!("invalid base64: {e}")))?;
            w.varint(b.len() as u64);
            w.buf.extend_from_slice(&b);
        }
        Scalar::Bool => w.varint(u64::from(v.as_bool().ok_or_else(mismatch)?)),
        Scalar::Int32 => w.varint(int(i64::from(i32::MIN), i64::from(i32::MAX))? as u64),
        Scalar::Int64 => w.varint(int(i64::MIN, i64::MAX)? as u64),
        Scalar::Uint32 => w.varint(uint(u64::from(u32::MAX))?),
        Scalar::Uint64 => w.varint(uint(u64::MAX)?),
        Scalar::Sint32 => w.varint(zigzag(int(i64::from(i32::MIN), i64::from(i32::MAX))?)),
        Scalar::Sint64 => w.varint(zigzag(int(i64::MIN, i64::MAX)?)),
        Scalar::Fixed32 => w.fixed32(uint(u64::from(u32::MAX))? as u32),
        Scalar::Sfixed32 => w.fixed32(int(i64::from(i32::MIN), i64::from(i32::MAX))? as i32 as u32),
        Scalar::Fixed64 => w.fixed64(uint(u64::MAX)?),
        Scalar::Sfixed64 => w.fixed64(int(i64::MIN, i64::MAX)? as u64),
        Scalar::Float => w.fixed32((v.as_f64().ok_or_else(mismatch)? as f32).to_bits()),
        Scalar::Double => w.fixed64(v.as_f64().ok_or_else(mismatch)?.to_bits()),
    }
    Ok(())
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        _ => false,
    }
}

/// What decoding one body counted, shared by the envelopes nested in it (`RawExtension`s).
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// `<path>: unknown field number N` for the first [`MAX_REPORTED_UNKNOWN`] skipped fields.
    pub(super) unknown: Vec<String>,
    /// How many more fields were skipped.
    pub(super) unknown_more: usize,
    /// Repeated entries decoded so far (list items, packed scalars, schema lists).
    pub(super) entries: usize,
}

impl Tally {
    fn unknown(&mut self, describe: impl FnOnce() -> String) {
        if self.unknown.len() < MAX_REPORTED_UNKNOWN {
            self.unknown.push(describe());
        } else {
            self.unknown_more = self.unknown_more.saturating_add(1);
        }
    }

    /// Counts one repeated entry: past [`MAX_LIST_ENTRIES`] decoding stops, before the entry is built
    /// (an empty message is 2 bytes on the wire and a whole struct once decoded).
    fn entry(&mut self, path: &str) -> Result<(), ProtoError> {
        self.entries = self.entries.saturating_add(1);
        if self.entries > MAX_LIST_ENTRIES {
            return Err(ProtoError::too_large(
                path,
                format!("the allowed maximum list entries in an object is {MAX_LIST_ENTRIES}, got more"),
            ));
        }
        Ok(())
    }
}

/// Protobuf to JSON. Unknown field numbers are skipped and recorded (the caller reports them per the
/// request's field validation); repeated entries are counted and limited.
#[derive(Debug)]
pub(super) struct Decoder<'s, 't> {
    pub(super) schema: &'s Schema,
    /// What the body's decoding counted so far.
    pub(super) tally: &'t mut Tally,
}

impl<'s> Decoder<'s, '_> {
    fn message_def(&self, name: &str) -> Result<&'s Message, ProtoError> {
        let schema: &'s Schema = self.schema;
        schema
            .message(name)
            .ok_or_else(|| ProtoError::new(format!("no protobuf schema for {name}")))
    }

    /// Decodes `bytes` as message `name`; `None` where JSON has no value (the zero `Time`, an empty raw
    /// extension).
    pub(super) fn message(
        &mut self,
        name: &str,
        bytes: &[u8],
        path: &str,
        depth: usize,
    ) -> Result<Option<Value>, ProtoError> {
        if depth > MAX_DEPTH {
            return Err(ProtoError::at(path, "messages nest too deeply"));
        }
        let msg = self.message_def(name)?;
        let at = |e: ProtoError| e.under(path);
        if let Some(special) = msg.special {
            return self.special(special, msg, bytes, path, depth).map_err(at);
        }
        let mut obj = Map::new();
        let mut r = Reader::new(bytes);
        while !r.is_empty() {
            let (number, wire) = r.tag().map_err(at)?;
            let Some(&i) = msg.by_number.get(&number) else {
                r.skip(wire).map_err(at)?;
                self.tally
                    .unknown(|| format!("{}unknown field number {number} of {name}", prefix(path)));
                continue;
            };
            let f = &msg.fields[i];
            let child = join(path, &f.json);
            match &f.label {
                Label::Optional => match self.value(f, &f.ty, wire, &mut r, &child, depth)? {
                    Some(Value::Object(inner)) if f.inline => obj.extend(inner),
                    Some(v) => {
                        obj.insert(f.json.clone(), v);
                    }
                    None => {
                        obj.remove(&f.json);
                    }
                },
                Label::Repeated => {
                    let entry = obj.entry(f.json.clone()).or_insert_with(|| Value::Array(Vec::new()));
                    let Value::Array(items) = entry else {
                        return Err(ProtoError::at(&child, "repeated field decoded twice"));
                    };
                    match (&f.ty, wire) {
                        (Type::Scalar(s), WireType::Len) if !matches!(s, Scalar::String | Scalar::Bytes) => {
                            let packed = r.bytes().map_err(at)?;
                            let mut p = Reader::new(packed);
                            while !p.is_empty() {
                                self.tally.entry(&child)?;
                                items.push(read_scalar(*s, wire_of(*s), &mut p).map_err(|e| e.under(&child))?);
                            }
                        }
                        _ => {
                            self.tally.entry(&child)?;
                            let idx = items.len();
                            let item_path = format!("{child}[{idx}]");
                            let v = self.value(f, &f.ty, wire, &mut r, &item_path, depth)?;
                            if let Some(Value::Array(items)) = obj.get_mut(&f.json) {
                                items.push(v.unwrap_or(Value::Null));
                            }
                        }
                    }
                }
                Label::Map(key_type) => {
                    if wire != WireType::Len {
                        return Err(ProtoError::at(&child, "a map entry must be length-delimited"));
                    }
                    let entry = r.bytes().map_err(at)?;
                    let (k, v) = self.map_entry(*key_type, f, entry, &child, depth)?;
                    let map = obj.entry(f.json.clone()).or_insert_with(|| Value::Object(Map::new()));
                    if let Value::Object(m) = map {
                        m.insert(k, v);
                    }
                }
            }
        }
        for f in &msg.fields {
            if f.label == Label::Optional
                && !f.ptr
                && f.omitempty
                && matches!(f.ty, Type::Scalar(_))
                && obj.get(&f.json).is_some_and(is_zero)
            {
                obj.remove(&f.json);
            }
        }
        Ok(Some(Value::Object(obj)))
    }

    fn value(
        &mut self,
        f: &Field,
        ty: &Type,
        wire: WireType,
        r: &mut Reader<'_>,
        path: &str,
        depth: usize,
    ) -> Result<Option<Value>, ProtoError> {
        match ty {
            Type::Scalar(s) => read_scalar(*s, wire, r).map(Some).map_err(|e| e.under(path)),
            Type::Message(m) => {
                if wire != WireType::Len {
                    return Err(ProtoError::at(
                        path,
                        format!("field {} must be length-delimited", f.number),
                    ));
                }
                let bytes = r.bytes().map_err(|e| e.under(path))?;
                self.message(m, bytes, path, depth + 1)
            }
        }
    }

    fn map_entry(
        &mut self,
        key_type: Scalar,
        f: &Field,
        entry: &[u8],
        path: &str,
        depth: usize,
    ) -> Result<(String, Value), ProtoError> {
        let mut key = None;
        let mut value = None;
        let mut r = Reader::new(entry);
        while !r.is_empty() {
            let (n, wire) = r.tag().map_err(|e| e.under(path))?;
            match n {
                1 => key = Some(read_scalar(key_type, wire, &mut r).map_err(|e| e.under(path))?),
                2 => value = self.value(f, &f.ty, wire, &mut r, path, depth)?,
                _ => r.skip(wire).map_err(|e| e.under(path))?,
            }
        }
        let key = match key {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let value = match value {
            Some(v) => v,
            None => match &f.ty {
                Type::Scalar(Scalar::String | Scalar::Bytes) => Value::String(String::new()),
                Type::Scalar(Scalar::Bool) => Value::Bool(false),
                Type::Scalar(_) => Value::from(0),
                Type::Message(m) => self.message(m, &[], path, depth + 1)?.unwrap_or(Value::Null),
            },
        };
        Ok((key, value))
    }

    fn special(
        &mut self,
        special: Special,
        msg: &Message,
        bytes: &[u8],
        path: &str,
        depth: usize,
    ) -> Result<Option<Value>, ProtoError> {
        let ext = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
        Ok(match special {
            Special::Time => wk::time_to_json(bytes, false)?,
            Special::MicroTime => wk::time_to_json(bytes, true)?,
            Special::Duration => Some(wk::duration_to_json(bytes)?),
            Special::Quantity => Some(wk::quantity_to_json(bytes)?),
            Special::IntOrString => Some(wk::int_or_string_to_json(bytes)?),
            Special::RawJson => wk::raw_json(wk::raw_field(bytes)?)?,
            Special::RawExtension => {
                let raw = wk::raw_field(bytes)?;
                if raw.starts_with(&super::MAGIC) {
                    Some(super::decode_envelope(raw, depth + 1, self.tally)?)
                } else {
                    wk::raw_json(raw)?
                }
            }
            Special::Wrapper => {
                let mut items = Vec::new();
                let f = msg.fields.first().ok_or_else(|| ProtoError::new("empty wrapper"))?;
                let mut r = Reader::new(bytes);
                while !r.is_empty() {
                    let (n, wire) = r.tag()?;
                    if n == f.number {
                        self.tally.entry(path)?;
                        items.push(self.value(f, &f.ty, wire, &mut r, path, depth)?.unwrap_or(Value::Null));
                    } else {
                        r.skip(wire)?;
                    }
                }
                Some(Value::Array(items))
            }
            Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
                let mut schema = None;
                let mut list = Vec::new();
                let mut allows = false;
                for (n, v) in wk::fields(bytes)? {
                    match (special, n) {
                        (Special::SchemaOrArray, 1)
                        | (Special::SchemaOrBool, 2)
                        | (Special::SchemaOrStringArray, 1) => {
                            schema = self.message(ext, v.bytes()?, path, depth + 1)?;
                        }
                        (Special::SchemaOrArray, 2) => {
                            self.tally.entry(path)?;
                            list.push(self.message(ext, v.bytes()?, path, depth + 1)?.unwrap_or(Value::Null));
                        }
                        (Special::SchemaOrStringArray, 2) => {
                            self.tally.entry(path)?;
                            list.push(Value::String(v.string()?));
                        }
                        (Special::SchemaOrBool, 1) => allows = v.varint()? != 0,
                        _ => {}
                    }
                }
                Some(match (special, schema) {
                    (Special::SchemaOrBool, Some(s)) => s,
                    (Special::SchemaOrBool, None) => Value::Bool(allows),
                    (_, _) if !list.is_empty() => Value::Array(list),
                    (_, Some(s)) => s,
                    (_, None) => Value::Null,
                })
            }
        })
    }
}

/// JSON to protobuf.
#[derive(Debug)]
pub(super) struct Encoder<'s> {
    pub(super) schema: &'s Schema,
}

impl Encoder<'_> {
    /// Encodes `v` as message `name` (without tag or length).
    pub(super) fn message(&self, name: &str, v: &Value, path: &str, depth: usize) -> Result<Vec<u8>, ProtoError> {
        if depth > MAX_DEPTH {
            return Err(ProtoError::at(path, "objects nest too deeply"));
        }
        let msg = self
            .schema
            .message(name)
            .ok_or_else(|| ProtoError::new(format!("no protobuf schema for {name}")))?;
        if let Some(special) = msg.special {
            return self.special(special, msg, v, path, depth).map_err(|e| e.under(path));
        }
        let Value::Object(obj) = v else {
            return Err(ProtoError::at(path, format!("expected an object for {name}")));
        };
        for k in obj.keys() {
            // TypeMeta is not a protobuf field: the envelope carries it.
            if !msg.by_json.contains_key(k) && k != "apiVersion" && k != "kind" {
                return Err(ProtoError::at(&join(path, k), format!("field not in {name}")));
            }
        }
        let mut w = Writer::default();
        for (i, f) in msg.fields.iter().enumerate() {
            if f.inline {
                let inner: Map<String, Value> = obj
                    .iter()
                    .filter(|(k, _)| msg.by_json.get(*k) == Some(&Route::Inline(i)))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if let (false, Type::Message(m)) = (inner.is_empty(), &f.ty) {
                    let b = self.message(m, &Value::Object(inner), path, depth + 1)?;
                    w.bytes(f.number, &b);
                }
                continue;
            }
            let Some(v) = obj.get(&f.json).filter(|v| !v.is_null()) else {
                continue;
            };
            let child = join(path, &f.json);
            match &f.label {
                Label::Optional => self.field(&mut w, f, v, &child, depth)?,
                Label::Repeated => {
                    let items = v
                        .as_array()
                        .ok_or_else(|| ProtoError::at(&child, "expected an array"))?;
                    for (idx, item) in items.iter().enumerate() {
                        self.field(&mut w, f, item, &format!("{child}[{idx}]"), depth)?;
                    }
                }
                Label::Map(key_type) => {
                    let m = v
                        .as_object()
                        .ok_or_else(|| ProtoError::at(&child, "expected an object"))?;
                    let mut keys: Vec<&String> = m.keys().collect();
                    keys.sort();
                    for k in keys {
                        let mut entry = Writer::default();
                        entry.tag(1, wire_of(*key_type));
                        let key = match key_type {
                            Scalar::String => Value::String(k.clone()),
                            _ => serde_json::from_str(k)
                                .map_err(|_| ProtoError::at(&child, format!("map key {k:?} is not a number")))?,
                        };
                        write_scalar(*key_type, &key, &mut entry).map_err(|e| e.under(&child))?;
                        let value = &m[k];
                        if !value.is_null() {
                            self.field(
                                &mut entry,
                                &Field { number: 2, ..f.clone() },
                                value,
                                &join(&child, k),
                                depth,
                            )?;
                        }
                        w.bytes(f.number, &entry.buf);
                    }
                }
            }
        }
        Ok(w.buf)
    }

    /// One field value with its tag.
    fn field(&self, w: &mut Writer, f: &Field, v: &Value, path: &str, depth: usize) -> Result<(), ProtoError> {
        match &f.ty {
            Type::Scalar(s) => {
                w.tag(f.number, wire_of(*s));
                write_scalar(*s, v, w).map_err(|e| e.under(path))
            }
            Type::Message(m) => {
                let b = self.message(m, v, path, depth + 1)?;
                w.bytes(f.number, &b);
                Ok(())
            }
        }
    }

    fn special(
        &self,
        special: Special,
        msg: &Message,
        v: &Value,
        path: &str,
        depth: usize,
    ) -> Result<Vec<u8>, ProtoError> {
        let ext = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
        let mut w = Writer::default();
        match special {
            Special::Time => return wk::time_from_json(v, false),
            Special::MicroTime => return wk::time_from_json(v, true),
            Special::Duration => return wk::duration_from_json(v),
            Special::Quantity => return wk::quantity_from_json(v),
            Special::IntOrString => return wk::int_or_string_from_json(v),
            Special::RawJson | Special::RawExtension => return Ok(wk::raw_json_message(v)),
            Special::Wrapper => {
                let f = msg.fields.first().ok_or_else(|| ProtoError::new("empty wrapper"))?;
                let items = v.as_array().ok_or_else(|| ProtoError::new("expected an array"))?;
                for item in items {
                    self.field(&mut w, f, item, path, depth)?;
                }
            }
            Special::SchemaOrArray => match v {
                Value::Array(items) => {
                    for item in items {
                        w.bytes(2, &self.message(ext, item, path, depth + 1)?);
                    }
                }
                _ => w.bytes(1, &self.message(ext, v, path, depth + 1)?),
            },
            Special::SchemaOrBool => match v {
                Value::Bool(b) => {
                    w.tag(1, WireType::Varint);
                    w.varint(u64::from(*b));
                }
                _ => {
                    w.tag(1, WireType::Varint);
                    w.varint(1);
                    w.bytes(2, &self.message(ext, v, path, depth + 1)?);
                }
            },
            Special::SchemaOrStringArray => match v {
                Value::Array(items) => {
                    for item in items {
                        let s = item.as_str().ok_or_else(|| ProtoError::new("expected strings"))?;
                        w.bytes(2, s.as_bytes());
                    }
                }
                _ => w.bytes(1, &self.message(ext, v, path, depth + 1)?),
            },
        }
        Ok(w.buf)
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else if key.is_empty() {
        path.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}
