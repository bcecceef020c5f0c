import type { ExecutionRequest, ExecutionResult, Language } from '../core/types'

/**
 * What the framework tools (execgate/ai-sdk, /langchain, /openai-agents, /mastra) share: one "run code" tool over an
 * in-process `Execgate` or a remote `ExecgateClient` (both have the same `execute`), optionally bound to a session or a
 * sandbox so an agent's calls share state, and the answer in the shape a model reads best.
 */

/** Anything with the library's `execute`: an `Execgate` (createExecgate) or an `ExecgateClient`. */
export interface CodeRunner {
  execute(request: ExecutionRequest, options?: { signal?: AbortSignal }): Promise<ExecutionResult>
}

/** A live sandbox, in-process (`execgate.sandboxes.start()`) or remote (`client.sandboxes.start()`). */
export interface SandboxLike {
  readonly id: string
  exec(
    input: { language?: Language; code?: string; command?: string; stdin?: string; timeoutMs?: number },
    options?: { signal?: AbortSignal },
  ): Promise<ExecutionResult>
}

export interface CodeToolOptions {
  /** Runs the code: an `Execgate` or an `ExecgateClient`. Not needed when `sandbox` is given. */
  execgate?: CodeRunner
  /** Every call runs in this sandbox (files and installed state persist between calls). */
  sandbox?: SandboxLike
  /** Every call shares this session's interpreter state (variables persist), on adapters with sessions. */
  sessionId?: string
  /** Languages the model may choose from. @default ['python', 'javascript', 'typescript', 'bash'] */
  languages?: readonly Language[]
  /** The tool's name as the model sees it. @default 'execute_code' */
  name?: string
  description?: string
  /** Added to every request: `timeoutMs`, `memoryMb`, `adapter`, `policy` (which may only tighten). */
  defaults?: Pick<ExecutionRequest, 'timeoutMs' | 'memoryMb' | 'adapter' | 'policy' | 'lane' | 'agentType'>
}

/** What the model sends. */
export interface CodeToolInput {
  language: Language
  code: string
}

/** An image a run made (`result.outputs`, issue 25), as the frameworks pass images to a model. */
export interface ToolImage {
  mimeType: string
  /** Base64. */
  data: string
}

/** The run's answer as a model should read it: what happened, what it printed, what it returned, what it drew. */
export interface CodeToolAnswer {
  status: ExecutionResult['status']
  /** stdout, then stderr under a marker, as the program wrote them (head and tail when cut). */
  output: string
  value?: unknown
  /** `Type: message` when the code raised or execgate refused it. */
  error?: string
  /** A sentence for every status but ok (what happened, what to do). */
  message?: string
  /** Tables and other non-image outputs, as data. */
  outputs?: unknown[]
  /** Images, passed to the model as image content where the framework can. */
  images?: ToolImage[]
}

const ALL_LANGUAGES: readonly Language[] = ['python', 'javascript', 'typescript', 'bash']

/** The input's JSON Schema: strict-mode friendly (every property required, no others), for every framework. */
export function codeToolInputSchema(languages: readonly Language[] = ALL_LANGUAGES) {
  return {
    type: 'object' as const,
    properties: {
      language: { type: 'string' as const, enum: [...languages], description: 'the language of the code' },
      code: { type: 'string' as const, description: 'the program; the value of its last expression is returned as value' },
    },
    required: ['language', 'code'],
    additionalProperties: false as const,
  }
}

export function codeToolDescription(options: CodeToolOptions): string {
  if (options.description) return options.description
  const languages = (options.languages ?? ALL_LANGUAGES).join(', ')
  const state = options.sandbox
    ? ' Calls share one sandbox: files written by one call are there for the next.'
    : options.sessionId
      ? ' Calls share one session: variables defined by one call are there for the next.'
      : ''
  return (
    `Run ${languages} code in a secure sandbox and get its status, output (stdout/stderr), ` +
    `the value of its last expression, and any images it made. Use it to compute, check or ` +
    `transform data exactly rather than estimating.${state}`
  )
}

/** Runs one call of the tool; never throws (a refused or failed run is an answer with its status). */
export async function runCodeTool(options: CodeToolOptions, input: CodeToolInput, signal?: AbortSignal): Promise<ExecutionResult> {
  const callOptions = signal ? { signal } : {}
  if (options.sandbox)
    return options.sandbox.exec(
      { language: input.language, code: input.code, ...(options.defaults?.timeoutMs ? { timeoutMs: options.defaults.timeoutMs } : {}) },
      callOptions,
    )
  if (!options.execgate) throw new TypeError('[execgate] [tools] give the tool an execgate (createExecgate or ExecgateClient) or a sandbox')
  return options.execgate.execute(
    { ...options.defaults, language: input.language, code: input.code, ...(options.sessionId ? { sessionId: options.sessionId } : {}) },
    callOptions,
  )
}

type OutputItem = { kind?: string; mimeType?: string; data?: unknown }

/** The result as the model should read it; images split out so each framework can pass them as image content. */
export function toolAnswer(result: ExecutionResult): CodeToolAnswer {
  const output = result.stderr
    ? `${result.stdout}${result.stdout && !result.stdout.endsWith('\n') ? '\n' : ''}[stderr]\n${result.stderr}`
    : result.stdout
  const items = ((result as ExecutionResult & { outputs?: OutputItem[] }).outputs ?? []) as OutputItem[]
  const images = items
    .filter((item) => item.kind === 'image' && typeof item.data === 'string')
    .map((item) => ({ mimeType: item.mimeType ?? 'image/png', data: item.data as string }))
  const others = items.filter((item) => item.kind !== 'image')
  return {
    status: result.status,
    output,
    ...(result.value !== undefined ? { value: result.value } : {}),
    ...(result.error
      ? { error: `${result.error.type}: ${result.error.message}${result.error.line ? ` (line ${result.error.line})` : ''}` }
      : {}),
    ...(result.message && result.status !== 'ok' ? { message: result.message } : {}),
    ...(others.length ? { outputs: others } : {}),
    ...(images.length ? { images } : {}),
  }
}

/** The answer as text for frameworks that pass a string to the model: images named, not inlined (base64 is noise to a text model). */
export function answerText(answer: CodeToolAnswer): string {
  const { images, ...rest } = answer
  return JSON.stringify(
    images?.length
      ? { ...rest, images: images.map((image, index) => `image ${index + 1} (${image.mimeType}, ${base64Bytes(image.data)} bytes)`) }
      : rest,
  )
}

function base64Bytes(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0)
}
