# Project-local npm installs, shared by scripts/install-pi and scripts/bench-compact (sourced,
# not run; the caller sets ROOT to the repository and works from it). Everything goes under
# .deps/ (git-ignored); nothing is installed globally; each step does nothing when its package is
# already there at the pinned version. Needs node and npm.

# The project-local Node, for what needs a newer one than the system's (pinned; any >= 22.19 works).
NODE_VERSION="22.22.0"
NODE_PREFIX=".deps/node"

# The version of the package installed under a prefix ("" when absent).
installed_version() { # prefix package
    local manifest="$1/node_modules/$2/package.json"
    [ -f "$manifest" ] || return 0
    node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' "$ROOT/$manifest" 2>/dev/null || true
}

# Install package@version into prefix unless it is there already.
ensure() { # prefix package version
    if [ "$(installed_version "$1" "$2")" = "$3" ]; then
        echo "$2@$3 already installed in $1"
        return 0
    fi
    mkdir -p "$1"
    echo "installing $2@$3 into $1"
    npm install --prefix "$1" --no-audit --no-fund --save-exact "$2@$3"
    [ "$(installed_version "$1" "$2")" = "$3" ] || { echo "$(basename "$0"): $2@$3 did not install as expected" >&2; exit 1; }
}

# The project-local Node (npm's node-<os>-<arch>), installed on first need; prints its binary.
project_node() {
    local package="node-$(node -p 'process.platform + "-" + process.arch')"
    ensure "$NODE_PREFIX" "$package" "$NODE_VERSION" >&2
    local bin="$ROOT/$NODE_PREFIX/node_modules/$package/bin/node"
    [ -x "$bin" ] || { echo "$(basename "$0"): $package has no bin/node" >&2; exit 1; }
    echo "$bin"
}
