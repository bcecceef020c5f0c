'use strict'
// A Jest reporter that counts every test not run (skipped, todo, disabled) and names them. With
// EXECGATE_TEST_FAIL_ON_SKIP=1 (`npm run test:ci`), a skipped test not on the allow-list (test/setup/allowed-skips.json:
// a pattern of the test's full name and why the skip is deliberate) fails the run: a missing component must fail with
// the command that installs it, never drop its tests quietly. A run narrowed by `-t` skips by request: counted, never
// failed. Plain JavaScript: Jest loads reporters without the TypeScript transform.
const fs = require('node:fs')
const path = require('node:path')

const NOT_RUN = new Set(['pending', 'skipped', 'todo', 'disabled'])

class SkipReporter {
  constructor(globalConfig) {
    this.globalConfig = globalConfig
    this.error = undefined
    const file = path.join(__dirname, 'allowed-skips.json')
    this.allowed = JSON.parse(fs.readFileSync(file, 'utf8')).map((entry) => ({ ...entry, pattern: new RegExp(entry.pattern) }))
  }

  onRunComplete(_contexts, results) {
    const skipped = []
    for (const file of results.testResults) {
      if (file.skipped)
        skipped.push({ name: `${path.relative(process.cwd(), file.testFilePath)} (the whole file)`, file: file.testFilePath })
      for (const test of file.testResults)
        if (NOT_RUN.has(test.status)) skipped.push({ name: `${path.relative(process.cwd(), file.testFilePath)} › ${test.fullName}` })
    }
    const narrowed = Boolean(this.globalConfig.testNamePattern)
    const unexpected = skipped.filter((item) => !this.allowed.some((entry) => entry.pattern.test(item.name)))
    const allowedCount = skipped.length - unexpected.length
    process.stdout.write(
      `\nskipped tests: ${skipped.length} (${allowedCount} on the allow-list ` +
        `test/setup/allowed-skips.json${narrowed ? ', run narrowed by -t' : ''})\n`,
    )
    if (!narrowed) for (const item of unexpected.slice(0, 50)) process.stdout.write(`  skipped, not allowed: ${item.name}\n`)
    if (!narrowed && unexpected.length > 50) process.stdout.write(`  … and ${unexpected.length - 50} more\n`)
    if (process.env.EXECGATE_TEST_FAIL_ON_SKIP === '1' && !narrowed && unexpected.length) {
      this.error = new Error(`${unexpected.length} test(s) were skipped without being on test/setup/allowed-skips.json`)
    }
  }

  getLastError() {
    return this.error
  }
}

module.exports = SkipReporter
