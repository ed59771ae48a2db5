# Shared prelude of the command-line test scripts (sourced, not run):
# the binary, a scratch directory removed on exit (KEEP=1 keeps it), the MPI
# launcher as an array, and ok/bad counters closed by `finish NAME`.
set -u
BIN=${AXONN_BIN:?AXONN_BIN must name the axonn binary}
FIX=${AXONN_TEST_DATA:-}
export OMP_NUM_THREADS=1
W=$(mktemp -d)
# Open MPI's session files (each launch's shared-memory segments and its
# daemon's sockets) go under a directory of this script's own, not the
# machine's /tmp/ompi.*: tests that run side by side share nothing there
# (docs/testing.md, "Single-rank runs")
export OMPI_MCA_orte_tmpdir_base
OMPI_MCA_orte_tmpdir_base=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"; rm -rf "$OMPI_MCA_orte_tmpdir_base"' EXIT
cd "$W" || exit 1

MPIRUN=${AXONN_MPIEXEC:-mpiexec}
read -r -a MPI <<<"$MPIRUN"
if "${MPI[0]}" --version 2>/dev/null | grep -qE "Open MPI|OpenRTE"; then
  [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

pass=0; fail=0
ok()  { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }
# run NAME NP ARGS...: axonn ARGS on NP ranks (1: no launcher), output in $W/NAME.log; a failure is reported
run() {
  local name=$1 np=$2; shift 2
  if [ "$np" = 1 ]; then "$BIN" "$@" >"$W/$name.log" 2>&1; else timeout 300 "${MPI[@]}" -np "$np" "$BIN" "$@" >"$W/$name.log" 2>&1; fi
  local rc=$?
  [ $rc = 0 ] || { bad "$name: exit $rc"; tail -n 5 "$W/$name.log" | sed 's/^/       | /'; }
  return $rc
}
finish() { echo "$1: $pass passed, $fail failed"; [ "$fail" = 0 ]; exit $?; }
