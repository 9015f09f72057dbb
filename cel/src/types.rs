//! Static types and declared variables: what the analysis knows about an expression's values, and the
//! sizes the cost estimator assumes for them (cel-go's `SizeEstimator`: a declared node's
//! `MaxElements`).

use std::collections::BTreeMap;

/// What is known statically about an expression's type (cel-go's type names, as its errors print them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `null_type`.
    Null,
    /// `google.protobuf.Duration`.
    Duration,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `list(T)`.
    List(Box<Ty>),
    /// `map(K, V)`.
    Map(Box<Ty>, Box<Ty>),
    /// A declared object type (`kubernetes.DRADevice`, a CRD's object).
    Object(String),
    /// A library's opaque type (`kubernetes.Quantity`, `kubernetes.Semver`, `net.IP`, ...).
    Opaque(&'static str),
    /// `optional_type(T)`.
    Optional(Box<Ty>),
    /// `type`.
    Type,
    /// Not known until evaluation.
    Dyn,
}

impl Ty {
    /// cel-go's name of the type.
    pub fn name(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Null => "null_type".into(),
            Ty::Duration => "google.protobuf.Duration".into(),
            Ty::Timestamp => "google.protobuf.Timestamp".into(),
            Ty::List(e) => format!("list({})", e.name()),
            Ty::Map(k, v) => format!("map({}, {})", k.name(), v.name()),
            Ty::Object(n) => n.clone(),
            Ty::Opaque(n) => (*n).to_string(),
            Ty::Optional(t) => format!("optional_type({})", t.name()),
            Ty::Type => "type".into(),
            Ty::Dyn => "dyn".into(),
        }
    }

    /// Whether values of this type have a size cel-go's cost model reads (strings, bytes, lists, maps).
    pub fn sized(&self) -> bool {
        matches!(self, Ty::String | Ty::Bytes | Ty::List(_) | Ty::Map(..))
    }

    /// A scalar type (cel-go's `computeSize` gives these size 1 when nothing else is known).
    pub fn scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Duration | Ty::Timestamp | Ty::Null
        )
    }

    /// The element type of a list, the key type of a map.
    pub fn element(&self) -> Ty {
        match self {
            Ty::List(e) => (**e).clone(),
            Ty::Map(k, _) => (**k).clone(),
            _ => Ty::Dyn,
        }
    }
}

/// A declared value: its type and the most elements it can hold (characters of a string, items of a
/// list, entries of a map), which is what the cost estimator reads as its size.
#[derive(Debug, Clone, PartialEq)]
pub struct Decl {
    /// What it is.
    pub kind: DeclKind,
    /// The size estimate's maximum (`MaxElements` in apiserver's declared types).
    pub max_elements: u64,
    /// The smallest JSON serialization of a value (`MinSerializedSize`), for CRD cardinality estimates.
    pub min_serialized_size: u64,
}

/// The shape of a declared value.
#[derive(Debug, Clone, PartialEq)]
pub enum DeclKind {
    /// A value of a type with no declared parts.
    Scalar(Ty),
    /// A list of `T`.
    List(Box<Decl>),
    /// A map from keys to values.
    Map(Box<Decl>, Box<Decl>),
    /// An object with named fields.
    Object {
        /// The type's name (`kubernetes.DRADevice`, or a CRD node's generated name).
        name: String,
        /// Its fields.
        fields: BTreeMap<String, Decl>,
    },
}

impl Decl {
    /// A scalar of type `ty` with `max_elements`.
    pub fn scalar(ty: Ty, max_elements: u64) -> Decl {
        Decl {
            kind: DeclKind::Scalar(ty),
            max_elements,
            min_serialized_size: 1,
        }
    }

    /// A list of `elem` with at most `max_items` items.
    pub fn list(elem: Decl, max_items: u64) -> Decl {
        Decl {
            kind: DeclKind::List(Box::new(elem)),
            max_elements: max_items,
            min_serialized_size: 2,
        }
    }

    /// A map from `key` to `value` with at most `max_entries` entries.
    pub fn map(key: Decl, value: Decl, max_entries: u64) -> Decl {
        Decl {
            kind: DeclKind::Map(Box::new(key), Box::new(value)),
            max_elements: max_entries,
            min_serialized_size: 2,
        }
    }

    /// An object named `name` with `fields`.
    pub fn object(name: impl Into<String>, fields: BTreeMap<String, Decl>) -> Decl {
        Decl {
            kind: DeclKind::Object {
                name: name.into(),
                fields,
            },
            max_elements: 0,
            min_serialized_size: 2,
        }
    }

    /// Its static type.
    pub fn ty(&self) -> Ty {
        match &self.kind {
            DeclKind::Scalar(t) => t.clone(),
            DeclKind::List(e) => Ty::List(Box::new(e.ty())),
            DeclKind::Map(k, v) => Ty::Map(Box::new(k.ty()), Box::new(v.ty())),
            DeclKind::Object { name, .. } => Ty::Object(name.clone()),
        }
    }

    /// The declared element of a list (its items) or map (its keys when `keys`, else its values).
    pub fn element(&self, keys: bool) -> Option<&Decl> {
        match &self.kind {
            DeclKind::List(e) => Some(e),
            DeclKind::Map(k, v) => Some(if keys { k } else { v }),
            _ => None,
        }
    }

    /// The declared field `name` of an object, or the values of a map selected by key.
    pub fn field(&self, name: &str) -> Option<&Decl> {
        match &self.kind {
            DeclKind::Object { fields, .. } => fields.get(name),
            DeclKind::Map(_, v) => Some(v),
            _ => None,
        }
    }
}
