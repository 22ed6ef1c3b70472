# Sourced by hack/build-*.sh: `go build` with progress for many-minute cold builds.
# The caller defines log() and sets START (epoch seconds), GO_OUT (the output folder)
# and EXTRA_ARGS (tags, ldflags) before each run_build.

# go build -v names each package as it compiles it; count them against the
# dependency graph so a many-minute cold build says how far along it is.
# Lines that are not package paths (compiler errors) pass through.
progress() { # label total
  local label=$1 total=$2 n=0 last=0 line pct
  while IFS= read -r line; do
    if [[ "$line" =~ ^[A-Za-z0-9_.~/-]+$ ]]; then
      n=$((n + 1))
      pct=$((n * 100 / (total > 0 ? total : 1)))
      if ((pct >= last + 5)); then
        last=$pct
        log "$label: $n/$total packages compiled (${pct}%), $(($(date +%s) - START))s elapsed"
      fi
    else
      printf '%s\n' "$line" >&2
    fi
  done
}

run_build() { # label dir pkgs...
  local label=$1 dir=$2; shift 2
  local total
  total=$(cd "$dir" && go list -deps "$@" | wc -l)
  log "$label: building $* ($total packages in the graph; ones already in Go's build cache are skipped)"
  if ! (cd "$dir" && go build -v -trimpath "${EXTRA_ARGS[@]}" -o "$GO_OUT/" "$@" 2>&1) | progress "$label" "$total"; then
    log "error: building $label failed; see the compiler output above"
    exit 1
  fi
}
