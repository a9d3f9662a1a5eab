#!/bin/sh
# Replace nbdev's Quarto commands in a virtual environment's bin/ folder with stubs that stop at once.
# Usage: scripts/guard_nbdev.sh VENV/bin   (`make env` runs it after every install).
#
# Why: without Quarto, nbdev_docs / nbdev_preview / nbdev_prepare try to install it with `curl ... | sudo dpkg -i`
# and, when that fails, run `pip install -e ".[dev]"` with whatever pip is first on PATH, which can be the system
# Python's. No Debian package ships Quarto, and PyPI's quarto-cli downloads the binary at install time. This
# project builds its documentation with `make docs` (Sphinx + myst-nb, offline) instead.
set -eu
bin=${1:?usage: scripts/guard_nbdev.sh VENV/bin}
test -d "$bin" || { echo "guard_nbdev.sh: no folder $bin" >&2; exit 1; }
for cmd in nbdev_docs nbdev_preview nbdev_prepare; do
  tmp="$bin/.$cmd.tmp"
  cat > "$tmp" <<STUB
#!/bin/sh
# bcl-nbdev-guard: written by scripts/guard_nbdev.sh (make env); nbdev's own $cmd needs Quarto.
echo "$cmd is disabled in bcl: it needs Quarto, which is not installed, and would then try 'sudo dpkg -i' and a" >&2
echo "'pip install' into another Python. Build the documentation offline with 'make docs' (site in _docs/html/);" >&2
echo "run the notebook tests with 'make test' and sync them with 'make clean-notebooks'." >&2
exit 2
STUB
  chmod 755 "$tmp"
  mv -f "$tmp" "$bin/$cmd"
done
