/**
 * Every DI token, and nothing else: each interface lives in its layer (named beside each token), so this file
 * imports nothing and any layer may use the tokens without an import cycle. Bind your own class to a token in a
 * ContainerModule passed to `createExecgate({ modules })`.
 */

/** The validated, frozen configuration: `Config` of src/config/load. */
export const Config = Symbol('Config')

/** Structured logger: `Logger` of src/observability/logger. */
export const Logger = Symbol('Logger')

/** The adapters created at start-up, by name: `AdapterRegistry` of src/core/adapter. */
export const AdapterRegistry = Symbol('AdapterRegistry')

/** Chooses the adapter for a request: `Router` of src/routing/router. */
export const Router = Symbol('Router')

/** Runs requests end to end: `ExecutionService` of src/execution/types. */
export const ExecutionService = Symbol('ExecutionService')

/** Observers of finished executions; several may be bound, each hears every result: `ExecutionListener` of src/core/adapter. */
export const ExecutionListener = Symbol('ExecutionListener')

/** The readiness monitor: `ReadinessMonitor` of src/readiness/readiness-monitor. */
export const Readiness = Symbol('Readiness')

/**
 * One adapter's token, by its registry name (`adapterToken('quickjs')`): rebinding it replaces the adapter with a
 * class of your own. `Symbol.for`, so the same name always gives the same token.
 */
export function adapterToken(name: string): symbol {
  return Symbol.for(`execgate.adapter.${name}`)
}

/**
 * Admission: lanes, slots per adapter, bounded queues and quotas, before every run: `AdmissionController` of
 * src/execution/admission/admission-controller. */
export const Admission = Symbol('Admission')
/** The egress gateway (src/egress): the forward proxy and policy engine every run's network goes through. */
export const EgressGateway = Symbol('EgressGateway')

/** The artifact ledger (provenance records and artifacts); also bound as an `ExecutionListener`: `LedgerService` of src/fabric/ledger. */
export const Ledger = Symbol('Ledger')

/**
 * The durable tasks' store, opened at first use from `fabric.store`: `TaskStore` of src/fabric/tasks. Rebind it to
 * a store of your own (another database); the task service (`execgate.tasks`) closes it.
 */
export const TaskStore = Symbol('TaskStore')

/** The plans' store, opened at first use from `fabric.store`: `PlanStore` of src/fabric/plans. Rebind it as `TaskStore`. */
export const PlanStore = Symbol('PlanStore')

/** Files uploaded once and named by digest (`PUT /v1/files`): `UploadStore` of src/fabric/files. */
export const Uploads = Symbol('Uploads')
