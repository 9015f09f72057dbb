#!/usr/bin/env python3
"""Writes the kwas image as an OCI image layout archive, from a kwas binary, without a container engine
and without pulling anything (the image is FROM scratch: one layer holding /kwas, /etc/passwd,
/etc/group and the CA bundle /etc/ssl/certs/ca-certificates.crt, taken from this host).

The archive is what `kind load image-archive`, `ctr images import`, `docker load` (25+) and
`skopeo copy oci-archive:` take: `oci-layout`, `index.json` (the manifest annotated with
`io.containerd.image.name` and `org.opencontainers.image.ref.name`, as BuildKit's OCI exporter writes
them), `manifest.json` (docker save's index, for older `docker load`), and `blobs/sha256/` with the
manifest, the config and the gzip layer. The config has Containerfile's user, entrypoint and labels
(read from Containerfile, so the two images cannot drift apart).

A statically linked binary (no ELF program interpreter) is all the image needs. A dynamically linked
one is packed with its ELF interpreter and the shared libraries `ldd` resolves on this host, at the
paths the loader looks for them, so the image still runs on an empty base; `--static-only` refuses
such a binary instead.

The output is deterministic: fixed modification times (`--created`, default `SOURCE_DATE_EPOCH` or 0),
root-owned sorted entries, a gzip header without name or time, canonical JSON.

Usually run through scripts/build-image.sh, which builds the binary first.
"""

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TAG = "ghcr.io/kwas-dev/kwas:latest"

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

# ELF e_machine -> OCI architecture.
ARCHITECTURES = {62: "amd64", 183: "arm64", 243: "riscv64", 22: "s390x"}
PT_INTERP = 3
CHUNK = 1 << 20


def fail(message):
    print(f"oci-image: {message}", file=sys.stderr)
    sys.exit(1)


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


class Hashing:
    """A write-only file that hashes and counts what passes through it to `inner`."""

    def __init__(self, inner):
        self.inner = inner
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data):
        self.sha.update(data)
        self.size += len(data)
        return self.inner.write(data)

    def flush(self):
        self.inner.flush()

    def digest(self):
        return "sha256:" + self.sha.hexdigest()


def elf_info(path):
    """(architecture, interpreter or None) of an ELF executable."""
    with open(path, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF":
            fail(f"{path} is not an ELF executable")
        if header[4] != 2:
            fail(f"{path} is not a 64-bit executable")
        endian = "<" if header[5] == 1 else ">"
        (machine,) = struct.unpack_from(endian + "H", header, 18)
        (phoff,) = struct.unpack_from(endian + "Q", header, 32)
        phentsize, phnum = struct.unpack_from(endian + "HH", header, 54)
        if machine not in ARCHITECTURES:
            fail(f"{path}: unknown ELF machine {machine}")
        arch = ARCHITECTURES[machine]
        if arch == "s390x" and endian == "<":
            fail(f"{path}: unexpected byte order")
        interpreter = None
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(phentsize)
            (p_type,) = struct.unpack_from(endian + "I", ph, 0)
            if p_type == PT_INTERP:
                (offset,) = struct.unpack_from(endian + "Q", ph, 8)
                (filesz,) = struct.unpack_from(endian + "Q", ph, 32)
                f.seek(offset)
                interpreter = f.read(filesz).rstrip(b"\0").decode()
        return arch, interpreter


def shared_libraries(binary, interpreter):
    """Absolute paths of the shared libraries the loader maps for `binary` on this host."""
    try:
        out = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"ldd {binary}: {e} (a dynamically linked binary needs ldd; or give a static one)")
    paths = {interpreter}
    for line in out.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)", line)
        if m:
            paths.add(m.group(1))
        elif "not found" in line:
            fail(f"ldd {binary}: {line.strip()}")
    return sorted(paths)


def containerfile():
    """Containerfile's final stage: its labels (with ARG defaults substituted) and ARG defaults."""
    path = os.path.join(REPO, "Containerfile")
    with open(path) as f:
        text = f.read()
    # Join continuation lines, then take the last stage.
    lines = re.sub(r"\\\n", " ", text).splitlines()
    stages = [i for i, line in enumerate(lines) if re.match(r"\s*FROM\s", line, re.I)]
    final = [line.strip() for line in lines[stages[-1] :] if line.strip() and not line.strip().startswith("#")]
    args, labels = {}, {}
    for line in final:
        keyword, _, rest = line.partition(" ")
        if keyword.upper() == "ARG":
            name, _, default = rest.strip().partition("=")
            args[name] = default
        elif keyword.upper() == "LABEL":
            for key, value in re.findall(r'(\S+?)="([^"]*)"', rest):
                labels[key] = value
    return args, labels


def cargo_version():
    with open(os.path.join(REPO, "Cargo.toml")) as f:
        text = f.read()
    m = re.search(r'^\[workspace\.package\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S)
    if not m:
        fail("no [workspace.package] version in Cargo.toml")
    return m.group(1)


def tar_info(name, mtime, mode, size=0, kind=tarfile.REGTYPE):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.mtime = mtime
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def write_layer(out, files, mtime):
    """A tar of `files` ({path in image: (mode, bytes or host path)}) with their parent directories."""
    dirs = set()
    for path in files:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    entries = [(d, None) for d in dirs] + list(files.items())
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for name, spec in sorted(entries, key=lambda e: e[0]):
            if spec is None:
                tar.addfile(tar_info(name, mtime, 0o755, kind=tarfile.DIRTYPE))
                continue
            mode, content = spec
            if isinstance(content, bytes):
                tar.addfile(tar_info(name, mtime, mode, len(content)), io.BytesIO(content))
            else:
                with open(content, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    tar.addfile(tar_info(name, mtime, mode, size), f)


def add_bytes(tar, name, data, mtime):
    tar.addfile(tar_info(name, mtime, 0o644, len(data)), io.BytesIO(data))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="the kwas executable to pack")
    parser.add_argument("--output", required=True, help="the OCI archive to write")
    parser.add_argument("--tag", default=DEFAULT_TAG, help=f"the image reference (default {DEFAULT_TAG})")
    parser.add_argument("--version", help="org.opencontainers.image.version (default: the workspace version)")
    parser.add_argument(
        "--created",
        type=int,
        default=int(os.environ.get("SOURCE_DATE_EPOCH", "0")),
        help="creation time and file times, seconds since the epoch (default SOURCE_DATE_EPOCH or 0)",
    )
    parser.add_argument("--compression-level", type=int, default=6, choices=range(1, 10), metavar="1-9")
    parser.add_argument(
        "--ca-certificates",
        default="/etc/ssl/certs/ca-certificates.crt",
        help="the CA bundle to include (kube-rs verifies against it when a kubeconfig names no CA; "
        "in-cluster configuration does not need it); '' for none",
    )
    parser.add_argument("--static-only", action="store_true", help="refuse a dynamically linked binary")
    args = parser.parse_args()

    binary = os.path.abspath(args.binary)
    if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        fail(f"{args.binary} is not an executable file")
    # name[:tag]; the tag defaults to latest (a digest cannot be chosen, it is computed).
    name, _, tag = args.tag.rpartition(":") if ":" in args.tag.rsplit("/", 1)[-1] else (args.tag, "", "latest")
    if "@" in args.tag or not re.fullmatch(r"[a-z0-9]+([._/:-][a-z0-9]+)*", name) or not re.fullmatch(r"\w[\w.-]{0,127}", tag):
        fail(f"{args.tag!r} is not an image reference such as {DEFAULT_TAG}")
    reference = f"{name}:{tag}"

    arch, interpreter = elf_info(binary)
    version = args.version or cargo_version()
    arg_defaults, labels = containerfile()
    arg_values = {**arg_defaults, "VERSION": version}
    labels = {k: re.sub(r"\$\{(\w+)\}", lambda v: arg_values.get(v.group(1), ""), val) for k, val in labels.items()}

    passwd = b"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n"
    group = b"root:x:0:\nnonroot:x:65532:\n"
    files = {"kwas": (0o755, binary), "etc/passwd": (0o644, passwd), "etc/group": (0o644, group)}
    if args.ca_certificates:
        if not os.path.isfile(args.ca_certificates):
            fail(f"no CA bundle at {args.ca_certificates} (--ca-certificates PATH, or '' for none)")
        files["etc/ssl/certs/ca-certificates.crt"] = (0o644, os.path.realpath(args.ca_certificates))
    bundled = []
    if interpreter:
        if args.static_only:
            fail(f"{args.binary} is dynamically linked (interpreter {interpreter}); give a static binary")
        for lib in shared_libraries(binary, interpreter):
            files[lib.lstrip("/")] = (0o755, os.path.realpath(lib))
            bundled.append(lib)

    os.makedirs(os.path.dirname(os.path.abspath(args.output)) or ".", exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kwas-oci-") as tmp:
        # The layer: its diff_id hashes the tar, its digest the gzip stream.
        layer_tar = os.path.join(tmp, "layer.tar")
        with open(layer_tar, "wb") as f:
            raw = Hashing(f)
            write_layer(raw, files, args.created)
        layer_gz = os.path.join(tmp, "layer.tar.gz")
        with open(layer_gz, "wb") as f:
            compressed = Hashing(f)
            with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, mtime=0, compresslevel=args.compression_level) as gz:
                with open(layer_tar, "rb") as src:
                    shutil.copyfileobj(src, gz, CHUNK)

        created = datetime.datetime.fromtimestamp(args.created, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        platform = {"architecture": arch, "os": "linux"}
        config = canonical_json(
            {
                **platform,
                "created": created,
                "config": {
                    "User": "65532:65532",
                    "Entrypoint": ["/kwas"],
                    "WorkingDir": "/",
                    "Labels": labels,
                },
                "rootfs": {"type": "layers", "diff_ids": [raw.digest()]},
                "history": [{"created": created, "created_by": "scripts/oci-image.py (Containerfile's final stage)"}],
            }
        )
        config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
        manifest = canonical_json(
            {
                "schemaVersion": 2,
                "mediaType": MEDIA_MANIFEST,
                "config": {"mediaType": MEDIA_CONFIG, "digest": config_digest, "size": len(config)},
                "layers": [{"mediaType": MEDIA_LAYER, "digest": compressed.digest(), "size": compressed.size}],
                "annotations": {"org.opencontainers.image.created": created, **labels},
            }
        )
        manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
        index = canonical_json(
            {
                "schemaVersion": 2,
                "mediaType": MEDIA_INDEX,
                "manifests": [
                    {
                        "mediaType": MEDIA_MANIFEST,
                        "digest": manifest_digest,
                        "size": len(manifest),
                        "platform": platform,
                        "annotations": {
                            "io.containerd.image.name": reference,
                            "org.opencontainers.image.ref.name": tag,
                        },
                    }
                ],
            }
        )
        blob = lambda digest: "blobs/sha256/" + digest.split(":", 1)[1]  # noqa: E731
        docker_manifest = canonical_json(
            [{"Config": blob(config_digest), "RepoTags": [reference], "Layers": [blob(compressed.digest())]}]
        )

        partial = args.output + ".partial"
        with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as out:
            add_bytes(out, "oci-layout", canonical_json({"imageLayoutVersion": "1.0.0"}), args.created)
            add_bytes(out, "index.json", index, args.created)
            add_bytes(out, "manifest.json", docker_manifest, args.created)
            for d in ("blobs", "blobs/sha256"):
                out.addfile(tar_info(d, args.created, 0o755, kind=tarfile.DIRTYPE))
            blobs = [(manifest_digest, manifest), (config_digest, config), (compressed.digest(), layer_gz)]
            for digest, content in sorted(blobs):
                if isinstance(content, bytes):
                    add_bytes(out, blob(digest), content, args.created)
                else:
                    with open(content, "rb") as f:
                        out.addfile(tar_info(blob(digest), args.created, 0o644, compressed.size), f)
        os.replace(partial, args.output)

    mib = lambda n: f"{n / (1 << 20):.1f} MiB"  # noqa: E731
    linkage = f"dynamic, with {len(bundled)} shared libraries from this host" if bundled else "static"
    print(f"image     {reference} (linux/{arch})")
    print(f"binary    {args.binary} ({linkage})")
    for lib in bundled:
        print(f"          + {lib}")
    print(f"manifest  {manifest_digest}")
    print(f"config    {config_digest}")
    print(f"layer     {compressed.digest()} ({mib(compressed.size)}; {mib(raw.size)} uncompressed)")
    print(f"archive   {args.output} ({mib(os.path.getsize(args.output))})")


if __name__ == "__main__":
    main()
