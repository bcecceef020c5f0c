/**
 * The shapes the client sends and answers: the library's own types (type-only imports, erased from the built
 * JavaScript), so code moves between an in-process `Execgate` and a remote `ExecgateClient` unchanged.
 */
import type { ExecutionResult, Output } from '../core'
import type { LedgerService } from '../fabric/ledger'
import type { TaskEvent } from '../fabric/tasks'

export type {
  ExecutionRequest,
  ExecutionResult,
  ExecutionStatus,
  Language,
  ValidationReport,
  WorkspaceFile,
  SandboxFileEntry,
} from '../core'
export type { ErrorCode } from '../core/errors'
export type { Task, TaskSpec, TaskEvent, TaskState, ResumeChanges } from '../fabric/tasks'
export type { PlanSpec, PlanView, PlanEvent, PlanOutputEvent, PlanStreamItem, PlanState, PlanSummary } from '../fabric/plans'
export type { UploadedFile } from '../fabric/files'
export type { SandboxInfo, SandboxStartOptions, SandboxExecRequest, SandboxFile, SandboxSnapshot, SavedArtifact } from '../fabric/sandboxes'
export type {
  Lineage,
  LineageLimits,
  ProvDocument,
  VerifyReport,
  RunProvenanceRecord,
  OpenLineageRunEvent,
  ExportOptions,
} from '../fabric/ledger'

/** An event of `client.stream(request)`: output as the run produces it, then its result (always last). */
export type ExecutionEvent =
  | { type: 'stdout' | 'stderr'; chunk: string }
  /** One rich output (an image, a table, a display() item), before the result, which lists them all again. */
  | { type: 'output'; index: number; output: Output }
  | { type: 'result'; result: ExecutionResult }

/** An event of `client.tasks.events(id)`: a transition of its action log, or output while it runs on that server. */
export type TaskStreamEvent =
  | { type: 'transition'; event: TaskEvent }
  | { type: 'stdout' | 'stderr'; chunk: string }
  /** A rich output of the run `attempt` (an image, a table, a display() item): `task.result.outputs[index]` once it ends. */
  | { type: 'output'; index: number; attempt: number; output: Output }

/** What `client.execute` takes: the library's request, plus the policy profile header. */
export interface RemoteExecuteOptions {
  signal?: AbortSignal
  /** A policy profile the tenant may use (`X-Execgate-Profile`). */
  profile?: string
  /** Called with output as it arrives (the request is streamed). */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: string) => void
}

/** A page of `client.tasks.list` / `client.plans.list`. */
export interface ListOptions<State extends string> {
  state?: State
  limit?: number
  cursor?: string
  order?: 'oldest' | 'newest'
}

/** Bytes as the server sent them, with their media type. */
export interface RemoteBytes {
  content: Uint8Array
  mediaType: string
}

/** A signed receipt: an in-toto Statement in a DSSE envelope (Ed25519), verifiable offline (docs/ledger.md). */
export type ReceiptEnvelope = Awaited<ReturnType<LedgerService['receipt']>>

/** The Ed25519 public key receipts verify with. */
export type LedgerPublicKey = Awaited<ReturnType<LedgerService['publicKey']>>
