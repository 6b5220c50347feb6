#!/usr/bin/env bash
# The whole test suite, set-up included: installs lavapipe (a software Vulkan adapter, Debian's
# mesa-vulkan-drivers) when no Vulkan driver is present, so the GPU tests run for real without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1 || ! ldconfig -p | grep -q libvulkan.so.1; then
  echo "scripts/test.sh: installing lavapipe (mesa-vulkan-drivers, libvulkan1)"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi

# The suite's build takes about 4 GB (target/debug 2.8 GB, the two Python venvs 1.1 GB): say
# so first when the disk holds less, rather than failing minutes later mid-link.
free_kb="$(df -Pk . | awk 'NR == 2 {print $4}')"
if [ -n "$free_kb" ] && [ "$free_kb" -lt $((5 * 1024 * 1024)) ]; then
  echo "scripts/test.sh: warning: $((free_kb / 1024)) MB free on $(df -P . | awk 'NR == 2 {print $6}');" \
    "the build and the Python venvs take about 4 GB" >&2
fi

# A CI run builds once from a clean clone: incremental state (1.3 GB of target/debug) would only
# cost disk and time there.
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
fi

# Having installed a Vulkan driver, the GPU tests must find an adapter: fail rather than skip.
export RMLD_REQUIRE_GPU="${RMLD_REQUIRE_GPU:-1}"
# Mesa's window-system code complains on every adapter query without one; give it a private one.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  XDG_RUNTIME_DIR="$(mktemp -d)"
  export XDG_RUNTIME_DIR
fi

# augment's LASSO code cache (default ~/.cache/rmld/codes): a fresh folder per test run, so the
# suite neither reads nor fills the user's cache.
RMLD_CACHE_DIR="$(mktemp -d)"
export RMLD_CACHE_DIR

# Real datasets (MNIST, …) for the tests that need them; CI puts ../shared beside the clone.
export RMLD_DATASETS="${RMLD_DATASETS:-$(pwd)/../shared/datasets}"

# The Table 2 harness's Python (pinned scikit-learn in target/table2-venv) for
# tests/table2_subset.rs, and its own self-test on synthetic files.
RMLD_TABLE2_PYTHON="$(bash scripts/table2/setup_env.sh)"
export RMLD_TABLE2_PYTHON
"$RMLD_TABLE2_PYTHON" -m unittest discover -s scripts/table2 -p 'test_*.py' -q

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --locked "$@"

# The Python package (python/): maturin builds it into its own venv, pytest runs its tests
# (against the library and, for the same-settings check, the binary cargo test just built).
py="$(bash scripts/venv.sh python/requirements-test.txt target/python-venv \
  "maturin numpy arviz sklearn imblearn pytest ray")"
venv="$(dirname "$(dirname "$py")")"
VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop --locked --quiet -m python/Cargo.toml
RMLD_BIN="$(pwd)/target/debug/rmld" "$py" -m pytest -q -p no:cacheprovider python/tests
# The usefulness benchmark's self-test (synthetic images, seconds).
"$py" -m unittest discover -s scripts/usefulness -p 'test_*.py' -q
