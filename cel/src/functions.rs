//! The functions an expression may call: their call style and arity (checked at compile time), result
//! types (for the analysis), and cost: the static estimate (cel-go v0.29.2's estimator with Kubernetes'
//! `library.CostEstimator`) and what the runtime tracker charges before and after a call.
//!
//! The names are what kube-cel registers (Kubernetes' CEL libraries: strings, lists, sets, regex,
//! URLs, IP/CIDR, semver, quantity, named formats, math, base64) plus the standard ones. A name not
//! here is refused at compile time, as kube-apiserver's type checker refuses it.

use crate::types::Ty;

/// How a function is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `f(x)` (namespaced ones, `lists.range(n)`, too).
    Global,
    /// `x.f()`.
    Member,
    /// Both.
    Either,
}

/// How a call is priced. `first` is the receiver of a member call, else the first argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cost {
    /// 1.
    One,
    /// `ceil(size(first) * 0.1)`; result size = size(first).
    Traverse,
    /// `replace`.
    Replace,
    /// `split`.
    Split,
    /// `join`.
    Join,
    /// `find`, `findAll`, `matches`: `ceil((size(s) + 1) * 0.1) * ceil(size(regex) * 0.25)`.
    Regex,
    /// `contains` on strings: `ceil(size(s) * 0.1) * ceil(size(sub) * 0.1)`.
    Contains,
    /// `startsWith`, `endsWith`: `ceil(size(arg) * 0.1)`.
    Prefix,
    /// List traversals (`indexOf`, `sum`, `min`, `max`, `isSorted`), string traversal on strings.
    ListTraverse,
    /// `lists.range(n)`: `n + 11`.
    Range,
    /// `slice`: `|result| + 11`.
    Slice,
    /// `flatten(depth)`: `depth * n + 11`.
    Flatten,
    /// `reverse`: `n + 11` (lists), `ceil(n * 0.1)` (strings).
    Reverse,
    /// `sort`, `distinct`: `2 * n^2 + 11`.
    Quadratic,
    /// `sets.contains` / `sets.intersects` (factor 1), `sets.equivalent` (2): `|a| * |b| * f + 1`.
    Sets(u8),
    /// `<format>.validate(s)`: `ceil(size(s) * 0.1) * 32`.
    Validate,
    /// `ip.isCanonical`: `ceil(size * 0.2)`.
    IsCanonical,
    /// `containsIP`, `containsCIDR`: a few units (IP sizes are 4 or 16 bytes).
    Cidr,
    /// `strings.quote`: `ceil(size * 0.1)`, result `2 * size + 2`.
    Quote,
    /// `"...".format(args)`: `ceil(size(format) * 0.1)`.
    Format,
    /// `size`: 1 (the runtime also charges the traversal of a string, see [`crate::eval`]).
    Size,
}

/// What a call returns, for the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Res {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    StringList,
    IntList,
    /// The receiver's (or first argument's) type.
    Same,
    /// An element of the receiver list.
    Element,
    /// An optional element of the receiver list.
    OptionalElement,
    Opaque(&'static str),
    /// `optional.of(x)`.
    OptionalOf,
    /// The value inside the receiver optional.
    Unwrap,
    Dyn,
}

/// One function.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub name: &'static str,
    pub style: Style,
    /// Arguments, not counting the receiver.
    pub min_args: usize,
    pub max_args: usize,
    pub cost: Cost,
    pub res: Res,
}

const fn f(name: &'static str, style: Style, min_args: usize, max_args: usize, cost: Cost, res: Res) -> Spec {
    Spec {
        name,
        style,
        min_args,
        max_args,
        cost,
        res,
    }
}

use Cost as C;
use Res as R;
use Style::{Either, Global, Member};

const QUANTITY: &str = "kubernetes.Quantity";
const SEMVER: &str = "kubernetes.Semver";
const URL: &str = "kubernetes.URL";
const IP: &str = "net.IP";
const CIDR: &str = "net.CIDR";
const FORMAT: &str = "kubernetes.NamedFormat";

/// Every function, sorted by nothing in particular; looked up by name.
pub(crate) const FUNCTIONS: &[Spec] = &[
    // Standard definitions.
    f("size", Either, 0, 1, C::Size, R::Int),
    f("contains", Member, 1, 1, C::Contains, R::Bool),
    f("startsWith", Member, 1, 1, C::Prefix, R::Bool),
    f("endsWith", Member, 1, 1, C::Prefix, R::Bool),
    f("matches", Either, 1, 2, C::Regex, R::Bool),
    f("int", Global, 1, 1, C::One, R::Int),
    f("uint", Global, 1, 1, C::One, R::Uint),
    f("double", Global, 1, 1, C::One, R::Double),
    f("string", Global, 1, 1, C::Traverse, R::String),
    f("bytes", Global, 1, 1, C::Traverse, R::Bytes),
    f("bool", Global, 1, 1, C::One, R::Bool),
    f("duration", Global, 1, 1, C::One, R::Duration),
    f("timestamp", Global, 1, 1, C::One, R::Timestamp),
    f("dyn", Global, 1, 1, C::One, R::Same),
    f("type", Global, 1, 1, C::One, R::Dyn),
    f("getFullYear", Member, 0, 1, C::One, R::Int),
    f("getMonth", Member, 0, 1, C::One, R::Int),
    f("getDayOfYear", Member, 0, 1, C::One, R::Int),
    f("getDayOfMonth", Member, 0, 1, C::One, R::Int),
    f("getDate", Member, 0, 1, C::One, R::Int),
    f("getDayOfWeek", Member, 0, 1, C::One, R::Int),
    f("getHours", Member, 0, 1, C::One, R::Int),
    f("getMinutes", Member, 0, 1, C::One, R::Int),
    f("getSeconds", Member, 0, 1, C::One, R::Int),
    f("getMilliseconds", Member, 0, 1, C::One, R::Int),
    // Optional types.
    f("optional.of", Global, 1, 1, C::One, R::OptionalOf),
    f("optional.none", Global, 0, 0, C::One, R::Dyn),
    f("optional.ofNonZeroValue", Global, 1, 1, C::One, R::OptionalOf),
    f("value", Member, 0, 0, C::One, R::Unwrap),
    f("hasValue", Member, 0, 0, C::One, R::Bool),
    f("or", Member, 1, 1, C::One, R::Same),
    f("orValue", Member, 1, 1, C::One, R::Unwrap),
    // Strings (cel-go ext strings v2 and Kubernetes' library).
    f("charAt", Member, 1, 1, C::One, R::String),
    f("indexOf", Member, 1, 2, C::ListTraverse, R::Int),
    f("lastIndexOf", Member, 1, 2, C::ListTraverse, R::Int),
    f("lowerAscii", Member, 0, 0, C::Traverse, R::String),
    f("upperAscii", Member, 0, 0, C::Traverse, R::String),
    f("replace", Member, 2, 3, C::Replace, R::String),
    f("split", Member, 1, 2, C::Split, R::StringList),
    f("substring", Member, 1, 2, C::Traverse, R::String),
    f("trim", Member, 0, 0, C::Traverse, R::String),
    f("join", Member, 0, 1, C::Join, R::String),
    f("format", Member, 1, 1, C::Format, R::String),
    f("strings.quote", Global, 1, 1, C::Quote, R::String),
    f("reverse", Member, 0, 0, C::Reverse, R::Same),
    // Regex.
    f("find", Member, 1, 1, C::Regex, R::String),
    f("findAll", Member, 1, 2, C::Regex, R::StringList),
    // Lists (cel-go ext lists v3 and Kubernetes' library).
    f("isSorted", Member, 0, 0, C::ListTraverse, R::Bool),
    f("sum", Member, 0, 0, C::ListTraverse, R::Element),
    f("min", Either, 0, 64, C::ListTraverse, R::Element),
    f("max", Either, 0, 64, C::ListTraverse, R::Element),
    f("slice", Member, 2, 2, C::Slice, R::Same),
    f("flatten", Member, 0, 1, C::Flatten, R::Dyn),
    f("sort", Member, 0, 0, C::Quadratic, R::Same),
    f("distinct", Member, 0, 0, C::Quadratic, R::Same),
    f("first", Member, 0, 0, C::One, R::OptionalElement),
    f("last", Member, 0, 0, C::One, R::OptionalElement),
    f("lists.range", Global, 1, 1, C::Range, R::IntList),
    // Sets.
    f("sets.contains", Global, 2, 2, C::Sets(1), R::Bool),
    f("sets.intersects", Global, 2, 2, C::Sets(1), R::Bool),
    f("sets.equivalent", Global, 2, 2, C::Sets(2), R::Bool),
    // URLs.
    f("url", Global, 1, 1, C::Traverse, R::Opaque(URL)),
    f("isURL", Global, 1, 1, C::Traverse, R::Bool),
    f("getScheme", Member, 0, 0, C::One, R::String),
    f("getHostname", Member, 0, 0, C::One, R::String),
    f("getHost", Member, 0, 0, C::One, R::String),
    f("getPort", Member, 0, 0, C::One, R::String),
    f("getEscapedPath", Member, 0, 0, C::One, R::String),
    f("getQuery", Member, 0, 0, C::One, R::Dyn),
    // IP and CIDR.
    f("ip", Either, 0, 1, C::Traverse, R::Opaque(IP)),
    f("isIP", Global, 1, 1, C::Traverse, R::Bool),
    f("isIPv4", Global, 1, 1, C::Traverse, R::Bool),
    f("isIPv6", Global, 1, 1, C::Traverse, R::Bool),
    f("ip.isCanonical", Global, 1, 1, C::IsCanonical, R::Bool),
    f("cidr", Global, 1, 1, C::Traverse, R::Opaque(CIDR)),
    f("isCIDR", Global, 1, 1, C::Traverse, R::Bool),
    f("isCIDRv4", Global, 1, 1, C::Traverse, R::Bool),
    f("isCIDRv6", Global, 1, 1, C::Traverse, R::Bool),
    f("family", Member, 0, 0, C::One, R::Int),
    f("isUnspecified", Member, 0, 0, C::One, R::Bool),
    f("isLoopback", Member, 0, 0, C::One, R::Bool),
    f("isLinkLocalMulticast", Member, 0, 0, C::One, R::Bool),
    f("isLinkLocalUnicast", Member, 0, 0, C::One, R::Bool),
    f("isGlobalUnicast", Member, 0, 0, C::One, R::Bool),
    f("containsIP", Member, 1, 1, C::Cidr, R::Bool),
    f("containsCIDR", Member, 1, 1, C::Cidr, R::Bool),
    f("masked", Member, 0, 0, C::One, R::Opaque(CIDR)),
    f("prefixLength", Member, 0, 0, C::One, R::Int),
    // Semver and quantity.
    f("semver", Global, 1, 2, C::Traverse, R::Opaque(SEMVER)),
    f("isSemver", Global, 1, 2, C::Traverse, R::Bool),
    f("major", Member, 0, 0, C::One, R::Int),
    f("minor", Member, 0, 0, C::One, R::Int),
    f("patch", Member, 0, 0, C::One, R::Int),
    f("quantity", Global, 1, 1, C::Traverse, R::Opaque(QUANTITY)),
    f("isQuantity", Global, 1, 1, C::Traverse, R::Bool),
    f("isInteger", Member, 0, 0, C::One, R::Bool),
    f("asInteger", Member, 0, 0, C::One, R::Int),
    f("asApproximateFloat", Member, 0, 0, C::One, R::Double),
    f("sign", Member, 0, 0, C::One, R::Int),
    f("add", Member, 1, 1, C::One, R::Same),
    f("sub", Member, 1, 1, C::One, R::Same),
    f("isGreaterThan", Member, 1, 1, C::One, R::Bool),
    f("isLessThan", Member, 1, 1, C::One, R::Bool),
    f("compareTo", Member, 1, 1, C::One, R::Int),
    // Named formats.
    f("format.named", Global, 1, 1, C::One, R::Dyn),
    f("format.dns1123Label", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.dns1123Subdomain", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.dns1035Label", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.qualifiedName", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.dns1123LabelPrefix", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.dns1123SubdomainPrefix", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.dns1035LabelPrefix", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.labelValue", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.uri", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.uuid", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.byte", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.date", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("format.datetime", Global, 0, 0, C::One, R::Opaque(FORMAT)),
    f("validate", Member, 1, 1, C::Validate, R::Dyn),
    // Math.
    f("math.greatest", Global, 1, 64, C::ListTraverse, R::Dyn),
    f("math.least", Global, 1, 64, C::ListTraverse, R::Dyn),
    f("math.abs", Global, 1, 1, C::One, R::Same),
    f("math.sign", Global, 1, 1, C::One, R::Same),
    f("math.ceil", Global, 1, 1, C::One, R::Double),
    f("math.floor", Global, 1, 1, C::One, R::Double),
    f("math.round", Global, 1, 1, C::One, R::Double),
    f("math.trunc", Global, 1, 1, C::One, R::Double),
    f("math.sqrt", Global, 1, 1, C::One, R::Double),
    f("math.isFinite", Global, 1, 1, C::One, R::Bool),
    f("math.isInf", Global, 1, 1, C::One, R::Bool),
    f("math.isNaN", Global, 1, 1, C::One, R::Bool),
    f("math.bitAnd", Global, 2, 2, C::One, R::Same),
    f("math.bitOr", Global, 2, 2, C::One, R::Same),
    f("math.bitXor", Global, 2, 2, C::One, R::Same),
    f("math.bitNot", Global, 1, 1, C::One, R::Same),
    f("math.bitShiftLeft", Global, 2, 2, C::One, R::Same),
    f("math.bitShiftRight", Global, 2, 2, C::One, R::Same),
    // Encoders.
    f("base64.encode", Global, 1, 1, C::Traverse, R::String),
    f("base64.decode", Global, 1, 1, C::Traverse, R::Bytes),
    f("jsonpatch.escapeKey", Global, 1, 1, C::Traverse, R::String),
];

/// The namespaces of qualified global functions (`lists.range`, `math.greatest`).
pub(crate) const NAMESPACES: &[&str] = &[
    "base64",
    "format",
    "ip",
    "jsonpatch",
    "lists",
    "math",
    "optional",
    "sets",
    "strings",
];

/// Why a call does not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// No function has this name.
    Undeclared,
    /// The name exists but not with this call style or argument count.
    NoOverload,
}

/// The function `name` called as a member (`member`) with `args` arguments.
pub(crate) fn lookup(name: &str, member: bool, args: usize) -> Result<&'static Spec, Lookup> {
    let mut found = false;
    for s in FUNCTIONS.iter().filter(|s| s.name == name) {
        found = true;
        let style_ok = match s.style {
            Style::Global => !member,
            Style::Member => member,
            Style::Either => true,
        };
        // A global call of an `Either` function takes its receiver as the first argument.
        let (min, max) = if !member && s.style == Style::Either {
            (s.min_args.saturating_add(1), s.max_args.saturating_add(1))
        } else {
            (s.min_args, s.max_args)
        };
        if style_ok && (min..=max).contains(&args) {
            return Ok(s);
        }
    }
    Err(if found { Lookup::NoOverload } else { Lookup::Undeclared })
}

/// The result type of a call of `spec` on a receiver (or first argument) of type `first`.
pub(crate) fn result_ty(spec: &Spec, first: Option<&Ty>, args: &[Ty]) -> Ty {
    let first = first.cloned().unwrap_or(Ty::Dyn);
    match spec.res {
        Res::Bool => Ty::Bool,
        Res::Int => Ty::Int,
        Res::Uint => Ty::Uint,
        Res::Double => Ty::Double,
        Res::String => Ty::String,
        Res::Bytes => Ty::Bytes,
        Res::Duration => Ty::Duration,
        Res::Timestamp => Ty::Timestamp,
        Res::StringList => Ty::List(Box::new(Ty::String)),
        Res::IntList => Ty::List(Box::new(Ty::Int)),
        Res::Same => first,
        Res::Element => match first {
            Ty::List(e) => *e,
            _ => Ty::Dyn,
        },
        Res::OptionalElement => match first {
            Ty::List(e) => Ty::Optional(e),
            _ => Ty::Dyn,
        },
        Res::Opaque(n) => Ty::Opaque(n),
        Res::OptionalOf => Ty::Optional(Box::new(args.first().cloned().unwrap_or(Ty::Dyn))),
        Res::Unwrap => match first {
            Ty::Optional(t) => *t,
            _ => Ty::Dyn,
        },
        Res::Dyn => Ty::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_resolve_by_name_style_and_arity() {
        assert_eq!(lookup("size", false, 1).map(|s| s.name), Ok("size"));
        assert_eq!(lookup("size", true, 0).map(|s| s.name), Ok("size"));
        assert_eq!(lookup("size", false, 3).err(), Some(Lookup::NoOverload));
        assert_eq!(lookup("contains", false, 1).err(), Some(Lookup::NoOverload));
        assert_eq!(lookup("nope", false, 1).err(), Some(Lookup::Undeclared));
        assert_eq!(lookup("lists.range", false, 1).map(|s| s.cost), Ok(Cost::Range));
    }
}
