#!/usr/bin/env bash
# Check the import contracts of pyproject.toml ([tool.importlinter]) with import-linter.
# It runs against a regular (non-editable) install into a temporary folder: in the editable
# install the subpackages that setup.py maps from envs/ wrappers/ trainer/ are invisible to grimp.
#
#   bash scripts/lint_imports.sh            # this checkout
#   bash scripts/lint_imports.sh DIR        # another source tree (tests use it on a broken copy)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$(cd "${1:-$root}" && pwd)
bin=$(cd "${VENV:-$root/.venv}/bin" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# build from a copy, so no build/ folder lands in the source tree
mkdir "$tmp/src" "$tmp/run"
(cd "$src" && cp -r setup.py pyproject.toml README.md LICENSE seed_gym envs wrappers trainer "$tmp/src/")
(cd "$tmp/src" && "$bin/python" -m pip install -q --no-deps --no-build-isolation --target "$tmp/site" . >/dev/null)
# run from a folder without sources: import-linter puts the working directory on sys.path
cp "$src/pyproject.toml" "$tmp/run/"
cd "$tmp/run" && PYTHONPATH="$tmp/site" "$bin/lint-imports" --no-cache pyproject.toml
