#!/usr/bin/env bash
# One lease of a lent GPU machine (no network): install bcl offline, then run the named phases, writing what should
# come back under OUT (at most 8 files). Run from the repository root with .whl/gpu carried (see
# scripts/install_offline.sh and benchmarks/README.md "On a lent GPU machine").
#
#   benchmarks/gpu_session.sh OUT install steps cells       # per-step figures, then table cells through the batch
#   benchmarks/gpu_session.sh OUT install tests             # the test suite on the GPU
#
# Phases (each bounded by its own timeout so that one call of the device tool stays under its 10 minutes):
#   install      scripts/install_offline.sh install .whl (the machine's CUDA JAX is kept)        -> OUT/install.log
#   steps        benchmarks/gpu.py: every method (or BCL_GPU_METHODS) on the FCNN, the MNIST CNN and the 6-layer CNN (or
#                BCL_GPU_MODELS), 5 seeds, beside the CPU figures of cpu_quick_collapsed.jsonl; BCL_GPU_JOBS (4)
#                measurements compile side by side and time one at a time                    -> OUT/gpu_steps.jsonl
#   concurrent   benchmarks/gpu.py --concurrent BCL_GPU_CONCURRENT (4): each method of BCL_GPU_METHODS (fine-tuning,
#                P-G-VCL, L-G-SFSVI, L-GM-SFSVI) on BCL_GPU_MODELS (the MNIST CNN, the 6-layer CNN) alone, then as that
#                many processes side by side on the GPU: the throughput gain the projection (--project) charges cells
#                run at once with                                                     -> OUT/gpu_concurrent.jsonl
#   cells        bcl-table faa --profile offline --schedule BCL_GPU_SCHEDULE (epochs; or matched, steps, steps-matched)
#                on BCL_GPU_CELLS, BCL_GPU_WORKERS workers on the GPU; a line per cell -> OUT/cells.jsonl, their
#                numbers.json and executed notebooks -> OUT/cells.tar.gz. The matched schedule's CNN VCL cells:
#                BCL_GPU_SCHEDULE=matched BCL_GPU_CELLS="*-mnist-cnn/*-vcl *-mnist-cnn/ewc *-mnist-cnn/si"
#                BCL_GPU_TABLE_ARGS adds arguments of the batch (e.g. "--kl-weighting paper" for S-FSVI's KL weight as
#                the paper's text has it), with BCL_GPU_TABLE_OUT (a results folder of their own, e.g. /tmp/gpu-kl-paper)
#                and BCL_GPU_TABLE_SUFFIX (e.g. -kl-paper: OUT/cells-steps-matched-kl-paper.jsonl)
#   cells:SCHEDULE  the same with that schedule and the cells of BCL_GPU_CELLS_<SCHEDULE, - as _> (else BCL_GPU_CELLS),
#                so one call can run several schedules; timeout BCL_GPU_CELLS_S_<SCHEDULE> (else BCL_GPU_CELLS_S)
#                                                                  -> OUT/cells-SCHEDULE.jsonl, OUT/cells-SCHEDULE.tar.gz
#   pending      the table cells the reproduction protocol still runs (experiments/pending_cells.py --cheapest-first,
#                verdicts BCL_GPU_PENDING_STATUS, default "needs a GPU"): one batch a group of seeds, BCL_GPU_WORKERS
#                (4) workers on the GPU, into results/gpu-pending-<regime>-<first>-<last> (a later call on the still-warm
#                machine resumes there); timeout BCL_GPU_PENDING_S (540)
#                                          -> OUT/pending.jsonl (a line per finished cell), OUT/pending.tar.gz
#   smoke        bcl-table faa --profile smoke --subset representative (mock data, one cell per column and per
#                method) on the GPU                                                              -> OUT/smoke.jsonl
#   notebooks    the notebooks matching BCL_GPU_NOTEBOOKS (a pytest -k expression)           -> OUT/notebooks.log
#   determinism  one cell twice without and twice with --xla_gpu_deterministic_ops=true          -> OUT/determinism.json
#   tests        pytest tests (notebooks included), BCL_GPU_TEST_PROCS (8) processes, a line per test as it ends, no GPU
#                memory preallocation -> OUT/tests.log; each failure's traceback as it happens -> OUT/tests_failed.log
#   vis:SEQUENCE the visualisation of cisplit2diris or disinusoid with the paper's settings (BCL_GPU_VIS_BASE=demo for
#                the demo's, a dry run) and BCL_GPU_VIS_CHAINS (64); BCL_GPU_VIS_VARIANT adds a parameter file after the
#                base, e.g. paper_hmc_final (the paper's HMC protocol: 64 chains, 100 NUTS steps, final states; on DI
#                Sinusoid about 3.5 h on a 2-core CPU), run as results/gpu_SEQUENCE-VARIANT
#                HMC chains, figures and tables under results/gpu_SEQUENCE; timeout BCL_GPU_VIS_S (300). Each HMC task is
#                kept as it ends (run_hmc_sequence's store), and each kept task comes back, so a run cut by its timeout
#                resumes in a later call that carries results/gpu_SEQUENCE/hmc_tasks (copy the files back there)
#                          -> OUT/vis-SEQUENCE.log, OUT/vis-SEQUENCE.tar.gz (numbers, figures, tables), OUT/hmc-SEQUENCE-task*.pkl
#   data         link the carried Fashion-MNIST IDX files (data/offline/fashion-mnist, `make gpu-data`)
#                to /usr/share/datasets/fashion-mnist, where bcl looks for them. Together with the wheels they exceed
#                what one call may carry (64 MiB), so carry them in a second call that follows the install within the
#                machine's idle time:  gpu_session.sh OUT data tests   with carry [data/offline/fashion-mnist]
#
# BCL_GPU_DEADLINE_S (seconds after the start, default 560) clips every phase's timeout so that the whole script ends
# inside one call of the device tool with time left to pack what comes back.
set -uo pipefail
OUT=${1:?usage: benchmarks/gpu_session.sh OUT PHASE...}; shift
DEADLINE=${BCL_GPU_DEADLINE_S:-560}
within() {  # within SECONDS: the phase's own timeout, clipped to what is left before the deadline less 20 s to pack
  local left=$((DEADLINE - SECONDS - 20)); [ "$left" -lt "$1" ] && echo $((left > 1 ? left : 1)) || echo "$1"
}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 TQDM_DISABLE=1
CELLS=${BCL_GPU_CELLS:-"ci-mnist-fcnn/p-g-vcl ci-mnist-fcnn/l-g-vcl di-mnist-fcnn/l-gm-sfsvi ci-mnist-cnn/er ci-mnist-cnn/l-g-sfsvi"}
nvidia-smi -L || true

cell_lines() {  # numbers.json of every cell under $1 -> one JSON line each (cell, accuracy, timings, device)
  "$PY" - "$1" <<'PY'
import json, sys
from pathlib import Path
for path in sorted(Path(sys.argv[1]).glob("*/*/numbers.json")):
    n = json.loads(path.read_text())
    p = n["provenance"]
    print(json.dumps({"cell": f"{n['column']}/{n['method']}", "final_average_accuracy": n["final_average_accuracy"],
                      "test_accuracy": n["test_accuracy"], "timings": n["timings"], "optimiser_steps": n["optimiser_steps"],
                      "devices": p.get("devices"), "backend": p.get("backend"), "jax": p["packages"].get("jax"),
                      "xla_flags": p.get("xla_flags"), "bcl_code": p.get("bcl_code"), "commit": p["git"]["commit"]}))
PY
}

for phase in "$@"; do
  echo "=== $phase $(date +%T)"
  case $phase in
    install)
      # The resolver's install fails where the image's packages are older than settings.ini's floors (pandas 3.1.1,
      # ...); then the carried wheels go in without dependency resolution and the image's versions are kept.
      if ! PYTHON=$PY scripts/install_offline.sh install .whl >"$OUT/install.log" 2>&1; then
        grep "No matching distribution" "$OUT/install.log"; echo "install: falling back to --no-deps"
        { "$PY" -m pip install -q --no-index --no-deps .whl/gpu/*.whl &&
          "$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e .; } >>"$OUT/install.log" 2>&1 ||
          { tail -20 "$OUT/install.log"; exit 1; }
        PYTHON=$PY scripts/install_offline.sh guard >>"$OUT/install.log" 2>&1
      fi
      "$PY" -c "import bcl, bcl.vi.svi, papermill, dask.distributed, blackjax, tensorflow_datasets, mlxtend, jax, pandas, numpy
print('bcl', bcl.__version__, 'jax', jax.__version__, jax.devices(), 'pandas', pandas.__version__, 'numpy', numpy.__version__)" ||
        exit 1 ;;
    steps)
      budget=$(within "${BCL_GPU_STEPS_S:-300}")
      timeout $((budget + 15)) "$PY" benchmarks/gpu.py --models ${BCL_GPU_MODELS:-fcnn256 cnn_mnist cnn6} \
        ${BCL_GPU_METHODS:+--methods $BCL_GPU_METHODS} --seeds 5 --steps 20 --jobs "${BCL_GPU_JOBS:-4}" --budget-s "$budget" \
        --repeats 2 --component-noise collapsed --cpu-reference benchmarks/results/cpu_quick_collapsed.jsonl \
        --out "$OUT/gpu_steps.jsonl" >/dev/null 2>"$OUT/gpu_steps.err"
      echo "steps: exit $?, $(wc -l <"$OUT/gpu_steps.jsonl" 2>/dev/null || echo 0) lines" ;;
    concurrent)
      budget=$(within "${BCL_GPU_CONCURRENT_S:-240}")
      timeout $((budget + 15)) "$PY" benchmarks/gpu.py --models ${BCL_GPU_MODELS:-cnn_mnist cnn6} \
        --methods ${BCL_GPU_METHODS:-finetuning P-G-VCL L-G-SFSVI L-GM-SFSVI} --seeds 5 --steps 20 --repeats 2 \
        --concurrent "${BCL_GPU_CONCURRENT:-4}" --budget-s "$budget" --component-noise collapsed \
        --out "$OUT/gpu_concurrent.jsonl" >/dev/null 2>"$OUT/gpu_concurrent.err"
      echo "concurrent: exit $?, $(grep -c gpu_concurrent "$OUT/gpu_concurrent.jsonl" 2>/dev/null || echo 0) pairs" ;;
    cells|cells:*)
      schedule=${phase#cells:}; [ "$schedule" = cells ] && schedule=${BCL_GPU_SCHEDULE:-epochs}
      var=BCL_GPU_CELLS_${schedule//-/_}; cells=${!var:-$CELLS}   # e.g. BCL_GPU_CELLS_steps_matched for cells:steps-matched
      [ "$schedule" = epochs ] && run=offline || run=offline-$schedule
      name=cells${run#offline}
      cap=BCL_GPU_CELLS_S_${schedule//-/_}; cap=${!cap:-${BCL_GPU_CELLS_S:-270}}   # this schedule's own timeout, if set
      table=${BCL_GPU_TABLE_OUT:-/tmp/gpu-table}; name=$name${BCL_GPU_TABLE_SUFFIX:-}
      # shellcheck disable=SC2086
      timeout "$(within "$cap")" "$PY" experiments/run_table.py faa --profile offline --out "$table" \
        --schedule "$schedule" --workers "${BCL_GPU_WORKERS:-1}" --cells $cells ${BCL_GPU_TABLE_ARGS:-} 2>&1 \
        | grep -v "WARNING\|warn" | tail -8
      cell_lines "$table/$run" >"$OUT/$name.jsonl"; echo "$name: $(wc -l <"$OUT/$name.jsonl") done"
      (cd "$table" && tar czf "$OUT/$name.tar.gz" "$run"/*/*/numbers.json "$run"/*/*/*.ipynb) ;;
    pending)
      "$PY" experiments/pending_cells.py --json --cheapest-first --status "${BCL_GPU_PENDING_STATUS:-needs a GPU}" \
        >/tmp/pending.jsonl || exit 1
      : >"$OUT/pending.jsonl"
      while IFS=$'\t' read -r regime first seeds cells; do
        dir=results/gpu-pending-$regime-$first-$((first + seeds - 1))
        [ "$regime" = epochs ] && run=offline || run=offline-$regime
        echo "pending: $regime seeds $first-$((first + seeds - 1)): $cells"
        # shellcheck disable=SC2086
        timeout "$(within "${BCL_GPU_PENDING_S:-540}")" "$PY" experiments/run_table.py faa --profile offline --out "$dir" \
          --schedule "$regime" --first-seed "$first" --seeds "$seeds" --workers "${BCL_GPU_WORKERS:-4}" --cells $cells \
          2>&1 | grep -v "WARNING\|warn" | tail -4
        cell_lines "$dir/$run" >>"$OUT/pending.jsonl"
      done < <("$PY" -c 'import json, sys
for line in open(sys.argv[1]):
    g = json.loads(line)
    print(g["regime"], g["first"], g["seeds"], " ".join(g["cells"]), sep="\t")' /tmp/pending.jsonl)
      echo "pending: $(wc -l <"$OUT/pending.jsonl") cells done"
      (shopt -s nullglob; files=(results/gpu-pending-*/*/*/*/numbers.json results/gpu-pending-*/*/*/*/*.ipynb)
       [ ${#files[@]} -gt 0 ] && tar czf "$OUT/pending.tar.gz" "${files[@]}") ;;
    smoke)
      timeout "$(within "${BCL_GPU_SMOKE_S:-300}")" "$PY" experiments/run_table.py faa --profile smoke --subset representative \
        --out /tmp/gpu-smoke --workers "${BCL_GPU_WORKERS:-1}" 2>&1 | grep -v "WARNING\|warn" | tail -4
      cell_lines /tmp/gpu-smoke/smoke >"$OUT/smoke.jsonl"; echo "smoke: $(wc -l <"$OUT/smoke.jsonl") cells done" ;;
    notebooks)
      # the notebooks named in BCL_GPU_NOTEBOOKS (pytest -k expression) under tests/test_notebooks.py; several kernels
      # share the GPU, so none may preallocate its default 75 % of the memory
      # -v: a line per notebook as it ends, so that a phase cut by its timeout still names what passed and failed
      XLA_PYTHON_CLIENT_PREALLOCATE=false BCL_TEST_FAILURE_LOG="$OUT/notebooks_failed.log" \
        timeout "$(within "${BCL_GPU_NOTEBOOKS_S:-120}")" "$PY" -m pytest tests/test_notebooks.py -v -rfE -n 5 -p no:cacheprovider \
        -k "${BCL_GPU_NOTEBOOKS:-gaussian}" >"$OUT/notebooks.log" 2>&1
      echo "notebooks: exit $?"; grep -E "PASSED|FAILED|ERROR" "$OUT/notebooks.log" | tail -20 ;;
    determinism)
      cell=${BCL_GPU_DET_CELL:-ci-mnist-fcnn/p-g-vcl}
      for flags in "" "--xla_gpu_deterministic_ops=true"; do for run in 1 2; do
        XLA_FLAGS="$flags" timeout "$(within "${BCL_GPU_DET_S:-120}")" "$PY" experiments/run_table.py faa --profile offline --cells "$cell" \
          --out "/tmp/det-${flags:+det}-$run" >/dev/null 2>&1
      done; done
      "$PY" - "$cell" >"$OUT/determinism.json" <<'PY'
import json, sys
cell = sys.argv[1]
def load(folder):
    try:
        return json.load(open(f"{folder}/offline/{cell}/numbers.json"))
    except OSError:
        return None
runs = {name: load(f"/tmp/det-{name}") for name in ("-1", "-2", "det-1", "det-2")}
same = lambda a, b: a is not None and b is not None and a["test_accuracy"] == b["test_accuracy"] and a["test_nll"] == b["test_nll"]
print(json.dumps({"cell": cell, "identical_default": same(runs["-1"], runs["-2"]),
                  "identical_deterministic": same(runs["det-1"], runs["det-2"]),
                  "default_vs_deterministic": same(runs["-1"], runs["det-1"]),
                  "run_s": {k: (v or {}).get("timings", {}).get("run_s") for k, v in runs.items()},
                  "accuracy": {k: (v or {}).get("final_average_accuracy", {}).get("per_seed") for k, v in runs.items()}}))
PY
      cat "$OUT/determinism.json" ;;
    vis:*)
      seq=${phase#vis:}; run=gpu_$seq${BCL_GPU_VIS_VARIANT:+-$BCL_GPU_VIS_VARIANT}; variant=/tmp/gpu-vis-$seq.yaml
      printf 'hmc_chains: %s\nfigures_folder: null\ntables_folder: null\n' "${BCL_GPU_VIS_CHAINS:-64}" >"$variant"
      timeout "$(within "${BCL_GPU_VIS_S:-300}")" "$PY" experiments/run_visualisation.py "${BCL_GPU_VIS_BASE:-paper}_$seq" \
        ${BCL_GPU_VIS_VARIANT:+"$BCL_GPU_VIS_VARIANT"} "$variant" \
        --run "$run" >"$OUT/vis-$seq.log" 2>&1
      echo "vis:$seq: exit $?"; grep -v "WARNING\|warn" "$OUT/vis-$seq.log" | tail -6
      [ -d "results/$run" ] && (cd results && tar czf "$OUT/vis-$seq.tar.gz" --exclude hmc_tasks "$run")
      for f in "results/$run"/hmc_tasks/*.pkl; do   # a file over 16 MB cannot come back
        [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 16000000 ] && cp "$f" "$OUT/hmc-$seq-$(basename "$f")"
      done; ls "$OUT" | grep -c "^hmc-$seq-" | sed "s/^/vis:$seq: HMC tasks kept: /" ;;
    data)
      src=$PWD/data/offline/fashion-mnist dst=/usr/share/datasets/fashion-mnist
      if [ -d "$dst" ]; then echo "data: $dst is there"
      elif [ -d "$src" ]; then mkdir -p "$(dirname "$dst")" && ln -s "$src" "$dst" && echo "data: $dst -> $src"
      else echo "data: neither $dst nor $src (carry data/offline/fashion-mnist)"; fi ;;
    tests)
      XLA_PYTHON_CLIENT_PREALLOCATE=false BCL_TEST_FAILURE_LOG="$OUT/tests_failed.log" \
        timeout "$(within "${BCL_GPU_TESTS_S:-480}")" "$PY" -m pytest tests -v -rfEs --durations=20 -n "${BCL_GPU_TEST_PROCS:-8}" --dist worksteal \
        -p no:cacheprovider >"$OUT/tests.log" 2>&1
      echo "tests: exit $?"; tail -15 "$OUT/tests.log" ;;
    *) echo "unknown phase $phase"; exit 2 ;;
  esac
done
echo "=== end $(date +%T)"
