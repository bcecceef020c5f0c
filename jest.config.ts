import type { Config } from 'jest'

const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/adapters', '<rootDir>/src'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  modulePathIgnorePatterns: ['<rootDir>/dist/'],
  testTimeout: 60_000,
  // Sandboxes and interpreter pools are heavy on a 2-core machine (a cold pyodide takes a core for seconds): test
  // files run one at a time, so one file's warm-ups never eat another's time limits.
  maxWorkers: 1,
}

export default config
