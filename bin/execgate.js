#!/usr/bin/env node
'use strict'
const path = require('node:path')
const fs = require('node:fs')

const cli = path.join(__dirname, '..', 'dist', 'src', 'cli', 'index.js')
if (!fs.existsSync(cli)) {
  process.stderr.write('[execgate] the CLI is not built yet: run `npm install` (it builds dist/) or `npm run build`\n')
  process.exit(2)
}
require(cli)
  .main(process.argv, process.stdout, (code) => {
    process.exitCode = code
  })
  .then((code) => {
    process.exitCode = code
  })
