# Sourced by the scripts: where caches live, and tools outside the default PATH.
export HOLDFAST_CACHE="${HOLDFAST_CACHE:-$HOME/.cache/holdfast}"
export CCACHE_DIR="${CCACHE_DIR:-$HOLDFAST_CACHE/ccache}"
export CCACHE_BASEDIR="$PWD"
# Hits across clones at different paths (a CI checkout, a worktree): without
# this, ccache hashes the working directory of every -g compile.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
# promtool (scripts/setup.sh fetches it) for the metrics format test.
export HOLDFAST_PROMTOOL="${HOLDFAST_PROMTOOL:-$HOLDFAST_CACHE/promtool/promtool}"
# Machines of this kind ship Go in /usr/local/go (the Go client of the
# integration tests and the benchmark peer need Go >= 1.22).
if [[ -x /usr/local/go/bin/go ]]; then export PATH="$PATH:/usr/local/go/bin"; fi
