import type { ExecutionResult, Language } from '../core'
import type { CodeRunner } from './code-runner'
import { CodeGenerationError, type CodeGenerator } from './code-generator'
import type { LlmProvider } from './llm'
import { Continuations } from './continuations'
import { speakOutputs, speakText, speakValue } from './speech'
import { chatOutputs } from './chat-outputs'

export interface ComputationRequest {
  /** What the user asked for, in words. */
  description: string
  /** Code to run; without it the code generator writes it. */
  code?: string
  /** @default 'python' */
  language?: Language
  channel: 'voice' | 'chat'
  sessionId?: string
  /** Chat only: include the code in the answer. */
  showCode?: boolean
}

export interface ComputationResponse {
  /** What to say (voice: plain sentences for text-to-speech) or show (chat: markdown). */
  text: string
  /** The run's status, or `generation_failed`, `deferred` (nothing could run), `over_budget` (voice took too long). */
  outcome: ExecutionResult['status'] | 'generation_failed' | 'deferred' | 'over_budget'
  result?: ExecutionResult
  code?: string
  language?: Language
  /** Code generations it took (0 when the code was given). */
  generations: number
  /** With `over_budget`: the id to pass to `continueRequest` for the answer once it is ready. */
  continuation?: string
}

export interface HandlerOptions {
  /** Voice answers within this long, or say it is taking longer. @default 1500 */
  voiceBudgetMs?: number
  /** Runs of generated code that failed, fed back for a new generation, before giving up. @default 2 */
  maxRunAttempts?: number
  /** How long a finished over-budget answer waits for `continueRequest`. @default 300000 */
  continuationTtlMs?: number
  /** Over-budget answers kept at once; past it the oldest is cancelled. @default 100 */
  maxContinuations?: number
}

/**
 * What voice and chat agents call: turns "what's the total with 8% tax on these three items?" into an answer.
 * Writes the code when none is given, runs it through execgate, and says the result the way the channel needs it;
 * when nothing can run, explains how the computation would be done (the placeholder design's graceful deferral).
 */
export class CodeExecutionHandler {
  private readonly voiceBudgetMs: number
  private readonly maxRunAttempts: number
  private readonly continuations: Continuations<ComputationResponse>

  constructor(
    private readonly execgate: CodeRunner,
    private readonly generator?: CodeGenerator,
    private readonly llm?: LlmProvider,
    options: HandlerOptions = {},
  ) {
    this.voiceBudgetMs = options.voiceBudgetMs ?? 1500
    this.continuations = new Continuations(options.continuationTtlMs ?? 300_000, options.maxContinuations ?? 100)
    this.maxRunAttempts = options.maxRunAttempts ?? 2
  }

  async handleComputationRequest(request: ComputationRequest): Promise<ComputationResponse> {
    const cancel = new AbortController()
    if (request.channel !== 'voice') return this.compute(request, cancel.signal)
    // Voice answers within its budget. The work is not stopped when the budget runs out: it goes on under its own
    // limits, and the caller can take its answer with continueRequest if the user says yes.
    const started = Date.now()
    const work = this.compute(request, cancel.signal, () => Math.max(1, this.voiceBudgetMs - (Date.now() - started)))
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.voiceBudgetMs)))
    const first = await Promise.race([work, late])
    clearTimeout(timer)
    if (first !== 'late') return first
    const continuation = this.continuations.keep(work, cancel)
    return this.answer(
      request,
      'over_budget',
      'That is taking longer than I can wait right now. Shall I keep working on it and tell you when it is done?',
      { generations: 0, continuation },
    )
  }

  /**
   * The answer to a voice request that went over its budget (its `continuation`): waits for the work, which kept
   * running, and answers in the request's own channel. Each continuation is answered once.
   */
  async continueRequest(continuation: string): Promise<ComputationResponse> {
    const work = this.continuations.take(continuation)
    if (!work) {
      const ttl =
        this.continuations.ttlMs >= 1000 ? `${Math.round(this.continuations.ttlMs / 1000)} seconds` : `${this.continuations.ttlMs} ms`
      const text =
        `There is nothing to continue under "${continuation}": it was already answered, ` + `cancelled, or finished more than ${ttl} ago.`
      return { text, outcome: 'invalid_request', generations: 0 }
    }
    return work
  }

  /** Stops the work behind a continuation (the user said no); true when there was such work. */
  cancelRequest(continuation: string): boolean {
    return this.continuations.cancel(continuation)
  }

  /** Generates (when needed), runs and presents; `remainingMs` gives voice's remaining budget for routing. */
  private async compute(request: ComputationRequest, signal: AbortSignal, remainingMs?: () => number): Promise<ComputationResponse> {
    const language = request.language ?? 'python'
    let code = request.code
    let generations = 0
    const failures: string[] = []
    for (let run = 1; ; run++) {
      if (!code) {
        if (!this.generator)
          return this.answer(request, 'generation_failed', 'There is no code to run and no code generator is configured.', { generations })
        try {
          const generated = await this.generator.generate(request.description, { language, signal }, failures)
          code = generated.code
          generations += generated.attempts
        } catch (error) {
          if (signal.aborted) return this.answer(request, 'cancelled', 'I stopped working on that.', { generations })
          const detail = error instanceof CodeGenerationError ? (error.failures.at(-1) ?? error.message) : (error as Error).message
          return this.answer(request, 'generation_failed', `I couldn't write working code for that: ${detail}`, { generations })
        }
      }
      // Under a voice budget, routing prefers an adapter whose last readiness check answered within what is left.
      // A person is waiting on this turn: it runs in the interactive lane, ahead of batch work.
      const result = await this.execgate.execute(
        { language, code, lane: 'interactive', ...(request.sessionId ? { sessionId: request.sessionId } : {}) },
        { signal, ...(remainingMs ? { latencyBudgetMs: remainingMs() } : {}) },
      )
      if (result.status === 'not_implemented' || result.status === 'unavailable')
        return this.defer(request, result, code, language, generations)
      // Generated code that failed on its own error gets another generation with the error in the prompt.
      if (result.status === 'error' && !request.code && this.generator && run < this.maxRunAttempts) {
        failures.push(`running it failed: ${result.error?.type ?? 'Error'}: ${result.error?.message ?? result.message ?? ''}`)
        code = undefined
        continue
      }
      return this.present(request, result, code, language, generations)
    }
  }

  private present(
    request: ComputationRequest,
    result: ExecutionResult,
    code: string,
    language: Language,
    generations: number,
  ): ComputationResponse {
    const extra = { result, code, language, generations }
    const produced = result.value !== undefined ? result.value : result.stdout.trim() || undefined
    if (result.status === 'ok') {
      if (request.channel === 'voice') {
        // A table says the numbers better than the value it came from (a Series' bare list); a chart is said in words.
        const made = speakOutputs(result.outputs)
        const hasTable = result.outputs?.some((output) => output.kind === 'table') === true
        const answer = produced === undefined || (hasTable && typeof produced === 'object') ? '' : `The answer is ${speakValue(produced)}.`
        return this.answer(request, 'ok', [answer, made].filter(Boolean).join(' ') || `The answer is ${speakValue(produced)}.`, extra)
      }
      const shown = typeof produced === 'string' ? produced : JSON.stringify(produced, null, 2)
      const output = result.value !== undefined && result.stdout.trim() ? `\n\nOutput:\n\`\`\`\n${result.stdout.trimEnd()}\n\`\`\`` : ''
      const source = request.showCode ? `\n\nCode (${language}):\n\`\`\`${language}\n${code}\n\`\`\`` : ''
      const fenced = shown?.includes('\n') ? `\n\`\`\`\n${shown}\n\`\`\`` : `\`${shown}\``
      const headline = produced === undefined && result.outputs?.length ? '**Done.**' : `**Result:** ${fenced}`
      return this.answer(request, 'ok', `${headline}${output}${chatOutputs(result.outputs)}${source}`, extra)
    }
    const why: Record<string, string> = {
      error: `the calculation hit an error (${result.error?.type ?? 'Error'}: ${result.error?.message ?? ''})`,
      timeout: 'it took longer than the time allowed',
      memory_limit: 'it needed more memory than allowed',
      output_limit: 'it produced more output than allowed',
      policy_violation: `it tried something the security policy does not allow (${result.error?.message ?? result.message ?? ''})`,
      cancelled: 'it was cancelled',
      invalid_request: `the request was not valid (${result.message ?? ''})`,
      internal_error: 'something went wrong on our side',
    }
    const sentence = `I couldn't finish that: ${why[result.status] ?? result.status}.`
    return this.answer(request, result.status, request.channel === 'voice' ? speakText(sentence.split('\n')[0]!) : sentence, extra)
  }

  /** Nothing can run: say how it would be done instead (the model explains, when there is one). */
  private async defer(
    request: ComputationRequest,
    result: ExecutionResult,
    code: string,
    language: Language,
    generations: number,
  ): Promise<ComputationResponse> {
    let how = ''
    if (this.llm) {
      try {
        how = await this.llm.complete({
          system:
            'Explain in at most two short sentences, in plain spoken words with no code, symbols or ' +
            'markdown, how to compute what the user asks, step by step.',
          messages: [{ role: 'user', text: request.description }],
          maxTokens: 200,
        })
      } catch {
        how = ''
      }
    }
    const text =
      `I can't run calculations right ` +
      `now.${how ? ` Here is how it would be done: ${how.trim()}` : ` Here is what I would compute: ${request.description}.`}`
    return this.answer(request, 'deferred', request.channel === 'voice' ? speakText(text) : text, { result, code, language, generations })
  }

  private answer(
    _request: ComputationRequest,
    outcome: ComputationResponse['outcome'],
    text: string,
    extra: Partial<ComputationResponse> & { generations: number },
  ): ComputationResponse {
    return { text, outcome, ...extra }
  }
}
