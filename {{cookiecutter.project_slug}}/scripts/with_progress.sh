#!/bin/sh
# Run a quiet, slow command (pip install --quiet ...) with a line when it starts, one every PROGRESS_EVERY_S seconds
# (default 20) while it runs, and one when it ends, so an install is never silent for long (scripts/install.sh).
# Usage: scripts/with_progress.sh "what is being done" command [args...]
what=$1
shift
every=${PROGRESS_EVERY_S:-20}
start=$(date +%s)
echo "$what ..."
(
  trap 'kill "$nap" 2>/dev/null; exit 0' TERM  # its sleep goes too: nothing keeps the output open after the command
  while :; do
    sleep "$every" &
    nap=$!
    wait "$nap"
    echo "  ... still $what ($(( $(date +%s) - start )) s)"
  done
) &
ticker=$!
"$@"
status=$?
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
if [ "$status" -eq 0 ]; then
  echo "$what: done in $(( $(date +%s) - start )) s"
else
  echo "$what: failed (exit $status) after $(( $(date +%s) - start )) s"
fi
exit "$status"
