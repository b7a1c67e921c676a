# Shared by run.sh and devices.sh (sourced from hack/admitvec).
# build_releases BINDIR [release ...]: sets releases (default: every release module) and puts
# each release's harness binary at BINDIR/<release>, copied from $BINDIR when it has one, else built.
build_releases() {
  local out=$1
  shift
  releases=("$@")
  if [ ${#releases[@]} -eq 0 ]; then
    mapfile -t releases < <(ls -d v1.* | sort -V)
  fi
  mkdir -p "$out"
  local rel
  for rel in "${releases[@]}"; do
    if [ -n "${BINDIR:-}" ] && [ -x "$BINDIR/$rel" ]; then
      cp "$BINDIR/$rel" "$out/$rel"
    else
      echo "building $rel" >&2
      # A release needing a newer Go than the project's names it in its go.mod's toolchain line.
      local tc
      tc=$(sed -n 's/^toolchain //p' "$rel/go.mod")
      (cd "$rel" && GOTOOLCHAIN=${tc:-$(go env GOTOOLCHAIN)} go build -o "$out/$rel" .)
    fi
  done
}
