#!/usr/bin/env bash
# Builds the deployable Lambda package for execgate's function (deploy/lambda):
#   dist/lambda/execgate-lambda.zip  — handler deploy/lambda/handler.execute, Node.js 20 (x86_64)
# Deploy it with deploy/lambda/template.yaml (SAM) or serverless.yml; see docs/adapters/lambda.md.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build >/dev/null
OUT=dist/lambda
rm -rf "$OUT" && mkdir -p "$OUT/package"
cp -r dist/src dist/adapters dist/deploy "$OUT/package/"
mkdir -p "$OUT/package/config" && cp config/default.json "$OUT/package/config/"
node -e '
  const root = require("./package.json")
  // What the function loads: the core, its in-process adapters and their backends (no server, CLI or cloud SDKs).
  const keep = ["@pydantic/monty", "acorn", "acorn-walk", "ajv", "convict", "inversify", "node-cron", "pino", "pyodide", "quickjs-emscripten", "reflect-metadata", "typescript"]
  const dependencies = Object.fromEntries(keep.map((name) => [name, root.dependencies[name]]))
  require("fs").writeFileSync(process.argv[1], JSON.stringify({ name: "execgate-lambda", private: true, version: root.version, dependencies }, null, 2))
' "$OUT/package/package.json"
# Linux x64 binaries whatever the build machine (monty ships one native package per platform).
(cd "$OUT/package" && npm install --omit=dev --os=linux --cpu=x64 --libc=glibc --no-audit --no-fund --loglevel=error >/dev/null)
(cd "$OUT/package" && python3 -m zipfile -c ../execgate-lambda.zip .)
echo "[execgate] $(du -h "$OUT/execgate-lambda.zip" | cut -f1) $OUT/execgate-lambda.zip (handler: deploy/lambda/handler.execute)"
