#!/usr/bin/env bash
# Fails when a file of the repository points outside it: at the documents the project was built
# from (the indexer contract and its numbered sections, the mxi-run spec, research notes) or at
# the workspace's shared folders. A user has only the repository, so docs/ states every rule.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern='indexer-contract|contract §|§ ?[0-9]|(^|[^[:alnum:]_.-])(shared|spec|research|context)/|/work/'
# Build folders hold absolute paths of their own; .git (a folder, or a file in a worktree) is
# not the project's text.
if hits=$(grep -rnIE --exclude-dir=.git --exclude=.git --exclude-dir='build*' \
            --exclude=check-self-contained.sh "$pattern" .); then
  echo "References outside the repository (state the rule in docs/ instead):" >&2
  echo "$hits" >&2
  exit 1
fi
echo "no references outside the repository"
