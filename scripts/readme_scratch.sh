# Sourced by the scripts/readme_*.sh that run README's commands: strict mode, ROOT (the repository), a scratch
# folder removed on exit and made the current folder, and a fresh ledger in it (PRIVGP_LEDGER), so that README's
# outputs come from a ledger that has seen no release before.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[1]}")/.." && pwd)"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
cd "$SCRATCH"
export PRIVGP_LEDGER="$SCRATCH/ledger.sqlite"
