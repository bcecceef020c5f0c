import type { Language, ValidationIssue } from '../core'
import type { CodeRunner } from './code-runner'
import type { LlmMessage, LlmProvider } from './llm'
import { RetryStrategy, type RetryOptions } from './retry'

export interface GenerateOptions {
  language: Language
  /** Host functions the code may call, by name with a one-line description. */
  hostFunctions?: Readonly<Record<string, string>>
  signal?: AbortSignal
}

export interface GeneratedCode {
  code: string
  language: Language
  /** 1 when the first answer was good. */
  attempts: number
}

/** Thrown when no attempt produced code that passes validation (or, through `generateAndRun`, that runs). */
export class CodeGenerationError extends Error {
  constructor(
    message: string,
    readonly failures: readonly string[],
  ) {
    super(message)
    this.name = 'CodeGenerationError'
  }
}

const FENCE = /```[a-zA-Z]*\s*\n([\s\S]*?)```/g

/** The code from the answer's (last) markdown fence, or the whole answer when it has none. */
export function extractCode(answer: string): string {
  const fences = [...answer.matchAll(FENCE)]
  return (fences.length > 0 ? fences.at(-1)![1]! : answer).trim()
}

function systemPrompt(
  language: Language,
  hostFunctions: Readonly<Record<string, string>> | undefined,
  allowedImports: readonly string[],
): string {
  const functions = Object.entries(hostFunctions ?? {})
  return [
    `You write ${language} code that runs in a sandbox to compute an answer for a voice or chat assistant.`,
    'Rules of the sandbox:',
    `- Imports allowed: ${allowedImports.length ? allowedImports.join(', ') : 'none'}. No ` +
      `other modules, no network, no files unless a host function below gives them.`,
    '- No eval, exec, compile, Function constructors or dynamic imports.',
    '- Deliver the result: make it the value of the last expression (or pass it to submit_result(value) if that host function is listed).',
    ...(functions.length ? ['Host functions you may call:', ...functions.map(([name, description]) => `- ${name}: ${description}`)] : []),
    'Answer with one fenced code block and nothing else.',
  ].join('\n')
}

/** What is wrong with code before running it: the policy's static checks, and whether it delivers a result. */
function problems(code: string, language: Language, issues: readonly ValidationIssue[]): string[] {
  const found = issues
    .filter((issue) => issue.severity === 'error')
    .map((issue) => `${issue.message}${issue.line ? ` (line ${issue.line})` : ''}`)
  const lines = code
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#') && !line.startsWith('//'))
  const last = lines.at(-1) ?? ''
  const statement =
    language === 'python'
      ? /^(import|from|def|class|for|while|if|with|try|return|pass|raise)\b|^[A-Za-z_][\w.]*\s*(=|\+=|-=)/
      : /^(import|const|let|var|function|class|for|while|if|try|return|throw)\b|^[A-Za-z_$][\w$.]*\s*(=|\+=|-=)(?!=)|[;{]\s*}?$/
  if (!code.includes('submit_result') && (lines.length === 0 || statement.test(last) || last.endsWith(':'))) {
    found.push('the code does not deliver a result: end with an expression (its value is the answer) or call submit_result(value)')
  }
  return found
}

/**
 * Turns a task into code with a language model (Bedrock Converse in production), checks it with the policy's own
 * static checks and for a result before anything runs, and retries with the failure fed back into the prompt.
 */
export class CodeGenerator {
  private readonly retry: RetryOptions

  constructor(
    private readonly llm: LlmProvider,
    private readonly execgate: CodeRunner,
    retry: RetryOptions = {},
  ) {
    this.retry = retry
  }

  async generate(task: string, options: GenerateOptions, previousFailures: readonly string[] = []): Promise<GeneratedCode> {
    const failures = [...previousFailures]
    const policy = this.execgate.config.security.defaultPolicy
    const system = systemPrompt(options.language, options.hostFunctions, policy.allowedImports)
    const strategy = new RetryStrategy({ ...this.retry, retryable: (error) => !(error instanceof Error && error.name === 'AbortError') })
    try {
      return await strategy.run(async (attempt) => {
        const messages: LlmMessage[] = [{ role: 'user', text: `Task: ${task}` }]
        if (failures.length > 0) {
          messages.push({
            role: 'user',
            text:
              `Your previous code failed:\n${failures.map((failure) => `- ${failure}`).join('\n')}\nFix ` +
              `it and answer again with one code block.`,
          })
        }
        const answer = await this.llm.complete({ system, messages, signal: options.signal })
        const code = extractCode(answer)
        const report = await this.execgate.validate(code, options.language)
        const found = problems(
          code,
          options.language,
          report.implemented || report.validator === 'policy'
            ? report.issues
            : report.issues.filter((issue) => issue.code !== 'not_implemented'),
        )
        if (found.length > 0) {
          failures.push(...found)
          throw new CodeGenerationError(`generated code failed validation: ${found.join('; ')}`, failures)
        }
        return { code, language: options.language, attempts: attempt }
      }, options.signal)
    } catch (error) {
      if (error instanceof CodeGenerationError)
        throw new CodeGenerationError(`no valid code after ${strategy.maxAttempts} attempts: ${error.message}`, failures)
      throw error
    }
  }
}
