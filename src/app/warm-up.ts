import { performance } from 'node:perf_hooks'
import { ExecgateError, describeError, type CodeExecutionAdapter } from '../core'
import type { Logger } from '../observability/logger'

/**
 * The tier whose adapters gate readiness: the in-process interpreters (quickjs, monty, the shell), warm in well under
 * a second. Slower ones (pyodide, ~4 s of a core to load CPython) warm behind them, after, so they do not take the
 * cores the first tier needs; a request that needs one meanwhile waits for it (its route says so).
 */
export const READY_TIER = 1

/**
 * Starts adapters' warm-ups (`warmUp()`) once each and tells when they are done. A failure is logged, not thrown:
 * the adapter stays usable (cold), and the readiness monitor reports its health.
 */
export class AdapterWarmUp {
  private readonly warming = new Map<string, Promise<void>>()
  private readonly settled = new Set<string>()
  private firstTier?: Promise<void>
  private gateOpen = false

  constructor(
    private readonly adapters: () => readonly CodeExecutionAdapter[],
    private readonly logger: Logger,
    /** Whether `ready()` warms this adapter at all (its `warmOnStart` option). */
    private readonly startsWarm: (adapter: CodeExecutionAdapter) => boolean = () => true,
  ) {}

  /**
   * Without names: resolves once the first-tier adapters are warm (or failed), then starts the others' warm-ups
   * behind. With names: resolves once those adapters are warm (or failed), starting their warm-ups if need be.
   */
  ready(names?: readonly string[]): Promise<void> {
    if (names) {
      const known = this.adapters()
      const chosen = names.map((name) => known.find((adapter) => adapter.name === name) ?? name)
      const unknown = chosen.filter((item): item is string => typeof item === 'string')
      if (unknown.length > 0) {
        return Promise.reject(
          new ExecgateError('EXECGATE_ADAPTER_UNKNOWN', {
            name: unknown.join(', '),
            known: known.map((adapter) => adapter.name).join(', '),
          }),
        )
      }
      return Promise.all((chosen as CodeExecutionAdapter[]).map((adapter) => this.warm(adapter))).then(() => undefined)
    }
    return (this.firstTier ??= (async () => {
      const started = performance.now()
      const warmable = this.adapters().filter((adapter) => adapter.warmUp && this.startsWarm(adapter))
      const first = warmable.filter((adapter) => adapter.capabilities.tier <= READY_TIER)
      await Promise.all(first.map((adapter) => this.warm(adapter)))
      this.gateOpen = true
      this.logger.debug(
        { adapters: first.map((adapter) => adapter.name), ms: Math.round(performance.now() - started) },
        'first-tier adapters warm',
      )
      for (const adapter of warmable) if (!first.includes(adapter)) void this.warm(adapter)
    })())
  }

  /** The first-tier adapters are warm (or failed): `/readyz` may answer ready. */
  get warmedUp(): boolean {
    return this.gateOpen
  }

  /** One warm-up at a time per adapter; once settled, a later call warms again if the adapter has gone cold since
   * (a pyodide process replaced after a run). */
  private warm(adapter: CodeExecutionAdapter): Promise<void> {
    let warming = this.warming.get(adapter.name)
    if (!warming || (this.settled.has(adapter.name) && adapter.isWarm?.() === false)) {
      const begun = performance.now()
      this.settled.delete(adapter.name)
      warming = (adapter.warmUp?.() ?? Promise.resolve())
        .then(
          () => this.logger.debug({ adapter: adapter.name, ms: Math.round(performance.now() - begun) }, 'adapter warm'),
          (error: unknown) =>
            this.logger.warn(
              { adapter: adapter.name, err: describeError(error) },
              'adapter warm-up failed; its first run pays a cold start',
            ),
        )
        .then(() => void this.settled.add(adapter.name))
      this.warming.set(adapter.name, warming)
    }
    return warming
  }
}

/** Warms the given adapters together; resolves when each is warm or has failed (tools that want everything warm). */
export async function warmUpAdapters(adapters: readonly CodeExecutionAdapter[], logger: Logger): Promise<void> {
  await new AdapterWarmUp(() => adapters, logger).ready(adapters.filter((adapter) => adapter.warmUp).map((adapter) => adapter.name))
}
