#!/usr/bin/env bash
# Rebuild the lab's vendored browser assets (src/ragmeter/lab/static/vendor/) from the npm
# registry. Run by hand when upgrading them; nothing fetches assets at run time.
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/src/ragmeter/lab/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm init -y >/dev/null
npm install --silent htmx.org@2.0.11 vega@6.4.0 vega-lite@6.4.3 vega-embed@7.3.0 \
    vega-interpreter@2.3.2 esbuild
cp node_modules/htmx.org/dist/htmx.min.js "$out/"
cp node_modules/vega/build/vega.min.js "$out/"
cp node_modules/vega-lite/build/vega-lite.min.js "$out/"
cp node_modules/vega-embed/build/vega-embed.min.js "$out/"
# Vega evaluates expressions with `new Function` unless given an interpreter: the lab's
# Content-Security-Policy forbids eval, so the interpreter ships as a small IIFE bundle.
echo 'export { expressionInterpreter } from "vega-interpreter";' > entry.js
npx esbuild entry.js --bundle --minify --format=iife --global-name=vegaInterpreter \
    --outfile="$out/vega-interpreter.min.js"
echo "assets written to $out; update LICENSES.txt if a version changed"
