import type { Plan } from '../../src/fabric/plans'
import { DEFAULT_RETRY_POLICY, type Task } from '../../src/fabric/tasks'

/**
 * Tasks and plans as a store holds them, written straight into a store by tests that play another process (or set
 * up an order to check): every field a stored one has, the given ones changed.
 */

export function storedTask(fields: Pick<Task, 'id'> & Partial<Task>, at = new Date().toISOString()): Task {
  return {
    tenant: 'acme',
    state: 'PENDING',
    request: { language: 'javascript', code: '1' },
    priority: 0,
    requirements: {},
    dependencies: [],
    retryPolicy: { ...DEFAULT_RETRY_POLICY },
    lane: 'batch',
    attempts: 0,
    ready: true,
    notBefore: 0,
    reason: 'submitted',
    createdAt: at,
    updatedAt: at,
    ...fields,
  }
}

/** A RUNNING plan at its first version, nothing revised. */
export function storedPlan(id: string, at = new Date().toISOString()): Plan {
  return {
    id,
    tenant: 'acme',
    state: 'RUNNING',
    reason: 'submitted',
    version: 1,
    maxRevisions: 2,
    priority: 0,
    lane: 'batch',
    versions: [],
    revisions: [],
    rev: 1,
    createdAt: at,
    updatedAt: at,
  }
}
