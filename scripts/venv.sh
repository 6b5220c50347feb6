#!/usr/bin/env bash
# Creates (once) a Python venv and installs a pinned requirements file into it.
# Usage: scripts/venv.sh REQUIREMENTS VENV "MODULE ..."   (the modules it must then import)
# Prints the venv's python on stdout and nothing else on success, so callers can do
#   py="$(scripts/venv.sh …)"
# The venv is reused while the requirements and the interpreter are unchanged; delete it (or
# change either) to rebuild it. On Debian, a missing python3 or python3-venv (ensurepip) is
# apt-installed, with sudo when not root.
set -euo pipefail
requirements="$1"
venv="$2"
imports="$3"
python="${RMLD_PYTHON:-python3}"

say() { echo "scripts/venv.sh: $*" >&2; }

apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    say "need $* but this is not a Debian-like system (no apt-get): install it and retry"
    exit 1
  fi
  say "installing $*"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

if ! command -v "$python" >/dev/null 2>&1; then
  apt_install python3 python3-venv
  python=python3
fi
# Debian splits venv's ensurepip into python3-venv: `import venv` works without it, creating one fails.
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  apt_install python3-venv
fi

# What the venv was built from: the interpreter's version and path, and the requirements.
stamp_text="$("$python" -c 'import sys; print(sys.version.split()[0], sys.executable)')
$(sha256sum "$requirements" | cut -d' ' -f1)"
stamp="$venv/.rmld-venv-stamp"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ] \
  && "$venv/bin/python" -c "import ${imports// /, }" >/dev/null 2>&1; then
  echo "$venv/bin/python"
  exit 0
fi

if [ -e "$venv" ]; then
  # Only ever remove what is recognisably a venv (RMLD_PYENV might name any folder).
  if [ ! -f "$venv/pyvenv.cfg" ] && [ -n "$(ls -A "$venv" 2>/dev/null)" ]; then
    say "$venv exists and is not a venv: refusing to replace it"
    exit 1
  fi
  rm -rf "$venv"
fi
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: \
  -r "$requirements" >"$log" 2>&1; then
  cat "$log" >&2
  say "pip install -r $requirements failed (see above)"
  exit 1
fi
echo "$stamp_text" >"$stamp"
echo "$venv/bin/python"
