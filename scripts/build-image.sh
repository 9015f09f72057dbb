#!/usr/bin/env bash
# Builds the kwas image as an OCI archive without a container engine and without pulling anything:
# a static kwas binary, then scripts/oci-image.py packs it as Containerfile's final stage would (FROM
# scratch, /kwas, user 65532:65532, the same labels).
#
#   scripts/build-image.sh [--binary PATH] [--output PATH] [oci-image.py options: --tag REF
#                          --version V --created EPOCH --compression-level N --ca-certificates PATH
#                          --static-only]
#
# Without --binary it runs `cargo build --release --locked -p kwas-cli --bin kwas` for a static target:
# <arch>-unknown-linux-musl when that target is installed, else <arch>-unknown-linux-gnu with
# `-C target-feature=+crt-static` when the C library's static archive (libc.a) is present, else the host
# target as is (a dynamic binary; oci-image.py then packs the shared libraries it loads). The archive
# goes to --output, by default <cargo target dir>/kwas-image.tar. File times and the creation time are
# SOURCE_DATE_EPOCH, else the time of the last commit.
#
# Then: kind load image-archive <archive>   (or: skopeo copy oci-archive:<archive> docker://<registry>/kwas:<tag>)
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
binary=""
output=""
pass=()
while (($#)); do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --binary=*) binary="${1#*=}"; shift ;;
        --output) output="$2"; shift 2 ;;
        --output=*) output="${1#*=}"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        *) pass+=("$1"); shift ;;
    esac
done

target_dir() {
    cargo metadata --format-version 1 --no-deps --manifest-path "$repo/Cargo.toml" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])'
}

if [[ -z "$binary" ]]; then
    arch="$(uname -m)"
    if rustup target list --installed 2>/dev/null | grep -qx "$arch-unknown-linux-musl"; then
        target="$arch-unknown-linux-musl"
        flags=""
    elif libc="$(${CC:-cc} -print-file-name=libc.a 2>/dev/null)" && [[ "$libc" == /* && -f "$libc" ]]; then
        target="$arch-unknown-linux-gnu"
        flags="-C target-feature=+crt-static"
    else
        target=""
        flags=""
        echo "build-image: no musl target and no static libc: building a dynamic binary" >&2
    fi
    echo "build-image: cargo build --release --locked -p kwas-cli --bin kwas${target:+ --target $target}${flags:+ (RUSTFLAGS: $flags)}" >&2
    (
        cd "$repo"
        RUSTFLAGS="${RUSTFLAGS:-}${flags:+ $flags}" cargo build --release --locked -p kwas-cli --bin kwas ${target:+--target "$target"}
    )
    binary="$(target_dir)/${target:+$target/}release/kwas"
fi

if [[ -z "$output" ]]; then
    output="$(target_dir)/kwas-image.tar"
fi

if [[ -z "${SOURCE_DATE_EPOCH:-}" ]]; then
    SOURCE_DATE_EPOCH="$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)"
    export SOURCE_DATE_EPOCH
fi

exec python3 "$repo/scripts/oci-image.py" --binary "$binary" --output "$output" ${pass[@]+"${pass[@]}"}
