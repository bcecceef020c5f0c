import type { Config } from 'jest'

const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/adapters', '<rootDir>/src'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  modulePathIgnorePatterns: ['<rootDir>/dist/'],
  testTimeout: 60_000,
  // Sandboxes and worker pools are heavy on a 2-core machine; two workers keep timing-sensitive limits honest.
  maxWorkers: 2,
}

export default config
