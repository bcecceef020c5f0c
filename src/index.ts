/**
 * `execgate`: the library's public API, chosen (test/package/exports.test.ts lists it; docs/api.md shows it). The
 * contract (src/core's types and adapter interface), createExecgate, the errors, the configuration and policy a
 * caller sets, the DI tokens to bind your own adapter or listener, the workspace types a host function needs, and the
 * types of what an `Execgate` returns. The machinery beneath (pools, workspace layers, the concrete services) is not
 * exported: it may change in any release.
 */

// The library.
export { createExecgate, type Execgate, type ExecgateOptions, type ExecgateStatus, type AdapterStatus } from './app/execgate'

// The contract: requests, results, policies, the adapter interface, and the helpers an adapter of your own needs.
export * from './core/types'
export * from './core/adapter'
export { createResult, type ResultFields } from './core/result'
export { enforcementTable } from './core/capabilities'
export { ExecgateError, isExecgateError, ERROR_CODES, type ErrorCode, type Fault } from './core/errors'
export { EXECUTION_REQUEST_SCHEMA } from './core/request-schema'

// Configuration and policy.
export { loadConfig, type Config as LoadedConfig, type LoadConfigOptions } from './config/load'
export type { ExecgateConfig } from './config/schema'
export { resolvePolicy, explainPolicy, DEFAULT_POLICY, type PolicyExplanation } from './policy'

// Binding your own adapter, router or listener: `createExecgate({ modules })` with these tokens.
export * as tokens from './app/tokens'
export { adapterToken } from './app/tokens'
export type { ExecuteOptions, ExecutionService } from './execution/types'
export type { Router, RouteDecision, RouteHints } from './routing/router'
export type { Logger } from './observability/logger'
export type { ReadinessMonitor, SwitchEvent, HealthEvent } from './readiness/readiness-monitor'
export type { AdmissionStatus, AdapterAdmissionStatus } from './execution/admission/admission-controller'

// Workspaces a caller passes to a run (`ExecuteOptions.workspace`), and what a host function is given: its
// definition, the call (with the run's workspace) and the workspace's types.
export { MemoryWorkspace, OverlayWorkspace, DirectoryLayer, S3Layer, S3Workspace, type S3Settings } from './workspace'
export type { HostFunctionDefinition, HostCall, Workspace, WorkspaceEntry, WorkspaceLayer, WorkspaceLimits } from './workspace'

// What an Execgate's tasks, ledger, plans and sandboxes take and return.
export type {
  Task,
  TaskSpec,
  TaskState,
  TaskEvent,
  TaskService,
  TaskStore,
  TaskStreamItem,
  TaskOutput,
  RetryPolicy,
  TaskProvenance,
} from './fabric/tasks'
export type {
  LedgerService,
  LedgerCaller,
  RunRecord,
  PlanVersionInput,
  VerifyReport,
  Lineage,
  ProvDocument,
  OpenLineageRunEvent,
  ExportFormat,
  RetentionReport,
} from './fabric/ledger'
export type {
  PlanService,
  PlanStore,
  PlanSpec,
  PlanStepSpec,
  PlanView,
  PlanStepView,
  PlanEvent,
  PlanOutputEvent,
  PlanStreamItem,
  PlanState,
  PlanSummary,
  PlanVersion,
  PlanChanges,
  PlanRevision,
} from './fabric/plans'
export type {
  Sandbox,
  SandboxCaller,
  SandboxExecOptions,
  SandboxExecRequest,
  SandboxInfo,
  SandboxService,
  SandboxStartOptions,
} from './fabric/sandboxes'

// A language model for the plans' reflector and the agents.
export type { LlmProvider, LlmMessage, LlmRequest } from './core/llm'
export { BedrockConverseProvider, type BedrockConverseOptions } from './runtime/bedrock-converse'

// The egress gateway: every sandbox's network, through one forward proxy and its policy (docs/egress.md).
export {
  EgressGateway,
  tableResolver,
  systemResolver,
  type EgressGatewayOptions,
  type EgressResolver,
  type SecretDefinition,
} from './egress'
