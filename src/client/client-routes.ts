/**
 * Every HTTP route the client calls, by name. The transport accepts only these names, so this table is the whole of
 * what the client asks of a server; test/client/openapi-contract.test.ts checks each against the server's OpenAPI
 * document (src/server/openapi.ts), so the client cannot call a route the server does not serve.
 */
export const CLIENT_ROUTES = {
  execute: { method: 'POST', path: '/v1/executions' },
  validate: { method: 'POST', path: '/v1/validate' },
  languages: { method: 'GET', path: '/v1/languages' },
  closeSession: { method: 'DELETE', path: '/v1/sessions/{id}' },

  submitTask: { method: 'POST', path: '/v1/tasks' },
  listTasks: { method: 'GET', path: '/v1/tasks' },
  getTask: { method: 'GET', path: '/v1/tasks/{id}' },
  cancelTask: { method: 'DELETE', path: '/v1/tasks/{id}' },
  suspendTask: { method: 'POST', path: '/v1/tasks/{id}/suspend' },
  resumeTask: { method: 'POST', path: '/v1/tasks/{id}/resume' },
  taskEvents: { method: 'GET', path: '/v1/tasks/{id}/events' },

  runPlan: { method: 'POST', path: '/v1/plans' },
  listPlans: { method: 'GET', path: '/v1/plans' },
  getPlan: { method: 'GET', path: '/v1/plans/{id}' },
  cancelPlan: { method: 'DELETE', path: '/v1/plans/{id}' },
  suspendPlan: { method: 'POST', path: '/v1/plans/{id}/suspend' },
  resumePlan: { method: 'POST', path: '/v1/plans/{id}/resume' },
  planEvents: { method: 'GET', path: '/v1/plans/{id}/events' },

  startSandbox: { method: 'POST', path: '/v1/sandboxes' },
  listSandboxes: { method: 'GET', path: '/v1/sandboxes' },
  getSandbox: { method: 'GET', path: '/v1/sandboxes/{id}' },
  stopSandbox: { method: 'DELETE', path: '/v1/sandboxes/{id}' },
  execSandbox: { method: 'POST', path: '/v1/sandboxes/{id}/exec' },
  saveSandboxArtifact: { method: 'POST', path: '/v1/sandboxes/{id}/artifacts' },
  snapshotSandbox: { method: 'POST', path: '/v1/sandboxes/{id}/snapshots' },
  listSandboxFiles: { method: 'GET', path: '/v1/sandboxes/{id}/files' },
  readSandboxFile: { method: 'GET', path: '/v1/sandboxes/{id}/files/{path}' },
  writeSandboxFile: { method: 'PUT', path: '/v1/sandboxes/{id}/files/{path}' },
  deleteSandboxFile: { method: 'DELETE', path: '/v1/sandboxes/{id}/files/{path}' },

  uploadFile: { method: 'PUT', path: '/v1/files' },
  listUploads: { method: 'GET', path: '/v1/files' },
  getUpload: { method: 'GET', path: '/v1/files/{sha256}' },
  deleteUpload: { method: 'DELETE', path: '/v1/files/{sha256}' },

  artifact: { method: 'GET', path: '/v1/artifacts/{sha256}' },
  lineage: { method: 'GET', path: '/v1/artifacts/{sha256}/lineage' },
  provenance: { method: 'GET', path: '/v1/runs/{id}/provenance' },
  record: { method: 'GET', path: '/v1/runs/{id}/record' },
  receipt: { method: 'GET', path: '/v1/runs/{id}/receipt' },
  planReceipt: { method: 'GET', path: '/v1/plans/{id}/receipt' },
  publicKey: { method: 'GET', path: '/v1/ledger/public-key' },
  exportLedger: { method: 'GET', path: '/v1/ledger/export' },
  verifyLedger: { method: 'GET', path: '/v1/ledger/verify' },
} as const satisfies Record<string, { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; path: string; optional?: boolean }>

export type RouteName = keyof typeof CLIENT_ROUTES

/** The route's path with its `{name}` parameters filled in; `{path}` keeps its slashes, each segment encoded. */
export function routePath(name: RouteName, params: Record<string, string> = {}): string {
  return CLIENT_ROUTES[name].path.replace(/\{(\w+)\}/g, (_, key: string) => {
    const value = params[key]
    if (value === undefined) throw new TypeError(`[execgate] [client] ${name} needs ${key}`)
    return key === 'path' ? value.split('/').filter(Boolean).map(encodeURIComponent).join('/') : encodeURIComponent(value)
  })
}
