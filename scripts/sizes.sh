#!/usr/bin/env bash
# The stripped release sizes quoted in README.md and BENCHMARKS.md, from
# one command, so that they cannot go stale: builds each binary with the
# crate's [profile.release] (opt-level "s", LTO, one codegen unit, strip)
# and prints a Markdown table, in bytes.
#
#   scripts/sizes.sh            the binaries by feature set
#   scripts/sizes.sh --profile  the default-feature echo server under a
#                               plain `cargo build --release` (what a
#                               dependent crate gets without the profile)
#                               and with each line of the profile added
#
# Each row is a release build with LTO: minutes on a small machine, so CI
# does not run it (README, "Small binaries"). Builds go to
# target/sizes/ so that they leave target/release alone.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/sizes"

# build NAME KIND TARGET FEATURES: one row (KIND is example or bin;
# FEATURES "default" or a comma-separated list without the defaults).
build() {
    local name=$1 kind=$2 target=$3 features=$4 args=()
    if [ "$features" != default ]; then
        args=(--no-default-features --features "$features")
    fi
    cargo build --quiet --release "--$kind" "$target" "${args[@]}"
    local dir=$CARGO_TARGET_DIR/release
    [ "$kind" = example ] && dir=$dir/examples
    printf '| %s | `%s` | %s |\n' "$name" "$features" \
        "$(stat -c %s "$dir/$target" | sed -e ':a' -e 's/\B[0-9]\{3\}\>/,&/' -e 'ta') B"
}

if [ "${1:-}" = --profile ]; then
    # A dependent crate inherits none of this crate's profile: cargo's
    # release defaults, then the profile's lines one at a time.
    plain=(CARGO_PROFILE_RELEASE_OPT_LEVEL=3 CARGO_PROFILE_RELEASE_LTO=false
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_STRIP=none)
    echo '| `[profile.release]` | stripped? | `examples/echo`, default features |'
    echo '|---|---|---|'
    row() {
        local label=$1 strip=$2; shift 2
        env "${plain[@]}" "$@" cargo build --quiet --release --example echo
        local file=$CARGO_TARGET_DIR/release/examples/echo
        printf '| %s | %s | %s B |\n' "$label" "$strip" \
            "$(stat -c %s "$file" | sed -e ':a' -e 's/\B[0-9]\{3\}\>/,&/' -e 'ta')"
    }
    row 'none (cargo defaults)' no
    row '+ `strip = true`' yes CARGO_PROFILE_RELEASE_STRIP=true
    row '+ `lto = true`' yes CARGO_PROFILE_RELEASE_STRIP=true CARGO_PROFILE_RELEASE_LTO=true
    row '+ `codegen-units = 1`' yes CARGO_PROFILE_RELEASE_STRIP=true CARGO_PROFILE_RELEASE_LTO=true \
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1
    row '+ `opt-level = "s"` (the whole profile)' yes CARGO_PROFILE_RELEASE_STRIP=true \
        CARGO_PROFILE_RELEASE_LTO=true CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
        CARGO_PROFILE_RELEASE_OPT_LEVEL=s
    row '… and `panic = "abort"` (not kept: a panicking handler must become -32603)' yes \
        CARGO_PROFILE_RELEASE_STRIP=true CARGO_PROFILE_RELEASE_LTO=true \
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_OPT_LEVEL=s \
        CARGO_PROFILE_RELEASE_PANIC=abort
    exit 0
fi

echo '| binary | features | stripped size |'
echo '|---|---|---|'
build '`examples/echo`' example echo server
build '`examples/echo`' example echo server,legacy
build '`examples/echo`' example echo server,signals
build '`examples/echo`' example echo default
build '`examples/client`' example client client
build '`examples/client`' example client client,legacy
build '`mcp-stdio` (the command line)' bin mcp-stdio client,legacy
build '`mcp-stdio` (the command line)' bin mcp-stdio client,legacy,http
build '`mcp-stdio` (the command line)' bin mcp-stdio client,legacy,http,https
