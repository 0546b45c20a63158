#!/usr/bin/env bash
# Cross-builds the release addon for every Linux target with zig (cargo-zigbuild, through
# `napi build --cross-compile`), checks each binary's ELF header, C library and glibc symbol
# versions, and copies it to npm/<platform>/prism-review.<platform>.node.
#
#   npm run build:cross                      # all four Linux targets
#   npm run build:cross -- aarch64-unknown-linux-musl x86_64-unknown-linux-gnu
#
# Needs: rustup targets for each triple, zig (`pip install ziglang`, or a `zig` on PATH) and
# cargo-zigbuild (`pip install cargo-zigbuild` or `cargo install cargo-zigbuild`).
# The napi-rs loader it generates (the same for every target) is left in
# $PRISM_CROSS_TARGET_DIR/napi-out/<platform>/binding.js; the repository's binding.js is untouched.
# Cargo's output goes to $PRISM_CROSS_TARGET_DIR (default target-cross/ in the repository), not
# to the host build's target directory, so the two never invalidate each other.
# glibc targets are pinned to glibc 2.17 (the baseline napi-rs uses), so the binary loads on
# every distribution Node 18+ runs on. musl targets link the C library dynamically
# (napi build adds `-C target-feature=-crt-static`), as a Node addon must.
set -euo pipefail
cd "$(dirname "$0")/.."

GLIBC_PIN=2.17
ALL_TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")

export CARGO_TARGET_DIR="${PRISM_CROSS_TARGET_DIR:-$PWD/target-cross}"
out_root="$CARGO_TARGET_DIR/napi-out"

# napi's --cross-compile wants `zig` on PATH; the PyPI package `ziglang` ships it as a module.
if ! command -v zig >/dev/null 2>&1; then
  zig_dir="$(python3 -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))' 2>/dev/null || true)"
  if [ -n "$zig_dir" ] && [ -x "$zig_dir/zig" ]; then
    export PATH="$zig_dir:$PATH"
  else
    echo "build-cross: zig not found (pip install ziglang)" >&2
    exit 1
  fi
fi
command -v cargo-zigbuild >/dev/null 2>&1 || { echo "build-cross: cargo-zigbuild not found (pip install cargo-zigbuild)" >&2; exit 1; }
echo "build-cross: zig $(zig version), $(cargo-zigbuild --version), CARGO_TARGET_DIR=$CARGO_TARGET_DIR"

platform_of() {
  case "$1" in
    x86_64-unknown-linux-gnu) echo linux-x64-gnu ;;
    aarch64-unknown-linux-gnu) echo linux-arm64-gnu ;;
    x86_64-unknown-linux-musl) echo linux-x64-musl ;;
    aarch64-unknown-linux-musl) echo linux-arm64-musl ;;
    *) echo "build-cross: unsupported target $1" >&2; return 1 ;;
  esac
}

fail() { echo "build-cross: $*" >&2; exit 1; }

for triple in "${targets[@]}"; do
  platform="$(platform_of "$triple")"
  case "$triple" in
    x86_64-*) machine='Advanced Micro Devices X86-64'; file_arch='x86-64' ;;
    aarch64-*) machine='AArch64'; file_arch='ARM aarch64' ;;
  esac
  build_target="$triple"
  case "$triple" in *-gnu) build_target="$triple.$GLIBC_PIN" ;; esac

  out="$out_root/$platform"
  rm -rf "$out"
  mkdir -p "$out"
  echo "build-cross: building $build_target"
  npx napi build --platform --release --cross-compile --target "$build_target" \
    --output-dir "$out" --js binding.js --dts binding.d.ts
  node_file="$out/prism-review.$platform.node"
  [ -f "$node_file" ] || fail "$node_file was not produced"

  # Checks: ELF shared object for the right machine, dynamically linked against the right libc.
  file -L "$node_file"
  file -L "$node_file" | grep -q "ELF 64-bit LSB shared object, $file_arch" || fail "$platform: not a 64-bit $file_arch shared object"
  readelf -h "$node_file" | grep -q "Machine: *$machine" || fail "$platform: ELF machine is not $machine"
  needed="$(readelf -d "$node_file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  echo "  NEEDED: $needed"
  case "$triple" in
    *-musl)
      echo "$needed" | grep -q 'libc\.so' || fail "$platform: does not link the musl libc dynamically"
      echo "$needed" | grep -q 'libc\.so\.6' && fail "$platform: links glibc"
      ;;
    *-gnu)
      echo "$needed" | grep -q 'libc\.so\.6' || fail "$platform: does not link glibc"
      newest="$(readelf -W --dyn-syms "$node_file" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)"
      echo "  newest glibc symbol version: $newest"
      [ "$(printf '%s\n%s\n' "$newest" "$GLIBC_PIN" | sort -V | tail -1)" = "$GLIBC_PIN" ] \
        || fail "$platform: needs glibc $newest > $GLIBC_PIN"
      ;;
  esac
  if readelf -W --dyn-syms "$node_file" | grep -q ' napi_register_module_v1$'; then
    echo "  exports napi_register_module_v1"
  else
    fail "$platform: napi_register_module_v1 is not exported"
  fi

  cp "$node_file" "npm/$platform/"
  echo "  -> npm/$platform/prism-review.$platform.node ($(stat -c %s "$node_file") bytes)"
done

# Loads the binary that this machine can run natively (linux-x64-gnu on an x64 glibc host).
if [ "$(uname -m)" = x86_64 ] && [ -f npm/linux-x64-gnu/prism-review.linux-x64-gnu.node ] \
  && ldd --version 2>&1 | grep -qi 'glibc\|gnu libc'; then
  node -e "
    const b = require('./npm/linux-x64-gnu/prism-review.linux-x64-gnu.node')
    const names = Object.keys(b)
    if (names.length === 0) throw new Error('no exports')
    console.log('build-cross: linux-x64-gnu loads in node ' + process.version + ' (' + names.length + ' exports)')
  "
fi
echo "build-cross: done (${targets[*]})"
