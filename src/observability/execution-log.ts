import type { ExecutionListener, ExecutionRequest, ExecutionResult } from '../core'
import type { Logger } from './logger'

/**
 * The structured log line of every finished execution, as an `ExecutionListener` bound in the container: runs
 * from the library, the HTTP API, MCP and the agents' handler are logged alike. Never the code or its output.
 */
export class ExecutionLog implements ExecutionListener {
  constructor(private readonly logger: Logger) {}

  onResult(result: ExecutionResult, request: ExecutionRequest): void {
    const failed = result.status === 'internal_error'
    // A level the logger drops (a server at `warn`, a library at `silent`): no line's fields to build on every run.
    if (!this.logger.isLevelEnabled(failed ? 'error' : 'info')) return
    const language = typeof request?.language === 'string' ? request.language : undefined
    const fields = {
      traceId: result.traceId,
      language,
      status: result.status,
      adapter: result.adapter,
      durationMs: Math.round(result.durationMs * 100) / 100,
      ...(result.route ? { route: result.route } : {}),
    }
    if (failed) this.logger.error(fields, 'execution finished')
    else this.logger.info(fields, 'execution finished')
  }
}
