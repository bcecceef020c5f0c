import type { Config } from 'jest'

// The AWS SDK warns once per process that its 2027 releases need Node 22; on Node 20 that is 30 lines in every test
// file's output that uses a client. Test workers inherit this; a user's own process still gets the warning.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'

const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/adapters', '<rootDir>/src'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  modulePathIgnorePatterns: ['<rootDir>/dist/'],
  testTimeout: 60_000,
  // A temp fabric.dataDir for each test file, so no test writes the ledger's `.execgate/` into the checkout.
  setupFilesAfterEnv: ['<rootDir>/test/setup/temp-data-dir.ts'],
  // Sandboxes and interpreter pools are heavy on a 2-core machine (a cold pyodide takes a core for seconds): test
  // files run one at a time, so one file's warm-ups never eat another's time limits.
  maxWorkers: 1,
  // Counts tests that did not run; `npm run test:ci` fails on one not on test/setup/allowed-skips.json.
  reporters: ['default', '<rootDir>/test/setup/skip-reporter.js'],
}

export default config
