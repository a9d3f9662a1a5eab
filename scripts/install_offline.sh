#!/usr/bin/env bash
# Offline installation of bcl on a machine without network access (the lent GPU machines), from folders of wheels.
#
#   scripts/install_offline.sh download [DIR]   # here, with PyPI: fill DIR (default .whl) with wheels
#   scripts/install_offline.sh install  [DIR]   # there, offline: install from DIR, then `pip install -e .`
#   scripts/install_offline.sh requirements     # the requirement lines both steps use
#   scripts/install_offline.sh guard            # nbdev's Quarto commands stubbed in python3's (PYTHON's) scripts folder
#
# What is downloaded: the `requirements` and `dev_requirements` of settings.ini plus dask[distributed] and
# dask-jobqueue, with their dependencies, for CPython $BCL_WHEEL_PYTHON (3.12: the GPU machines' python3 is
# /opt/torch/.venv/bin/python3, Python 3.12.3) on manylinux x86-64. The JAX family (jax, jaxlib, flax, optax,
# orbax-checkpoint, chex and the CUDA plugins) is NEVER downloaded: the GPU machine has its own CUDA build. The
# resolver sees them as empty stand-in wheels ("stubs", version X+stub) so that nothing pulls them from PyPI.
# Packages with no wheel on PyPI (e.g. promise, needed by tensorflow-datasets) are built here as pure-Python wheels.
#
# The download is split in three folders, all under the git-ignored .whl/:
#   DIR/gpu/            what the GPU machine's image lacks: carry this one (`carry: [".whl/gpu"]`, 64 MiB limit)
#   DIR/preinstalled/   the resolved versions of packages the image already has (numpy, pandas, matplotlib, scipy,
#                       scikit-learn, ...; list below, from the GPU image's package list); needed only where the
#                       image's version is too old for a requirement: carry the few wheels the install step names.
#   DIR/docs/           the documentation toolchain (Sphinx, myst-nb, ...; `make docs`): not carried, not installed there
# The install step uses every one of DIR/gpu, DIR/preinstalled, DIR/docs and DIR itself that exists, with --no-index,
# and guards nbdev's Quarto commands in the target's scripts folder (scripts/guard_nbdev.sh).
#
# Environment: PYTHON (interpreter whose pip runs; download default .venv/bin/python or python3, install default
# python3), BCL_WHEEL_PYTHON (3.12), BCL_WHEEL_PLATFORMS (manylinux tags), BCL_STUB_VERSIONS ("name==version ...",
# the versions the resolver assumes for the JAX family), BCL_PREINSTALLED (names kept out of DIR/gpu),
# BCL_WHEEL_SKIP (requirements left out of both steps; default jupyterlab; set it empty to keep everything).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# The JAX family: never downloaded, expected on the target machine.
EXCLUDED="jax jaxlib flax optax orbax-checkpoint chex jax-cuda12-plugin jax-cuda12-pjrt jax-cuda13-plugin jax-cuda13-pjrt"
# Versions the resolver assumes for them (the GPU image had jax/jaxlib 0.11.2 in 2026-11; the others are the
# lowest that settings.ini allows, which every later release also satisfies for our dependants).
BCL_STUB_VERSIONS="${BCL_STUB_VERSIONS:-jax==0.11.2 jaxlib==0.11.2 flax==0.12.8 optax==0.2.8 orbax-checkpoint==0.12.8 chex==0.1.91}"
BCL_WHEEL_PYTHON="${BCL_WHEEL_PYTHON:-3.12}"
# Requirements left out of the offline set: jupyterlab (the notebook UI; papermill, nbdev and execnb run notebooks
# without it) with its server stack would add about 33 MB (jupyterlab 17 MB, babel 10 MB, jupyter-server, ...).
BCL_WHEEL_SKIP="${BCL_WHEEL_SKIP-jupyterlab}"
BCL_WHEEL_PLATFORMS="${BCL_WHEEL_PLATFORMS:-manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux2010_x86_64 manylinux1_x86_64 linux_x86_64}"
# Python packages of the GPU machines' image 'cuda' (KINDS.md, read 2026-11-17), minus the JAX family.
BCL_PREINSTALLED="${BCL_PREINSTALLED:-absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio
attrs botorch build certifi charset-normalizer click cloudpickle cmake colorama contourpy coverage cuda-bindings
cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
flatbuffers fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub
humanize hypothesis idna imageio iniconfig interface-meta jaxtyping jinja2 joblib kiwisolver lazy-loader lightning
lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson
ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba
numba-cuda numpy numpyro nvidia-ml-py onnx onnx-ir onnxruntime onnxscript opencv-python-headless opt-einsum
opt-einsum-fx optimistix packaging pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client
propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest
pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex
requests rich sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece
sentence-transformers setuptools shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio
torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions
typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp}"

# The documentation toolchain (`make docs`) and what only it needs: downloaded into DIR/docs, never carried (a GPU
# machine builds no documentation); without DIR/docs the install step leaves out the docs requirements.
BCL_DOCS_REQUIREMENTS="${BCL_DOCS_REQUIREMENTS:-sphinx myst-nb furo jupyter-server-mathjax}"
BCL_DOCS_ONLY="${BCL_DOCS_ONLY:-$BCL_DOCS_REQUIREMENTS accessible-pygments alabaster babel docutils imagesize jupyter-cache
jupyter-server jupyter-server-terminals terminado argon2-cffi argon2-cffi-bindings send2trash jupyter-events overrides
websocket-client myst-parser roman-numerals snowballstemmer sphinx-basic-ng sphinxcontrib-applehelp
sphinxcontrib-devhelp sphinxcontrib-htmlhelp sphinxcontrib-jsmath sphinxcontrib-qthelp sphinxcontrib-serializinghtml
sqlalchemy greenlet}"

# Carried even though the image has them: `pip install -e . --no-build-isolation` needs a setuptools newer than the
# 65.5 of a fresh Python 3.11 venv (it fails on pyproject.toml's dynamic entry-points).
ALWAYS_CARRY="setuptools"
SETUPTOOLS_MIN="setuptools>=70"

say() { printf '[install_offline] %s\n' "$*" >&2; }
die() { printf '[install_offline] error: %s\n' "$*" >&2; exit 1; }

# One requirement per line: settings.ini's requirements and dev_requirements, then the Dask runner's needs.
requirements() {
  local line
  for key in requirements dev_requirements; do
    line="$(sed -n "s/^${key}[[:space:]]*=[[:space:]]*//p" settings.ini)"
    [ -n "$line" ] || die "settings.ini has no '${key} =' line"
    tr ' ' '\n' <<<"$line" | sed '/^$/d'
  done
  printf '%s\n' 'dask[distributed]' 'dask-jobqueue'
}

# The requirements minus those named in BCL_WHEEL_SKIP: what the offline set holds and the install step asks for.
offline_requirements() {
  local req name
  { requirements; echo "$SETUPTOOLS_MIN"; } | while read -r req; do
    name="$(sed -E 's/[][<>=!~;, ].*//' <<<"$req" | normalise)"
    if in_list "$name" "$BCL_WHEEL_SKIP"; then say "left out: $req (BCL_WHEEL_SKIP)"; else echo "$req"; fi
  done
}

# Lower-case, '-' for runs of '-', '_' and '.' (PEP 503), for a distribution name or a wheel file's first field.
normalise() { tr 'A-Z' 'a-z' | sed -E 's/[-_.]+/-/g'; }

# Whether the normalised name $1 is among the names of the list $2.
in_list() { local names; names=" $(printf '%s\n' $2 | normalise | tr '\n' ' ') "; [[ "$names" == *" $1 "* ]]; }

download() {
  local dir="${1:-.whl}" py="${PYTHON:-}"
  [ -n "$py" ] || { [ -x .venv/bin/python ] && py=.venv/bin/python || py=python3; }
  work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT  # global: the trap runs after this function returns
  mkdir -p "$work/stubs" "$work/built" "$work/all"
  offline_requirements >"$work/requirements.txt"
  say "requirements: $(tr '\n' ' ' <"$work/requirements.txt")"

  # Empty stand-in wheels for the JAX family, pinned by a constraints file to their local version X+stub.
  "$py" - "$work/stubs" "$work/constraints.txt" $BCL_STUB_VERSIONS <<'EOF'
import sys, zipfile, base64, hashlib
folder, constraints, pins = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(constraints, "w") as out:
    for pin in pins:
        name, version = pin.split("==")
        version += "+stub"
        dist = name.replace("-", "_")
        info = f"{dist}-{version}.dist-info"
        files = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                 f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: bcl-stub\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
        record = "".join(f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},{len(text.encode())}\n"
                         for path, text in files.items()) + f"{info}/RECORD,,\n"
        with zipfile.ZipFile(f"{folder}/{dist}-{version}-py3-none-any.whl", "w") as wheel:
            for path, text in {**files, f"{info}/RECORD": record}.items():
                wheel.writestr(path, text)
        out.write(f"{name}=={version}\n")
EOF

  local platforms=() p
  for p in $BCL_WHEEL_PLATFORMS; do platforms+=(--platform "$p"); done
  local abi="cp${BCL_WHEEL_PYTHON/./}"
  say "resolving and downloading for CPython $BCL_WHEEL_PYTHON ($abi), platforms: $BCL_WHEEL_PLATFORMS"
  local attempt missing
  for attempt in 1 2 3 4 5 6; do
    if "$py" -m pip download --disable-pip-version-check --progress-bar off -q --only-binary=:all: \
         --python-version "$BCL_WHEEL_PYTHON" --implementation cp --abi "$abi" --abi abi3 --abi none "${platforms[@]}" \
         --find-links "$work/stubs" --find-links "$work/built" -c "$work/constraints.txt" \
         -d "$work/all" -r "$work/requirements.txt" 2>"$work/pip.err"; then
      break
    fi
    # A package with no wheel at all: build a (pure-Python) wheel from its source distribution, then try again.
    missing="$(sed -n 's/^ERROR: No matching distribution found for \([A-Za-z0-9_.-]*\).*/\1/p' "$work/pip.err" | head -1)"
    if [ -z "$missing" ] || [ "$attempt" = 6 ] || in_list "$(normalise <<<"$missing")" "$EXCLUDED"; then
      cat "$work/pip.err" >&2; die "pip download failed (see above)"
    fi
    say "no wheel of '$missing' for $abi: building one from its source distribution"
    "$py" -m pip wheel --disable-pip-version-check -q --no-deps --no-binary "$missing" -w "$work/built" "$missing" >&2 \
      || die "could not build a wheel of $missing"
    for f in "$work/built"/*.whl; do
      case "$f" in *-py3-none-any.whl|*-py2.py3-none-any.whl) ;; *) die "$f is not pure Python: it would not run on the target";; esac
    done
  done

  rm -rf "$dir/gpu" "$dir/preinstalled" "$dir/docs"
  mkdir -p "$dir/gpu" "$dir/preinstalled" "$dir/docs"
  local f name n_gpu=0 n_pre=0
  for f in "$work/all"/*.whl; do
    name="$(basename "$f" | cut -d- -f1 | normalise)"
    if in_list "$name" "$EXCLUDED"; then
      continue  # a stub
    elif in_list "$name" "$BCL_DOCS_ONLY"; then
      cp "$f" "$dir/docs/"
    elif in_list "$name" "$BCL_PREINSTALLED" && ! in_list "$name" "$ALWAYS_CARRY"; then
      cp "$f" "$dir/preinstalled/"; n_pre=$((n_pre + 1))
    else
      cp "$f" "$dir/gpu/"; n_gpu=$((n_gpu + 1))
    fi
  done
  ls "$work/all" | grep -iE '^(jax|jaxlib|flax|optax|orbax_checkpoint|chex)-' | grep -v '+stub' \
    && die "a JAX-family wheel was downloaded: the stubs did not hold" || true
  cp "$work/requirements.txt" "$dir/requirements.txt"
  say "$n_gpu wheels in $dir/gpu ($(du -sh "$dir/gpu" | cut -f1)); $n_pre in $dir/preinstalled ($(du -sh "$dir/preinstalled" | cut -f1)); the documentation toolchain in $dir/docs ($(du -sh "$dir/docs" | cut -f1), not carried)"
  say "largest in $dir/gpu:"; ls -S "$dir/gpu" | head -8 | while read -r f; do say "  $(du -h "$dir/gpu/$f" | cut -f1)  $f"; done
  local bytes; bytes="$(du -sb "$dir/gpu" | cut -f1)"
  if [ "$bytes" -gt $((40 * 1024 * 1024)) ]; then
    say "warning: $dir/gpu is over 40 MiB; with the working tree and data it may not fit the 64 MiB a call carries"
  fi
}

# nbdev's Quarto commands in the scripts folder of interpreter $1 replaced by stubs that stop at once (guard_nbdev.sh).
guard() { scripts/guard_nbdev.sh "$("$1" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')" >&2; }

install() {
  local dir="${1:-.whl}" py="${PYTHON:-python3}"
  command -v "$py" >/dev/null 2>&1 || [ -x "$py" ] || die "no interpreter '$py' (set PYTHON=...)"
  local links=() d
  for d in "$dir/gpu" "$dir/preinstalled" "$dir/docs" "$dir"; do
    if [ -d "$d" ] && ls "$d"/*.whl >/dev/null 2>&1; then links+=(--find-links "$d"); fi
  done
  [ "${#links[@]}" -gt 0 ] || die "no wheels under $dir (run 'make wheels' where PyPI can be reached, then carry $dir/gpu)"
  local version; version="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  say "installing into $("$py" -c 'import sys; print(sys.prefix)') (Python $version) from: ${links[*]}"
  local wheel_py; wheel_py="$(ls "$dir"/gpu/*-cp3*-*.whl 2>/dev/null | head -1 | sed -E 's/.*-cp3([0-9]+)-.*/3.\1/')"
  if [ -n "$wheel_py" ] && [ "$wheel_py" != "$version" ]; then
    say "warning: the compiled wheels are for Python $wheel_py but '$py' is Python $version"
  fi
  local jax; jax="$("$py" -c 'import importlib.metadata as m; print(m.version("jax"), m.version("jaxlib"))' 2>/dev/null)" \
    || die "'$py' has no jax: the offline set leaves out the JAX family on purpose (the target machine brings its own CUDA build)"
  say "kept: jax/jaxlib $jax (not reinstalled)"
  local reqs; reqs="$(mktemp)"; offline_requirements >"$reqs"
  if ! ls "$dir"/docs/*.whl >/dev/null 2>&1; then  # no documentation toolchain carried: do not ask for it
    local req kept; kept="$(mktemp)"
    while read -r req; do
      in_list "$(sed -E 's/[][<>=!~;, ].*//' <<<"$req" | normalise)" "$BCL_DOCS_REQUIREMENTS" || echo "$req"
    done <"$reqs" >"$kept"; mv "$kept" "$reqs"; say "left out: the documentation toolchain ($dir/docs not carried)"
  fi
  local status=0
  "$py" -m pip install --disable-pip-version-check --no-index "${links[@]}" -r "$reqs" >"$reqs.log" 2>&1 || status=$?
  grep -vE '^Requirement already satisfied' "$reqs.log" >&2 || true
  if [ "$status" != 0 ]; then
    say "pip could not install offline. A 'No matching distribution found for NAME' means neither the image nor the"
    say "carried wheels have a fitting NAME: carry $dir/preinstalled/NAME-*.whl too, or add NAME to the download."
    die "offline install failed"
  fi
  "$py" -m pip install --disable-pip-version-check -q --no-index --no-deps --no-build-isolation -e . >&2 \
    || die "pip install -e . failed"
  guard "$py"
  "$py" -c "import bcl, bcl.vi.svi, papermill, dask.distributed, blackjax, tensorflow_datasets, mlxtend; print('bcl', bcl.__version__, 'imports fine')"
}

case "${1:-}" in
  download) shift; download "$@" ;;
  install) shift; install "$@" ;;
  guard) guard "${PYTHON:-python3}" ;;
  requirements) offline_requirements ;;
  *) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
