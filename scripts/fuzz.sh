#!/usr/bin/env bash
# scripts/fuzz.sh [seconds-per-target] [target...]: build the cargo-fuzz targets in fuzz/
# and run each for a bounded time (default 20 s) over its committed seed corpus
# (fuzz/corpus/<target>/). New inputs libFuzzer finds go to a scratch directory, so the
# committed corpus only changes when someone copies a finding in. A crash fails the run;
# its reproducer is in fuzz/artifacts/<target>/ (`cargo fuzz run <target> <file>`).
#
# cargo-fuzz is installed once into ~/.cache/prism-review/cargo-fuzz (crates.io,
# `--locked`). libFuzzer needs `-Z` flags (sanitizer coverage), which only nightly
# accepts: RUSTC_BOOTSTRAP=1 lets the pinned stable toolchain accept them, for this
# build only (the addon and its tests never see it).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-20}
shift || true
root="${XDG_CACHE_HOME:-$HOME/.cache}/prism-review"
cache="$root/cargo-fuzz"
# The instrumented build lives in the cache too, so a fresh clone (CI) rebuilds only
# prism_review and the targets, not every dependency (about 25 min cold on a busy 2-core VM).
target_dir="${PRISM_FUZZ_TARGET_DIR:-$root/fuzz-target}"
if ! [ -x "$cache/bin/cargo-fuzz" ]; then
  echo "fuzz: installing cargo-fuzz into $cache"
  cargo install cargo-fuzz --locked --version 0.13.2 --root "$cache"
fi
export PATH="$cache/bin:$PATH"
export RUSTC_BOOTSTRAP=1

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi
# -O: optimised, as the addon ships (no debug assertions); AddressSanitizer stays on.
cargo fuzz build -O --target-dir "$target_dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t"
  rc=0
  cargo fuzz run -O --target-dir "$target_dir" "$t" "$scratch/$t" "fuzz/corpus/$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$scratch/$t.log" 2>&1 || rc=$?
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$scratch/$t.log" | grep -oE '[0-9]+$' || echo '?')
  echo "fuzz: $t ${seconds}s, $runs runs, exit $rc"
  if [ "$rc" -ne 0 ]; then
    grep -E 'panicked|SUMMARY|ERROR|Test unit written' "$scratch/$t.log" | head -20 || tail -40 "$scratch/$t.log"
    echo "fuzz: $t FAILED (reproducer in fuzz/artifacts/$t/)"
    exit 1
  fi
done
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, no crash"
