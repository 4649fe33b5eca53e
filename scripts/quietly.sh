# Sourced by the setup scripts. `quietly WHAT COMMAND...` runs an install step with
# its output kept aside; when the step fails it says what it was installing, then
# shows the tool's own output (npm's error, say), so a failed setup never ends with
# only `make: *** [vscode-deps] Error 1`.
quietly() {
  local what=$1 log status=0
  shift
  log=$(mktemp)
  "$@" >"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    printf 'setup: installing %s failed: `%s` exited %d, saying:\n' "$what" "$*" "$status" >&2
    cat "$log" >&2
  fi
  rm -f "$log"
  return "$status"
}
