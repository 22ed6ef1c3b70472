# Sourced by the build scripts that the tests and the CLI also call: one build at a time per
# output folder. Callers started together wait for the first and then find its result; two
# builds into one .partial folder would spoil both. Needs log() from the sourcing script.

# take_build_lock OUT: holds a lock on OUT.lock (fd 9) until the script exits.
take_build_lock() {
  mkdir -p "$(dirname "$1")"
  exec 9>"$1.lock"
  flock -n 9 || { log "waiting for another build into the same folder"; flock 9; }
}
