#!/usr/bin/env bash
# Fails when a tracked file numbers the work periods or the runs the project was made in
# ("Session 12", "session 4's", "sessions 10 and 12", "call 3", "calls 1-6", "device call",
# "s22-call14", "session19-...") or when docs/performance.md grows past MAX_PERF_LINES. The
# repository says what the code does, how fast and how to reproduce it; how it got there is in
# git, and the performance page is updated in place, not appended to.
#   tools/check-history.sh [ROOT]    # ROOT: the tree to check (default: this repository)
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
max_perf_lines=450
# A number after "session"/"call" (singular or plural, with or without a space or dash), "device
# call(s)", and the short file-name form; ordinary English ("a call of the kernel", "calls it
# twice", "the session's machine") has no number there and passes.
pattern='\b[Ss]essions?[ _-]?[0-9]|\b[Cc]alls? [0-9]|\b[Dd]evice[ -]calls?\b|\bs[0-9]+-calls?[0-9]'
self=tools/check-history.sh  # holds the pattern and its examples

# Tracked files where this is a git checkout (a worktree's .git is a file), every file but .git
# and build folders otherwise.
list_files() {
  if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    git ls-files -z -- . ":!$self" | while IFS= read -r -d '' f; do
      [ -f "$f" ] && printf '%s\0' "$f"
    done
  else
    find . \( -name .git -o -name 'build*' \) -prune -o -type f ! -path "./$self" -print0
  fi
}

status=0
hits=$(list_files | xargs -0 -r grep -nIE -- "$pattern" || true)
if [ -n "$hits" ]; then
  echo "Work periods or calls numbered (say what the code does and how it was measured:" >&2
  echo "benchmark, shape, GPU, date; the history belongs in git):" >&2
  echo "$hits" >&2
  status=1
fi
if [ -f docs/performance.md ]; then
  lines=$(wc -l < docs/performance.md)
  if [ "$lines" -gt "$max_perf_lines" ]; then
    echo "docs/performance.md has $lines lines, more than $max_perf_lines: update its tables in" \
      "place instead of appending runs" >&2
    status=1
  fi
fi
[ $status -eq 0 ] && echo "no numbered work periods or calls; docs/performance.md within $max_perf_lines lines"
exit $status
