#!/usr/bin/env python3
"""Generate devcluster's Kubernetes protobuf schema tables.

Reads the upstream ``generated.proto`` files (and the Go API types next to
them) straight out of git directories of k8s.io/api, k8s.io/apimachinery and
k8s.io/apiextensions-apiserver (``git show REV:path``, no work tree needed) and
writes one plain-text table per proto package into ``--out``.  Only facts are
written (field numbers, names, types), never upstream text.

Usage:
  python3 devcluster/tools/protoschema.py --api DIR --apimachinery DIR \
      --apiextensions DIR --out devcluster/src/protobuf/schema [--rev HEAD]

Output format (one file per package, e.g. ``core_v1.txt``)::

  # comment lines start with '#'; blank lines are allowed
  package k8s.io.api.core.v1
  # wrapper: k8s.io.api.core.v1.X      (only before wrapper messages)
  message k8s.io.api.core.v1.Pod
    <number> <protoName> <jsonName> <kind> <type> [flag ...]

* fields are indented by two spaces and sorted by number; messages keep the
  order of the .proto file.
* kind is ``opt`` (singular), ``rep`` (repeated) or ``map``.
* type is a proto scalar or a fully qualified message name (no leading dot);
  for ``map`` it is ``<keyType>,<valueType>``.  Enums are written as int32.
* jsonName comes from the ``json:"..."`` tag of the Go struct field whose
  ``protobuf:"...,name=X"`` tag matches the proto field.  Embedded fields with
  an empty JSON name (``json:",inline"``) get jsonName ``-`` and flag
  ``inline``; a ``json:"-"`` tag gives ``-`` without ``inline``; a field with
  no json tag gets its Go field name (encoding/json's default).
* flags: ``ptr`` (Go type is ``*T``), ``omitempty``, ``inline``, ``nogo`` (no
  Go field found; jsonName is then the proto name).
* ``# wrapper: <FullName>`` marks messages generated for a named Go slice
  type (``type X []T``) that have the single field ``repeated ... items = 1``.

A summary of anomalies (nogo, inline, wrappers, tag mismatches, oneofs,
enums, unresolved types) is printed to stdout.
"""
import argparse
import os
import re
import subprocess
import sys

REPOS = {  # key -> Go module / proto import prefix
    "api": "k8s.io/api",
    "apimachinery": "k8s.io/apimachinery",
    "apiextensions": "k8s.io/apiextensions-apiserver",
}
PACKAGES = [  # (output file stem, repo key, package directory)
    ("meta_v1", "apimachinery", "pkg/apis/meta/v1"),
    ("runtime", "apimachinery", "pkg/runtime"),
    ("intstr", "apimachinery", "pkg/util/intstr"),
    ("resource_quantity", "apimachinery", "pkg/api/resource"),
    ("core_v1", "api", "core/v1"),
    ("apps_v1", "api", "apps/v1"),
    ("batch_v1", "api", "batch/v1"),
    ("rbac_v1", "api", "rbac/v1"),
    ("scheduling_v1", "api", "scheduling/v1"),
    ("scheduling_v1alpha3", "api", "scheduling/v1alpha3"),
    ("scheduling_v1beta1", "api", "scheduling/v1beta1"),
    ("coordination_v1", "api", "coordination/v1"),
    ("events_v1", "api", "events/v1"),
    ("policy_v1", "api", "policy/v1"),
    ("storage_v1", "api", "storage/v1"),
    ("resource_v1", "api", "resource/v1"),
    ("authorization_v1", "api", "authorization/v1"),
    ("authentication_v1", "api", "authentication/v1"),
    ("autoscaling_v1", "api", "autoscaling/v1"),
    ("networking_v1", "api", "networking/v1"),
    ("discovery_v1", "api", "discovery/v1"),
    ("apiextensions_v1", "apiextensions", "pkg/apis/apiextensions/v1"),
]
SCALARS = set("string bool int32 int64 uint32 uint64 sint32 sint64 fixed32 "
              "fixed64 sfixed32 sfixed64 double float bytes".split())


class Git:
    def __init__(self, gitdir, rev):
        self.gitdir = gitdir
        self.sha = self.run("rev-parse", rev + "^{commit}").strip()

    def run(self, *args):
        return subprocess.run(["git", "--git-dir=" + self.gitdir] + list(args),
                              check=True, capture_output=True, text=True).stdout

    def show(self, path):
        return self.run("show", "%s:%s" % (self.sha, path))

    def ls(self, directory):
        return self.run("ls-tree", "--name-only", self.sha, directory + "/").split()


# ---------------------------------------------------------------- proto side

PROTO_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|'
                         r"[A-Za-z0-9_.+-]+|.", re.S)


class ProtoFile:
    """Messages, enums and imports of one generated.proto."""

    def __init__(self, text):
        self.toks = [t for t in PROTO_TOKEN.findall(text)
                     if t.strip() and not t.startswith(("//", "/*"))]
        self.pos = 0
        self.package = ""
        self.imports = []
        self.messages = []  # dicts in file order (pre-order for nesting)
        self.enums = []
        self.oneofs = []
        self.body([], top=True)

    def next(self):
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def expect(self, want):
        tok = self.next()
        if tok != want:
            raise SyntaxError("expected %r, got %r at token %d" % (want, tok, self.pos))

    def skip_statement(self):
        depth = 0
        while True:
            tok = self.next()
            if tok in ("{", "[", "("):
                depth += 1
            elif tok in ("}", "]", ")"):
                depth -= 1
            if depth == 0 and tok in (";", "}"):
                return

    def body(self, scope, top=False, msg=None, oneof=None):
        while self.pos < len(self.toks):
            tok = self.next()
            if tok == "}":
                return
            if tok == ";":
                continue
            if top and tok == "package":
                self.package = self.next()
                self.expect(";")
            elif top and tok == "import":
                self.imports.append(self.next().strip('"'))
                self.expect(";")
            elif tok in ("syntax", "option", "reserved", "extensions", "extend"):
                self.skip_statement()
            elif tok == "message":
                name = ".".join(scope + [self.next()])
                new = {"name": name, "fields": []}
                self.messages.append(new)
                self.expect("{")
                self.body(scope + [name.rsplit(".", 1)[-1]], msg=new)
            elif tok == "enum":
                self.enums.append(".".join(scope + [self.next()]))
                self.expect("{")
                self.pos -= 1
                self.skip_statement()
            elif tok == "oneof" and msg is not None:
                name = self.next()
                self.oneofs.append("%s.%s" % (msg["name"], name))
                self.expect("{")
                self.body(scope, msg=msg, oneof=name)
            elif msg is not None:
                self.field(tok, msg, scope, oneof)
            else:
                raise SyntaxError("unexpected %r at top level" % tok)

    def field(self, tok, msg, scope, oneof):
        kind, key = "opt", None
        if tok in ("optional", "required", "repeated"):
            kind = "rep" if tok == "repeated" else "opt"
            tok = self.next()
        if tok == "map":
            kind = "map"
            self.expect("<")
            key = self.next()
            self.expect(",")
            tok = self.next()
            self.expect(">")
        typ, name = tok, self.next()
        self.expect("=")
        number = int(self.next())
        tok = self.next()
        if tok == "[":
            self.pos -= 1
            self.skip_statement()
        elif tok != ";":
            raise SyntaxError("bad field %s.%s" % (msg["name"], name))
        msg["fields"].append({"number": number, "name": name, "kind": kind,
                              "key": key, "type": typ, "scope": list(scope),
                              "oneof": oneof})


def resolve(typ, scope, package, known):
    """Full name (no leading dot) of a proto type reference, or None."""
    if typ in SCALARS:
        return typ
    if typ.startswith("."):
        return typ[1:] if typ[1:] in known else None
    parts = package.split(".") + scope
    for i in range(len(parts), -1, -1):
        cand = ".".join(parts[:i] + [typ])
        if cand in known:
            return cand
    return None


# ------------------------------------------------------------------- Go side

GO_LEX = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|'
                    r"'(?:[^'\\\n]|\\.)*'|`[^`]*`|[^/\"'`]+|.", re.S)
STRUCT_START = re.compile(r"(?m)^type\s+(\w+)\s+struct\s*\{")
SLICE_TYPE = re.compile(r"(?m)^type\s+(\w+)\s+\[\]")
TAG_KV = re.compile(r'(\w+):"((?:[^"\\]|\\.)*)"')


def strip_go_comments(src):
    """Blank out comments (keeping newlines) so only code and tags remain."""
    return "".join(re.sub(r"[^\n]", " ", t) if t.startswith(("//", "/*")) else t
                   for t in GO_LEX.findall(src))


def go_types(git, directory):
    """({struct: {protoName: field}}, {named slice types}) of one Go package."""
    structs, slices = {}, set()
    for path in git.ls(directory):
        base = os.path.basename(path)
        if (not base.endswith(".go") or base.endswith("_test.go")
                or base == "generated.pb.go" or base.startswith("zz_generated")):
            continue
        src = strip_go_comments(git.show(path))
        slices.update(SLICE_TYPE.findall(src))
        for m in STRUCT_START.finditer(src):
            depth, i = 1, m.end()
            while depth:
                depth += {"{": 1, "}": -1}.get(src[i], 0)
                i += 1
            # Build-tag variants (FieldsV1 in fieldsv1_{byte,string}.go) merge.
            fields = structs.setdefault(m.group(1), {})
            for key, value in go_fields(src[m.end():i - 1]).items():
                fields.setdefault(key, value)
    return structs, slices


def go_fields(body):
    fields = {}
    for line in body.split("\n"):
        m = re.match(r"\s*([^`]*?)\s*`([^`]*)`\s*$", line)
        if not m:
            continue
        tags = dict(TAG_KV.findall(m.group(2)))
        if "protobuf" not in tags or tags["protobuf"] == "-":
            continue
        decl = m.group(1).split(None, 1)
        embedded = len(decl) == 1
        gotype = decl[-1]
        goname = gotype.lstrip("*").split(".")[-1] if embedded else decl[0]
        pb = tags["protobuf"].split(",")
        opts = dict(p.split("=", 1) for p in pb if "=" in p)
        number = int(pb[1]) if len(pb) > 1 else None
        # Tags without name= (e.g. EphemeralContainerCommon) match by number.
        fields[opts.get("name", "#%s" % number)] = {
            "goname": goname, "gotype": gotype, "embedded": embedded,
            "json": tags.get("json"), "number": number}
    return fields


def json_info(gof, report, where):
    """(jsonName, flags) for a Go field."""
    flags = ["ptr"] if gof["gotype"].startswith("*") else []
    if gof["json"] is None:
        report["no json tag (Go field name used)"].append(where)
        return gof["goname"], flags
    name, *opts = gof["json"].split(",")
    if "omitempty" in opts:
        flags.append("omitempty")
    if name == "" and gof["embedded"]:
        return "-", flags + ["inline"]
    if name == "-" and not opts:
        report['json:"-" (not in JSON)'].append(where)
        return "-", flags
    return name or gof["goname"], flags


# -------------------------------------------------------------------- driver

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for key in REPOS:
        ap.add_argument("--" + key, required=True, metavar="DIR",
                        help="git directory of %s" % REPOS[key])
    ap.add_argument("--rev", default="HEAD", help="revision to read (default HEAD)")
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args()
    gits = {key: Git(getattr(args, key), args.rev) for key in REPOS}

    # Load the listed packages plus everything they import (for resolution).
    files, todo = {}, [(k, d) for _, k, d in PACKAGES]
    while todo:
        key, directory = todo.pop()
        if (key, directory) in files:
            continue
        pf = ProtoFile(gits[key].show(directory + "/generated.proto"))
        files[(key, directory)] = pf
        for imp in pf.imports:
            for k, prefix in REPOS.items():
                if imp.startswith(prefix + "/"):
                    todo.append((k, os.path.dirname(imp[len(prefix) + 1:])))
                    break
            else:
                sys.exit("cannot map import %r" % imp)
    messages, enums = set(), set()
    for pf in files.values():
        messages.update(pf.package + "." + m["name"] for m in pf.messages)
        enums.update(pf.package + "." + e for e in pf.enums)

    report = {k: [] for k in ("nogo", "inline", "wrapper", "no Go struct",
                              "no json tag (Go field name used)",
                              'json:"-" (not in JSON)', "number mismatch",
                              "Go field missing from proto",
                              "matched by number (no name= in tag)", "oneof", "enum",
                              "unresolved")}
    os.makedirs(args.out, exist_ok=True)
    counts = []
    for stem, key, directory in PACKAGES:
        pf = files[(key, directory)]
        structs, slices = go_types(gits[key], directory)
        report["oneof"] += ["%s.%s" % (pf.package, o) for o in pf.oneofs]
        report["enum"] += ["%s.%s" % (pf.package, e) for e in pf.enums]
        out = ["# kubernetes protobuf schema of %s, generated by devcluster/tools/"
               "protoschema.py from %s at %s. Do not edit." % (pf.package, REPOS[key], gits[key].sha),
               "package " + pf.package]
        if pf.enums:
            out.append("# enums (fields of these types are written as int32): "
                       + " ".join(pf.package + "." + e for e in pf.enums))
        for msg in pf.messages:
            full = pf.package + "." + msg["name"]
            short = msg["name"].rsplit(".", 1)[-1]
            gofields = structs.get(short)
            fields = sorted(msg["fields"], key=lambda f: f["number"])
            if gofields is None:
                report["no Go struct"].append(full)
                gofields = {}
            if (len(fields) == 1 and fields[0]["kind"] == "rep"
                    and fields[0]["name"] == "items" and short in slices
                    and short not in structs):
                report["wrapper"].append(full)
                out.append("# wrapper: " + full)
            out.append("message " + full)
            for f in fields:
                where = "%s.%s" % (full, f["name"])
                types = []
                for t in filter(None, (f["key"], f["type"])):
                    r = resolve(t, f["scope"], pf.package, messages | enums)
                    if r is None:
                        report["unresolved"].append("%s (%s)" % (where, t))
                        r = t.lstrip(".")
                    types.append("int32" if r in enums else r)
                gof = gofields.get(f["name"])
                if gof is None and "#%d" % f["number"] in gofields:
                    gof = gofields["#%d" % f["number"]]
                    report["matched by number (no name= in tag)"].append(where)
                if gof is None:
                    report["nogo"].append(where)
                    jname, flags = f["name"], ["nogo"]
                else:
                    jname, flags = json_info(gof, report, where)
                    if gof["number"] != f["number"]:
                        report["number mismatch"].append(where)
                    if "inline" in flags:
                        report["inline"].append("%s (%s)" % (where, gof["gotype"]))
                out.append("  " + " ".join([str(f["number"]), f["name"], jname, f["kind"],
                                            ",".join(types)] + flags))
            seen = {f["name"] for f in fields} | {"#%d" % f["number"] for f in fields}
            for pname in sorted(set(gofields) - seen):
                report["Go field missing from proto"].append("%s.%s" % (full, pname))
        with open(os.path.join(args.out, stem + ".txt"), "w") as fh:
            fh.write("\n".join(out) + "\n")
        counts.append((stem + ".txt", pf.package, len(pf.messages)))

    for name, package, n in counts:
        print("%-24s %-52s %4d messages" % (name, package, n))
    for title, items in report.items():
        print("\n%s: %d" % (title, len(items)))
        for item in items:
            print("  " + item)


if __name__ == "__main__":
    main()
