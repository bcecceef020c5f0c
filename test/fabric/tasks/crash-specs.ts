import type { TaskSpec } from '../../../src/fabric/tasks'

/** The crash test's tasks: each returns its index, after a few milliseconds of work so some are always in flight. */
export function crashTestSpecs(count: number): TaskSpec[] {
  return Array.from({ length: count }, (_, index) => ({
    request: { language: 'javascript', code: `const t = Date.now(); while (Date.now() - t < 2) {}; ${index}` },
    idempotencyKey: `crash-job-${index}`,
  }))
}
