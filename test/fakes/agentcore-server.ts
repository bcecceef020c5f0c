import { randomUUID } from 'node:crypto'
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { EventStreamCodec } from '@smithy/eventstream-codec'
import { fromUtf8, toUtf8 } from '@smithy/util-utf8'
import type { CodeExecutionAdapter, ExecutionContext } from '../../src/core'
import { DEFAULT_POLICY } from '../../src/policy'

/**
 * A local server speaking Bedrock AgentCore's Code Interpreter wire protocol (REST + JSON requests, event-stream
 * responses framed with @smithy/eventstream-codec), so the real SDK client is exercised over HTTP end to end. Code
 * runs on execgate's own local adapters (the process adapter for Python, QuickJS for JavaScript): real execution,
 * not canned answers. `failures` makes the next calls fail with AWS errors; `sessions` records what happened.
 */
export class FakeAgentCore {
  readonly sessions = new Map<string, { interpreter: string; stopped: boolean; running?: AbortController }>()
  readonly calls: string[] = []
  /** AWS errors for the next requests of an operation (`PUT sessions/start`, …), one each, in order. */
  readonly failures: Array<{ operation: string; name: string }> = []
  private server?: http.Server
  private readonly codec = new EventStreamCodec(toUtf8, fromUtf8)

  constructor(private readonly runners: { python: CodeExecutionAdapter; javascript: CodeExecutionAdapter }) {}

  async listen(): Promise<string> {
    this.server = http.createServer((request, response) => void this.handle(request, response))
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    const address = this.server.address() as { port: number }
    return `http://127.0.0.1:${address.port}`
  }

  async close(): Promise<void> {
    for (const session of this.sessions.values()) session.running?.abort()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }

  openSessions(): string[] {
    return [...this.sessions].filter(([, session]) => !session.stopped).map(([id]) => id)
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {}
    const url = new URL(request.url ?? '/', 'http://localhost')
    const match = /^\/code-interpreters\/([^/]+)\/(sessions\/start|sessions\/stop|tools\/invoke)$/.exec(url.pathname)
    const fail = (status: number, type: string, message: string) => {
      response.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type })
      response.end(JSON.stringify({ message }))
    }
    if (!match) return fail(404, 'UnknownOperationException', `no operation at ${request.method} ${url.pathname}`)
    const interpreter = decodeURIComponent(match[1]!)
    const operation = `${request.method} ${match[2]}`
    this.calls.push(operation)
    const failing = this.failures.findIndex((failure) => failure.operation === operation)
    if (failing !== -1) {
      const { name } = this.failures.splice(failing, 1)[0]!
      const status =
        { ThrottlingException: 429, AccessDeniedException: 403, ResourceNotFoundException: 404, ValidationException: 400 }[name] ?? 500
      return fail(status, name, `fake ${name}`)
    }
    if (interpreter !== 'aws.codeinterpreter.v1') return fail(404, 'ResourceNotFoundException', `code interpreter ${interpreter} not found`)
    const now = new Date().toISOString() // the model declares date-time strings
    if (operation === 'PUT sessions/start') {
      const sessionId = randomUUID()
      this.sessions.set(sessionId, { interpreter, stopped: false })
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ codeInterpreterIdentifier: interpreter, sessionId, createdAt: now }))
      return
    }
    if (operation === 'PUT sessions/stop') {
      const sessionId = url.searchParams.get('sessionId') ?? ''
      const session = this.sessions.get(sessionId)
      if (!session) return fail(404, 'ResourceNotFoundException', `session ${sessionId} not found`)
      session.stopped = true
      session.running?.abort()
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ codeInterpreterIdentifier: interpreter, sessionId, lastUpdatedAt: now }))
      return
    }
    if (operation !== 'POST tools/invoke') return fail(400, 'ValidationException', `unexpected ${operation}`)
    const sessionId = String(request.headers['x-amzn-code-interpreter-session-id'] ?? '')
    const session = this.sessions.get(sessionId)
    if (!session || session.stopped) return fail(404, 'ResourceNotFoundException', `session ${sessionId} not found or stopped`)
    if (body.name !== 'executeCode') return fail(400, 'ValidationException', `tool ${body.name} is not supported here`)
    const { language, code } = body.arguments ?? {}
    const runner = language === 'python' ? this.runners.python : language === 'javascript' ? this.runners.javascript : undefined
    if (!runner || typeof code !== 'string')
      return fail(
        400,
        'ValidationException',
        `arguments.language must be python or javascript (got ${language}) and arguments.code a string`,
      )
    session.running = new AbortController()
    // AgentCore's interpreter imports anything: the allow-list is the bedrock adapter's own wrapper's to hold, so this
    // stand-in lets through what the hostile corpus's cases may be allowed (threading, socket, builtins…) besides
    // what the wrapper itself uses; bubblewrap stays around it.
    const policy = {
      ...DEFAULT_POLICY,
      wallTimeMs: 30_000,
      cpuTimeMs: 30_000,
      memoryMb: 64,
      outputBytes: 1024 * 1024,
      allowedImports: [
        'base64',
        'os',
        'sys',
        'json',
        'math',
        're',
        'time',
        'traceback',
        'signal',
        '_signal',
        'datetime',
        'threading',
        'socket',
        'builtins',
      ],
    }
    const context: ExecutionContext = {
      traceId: `agentcore-${sessionId}`,
      policy,
      signal: session.running.signal,
      deadline: performance.now() + policy.wallTimeMs,
    }
    const started = performance.now()
    const result = await runner.execute({ language, code }, context)
    session.running = undefined
    const stderr = result.stderr || (result.status === 'ok' ? '' : `${result.error?.type ?? result.status}: ${result.message ?? ''}\n`)
    const payload = {
      content: [{ type: 'text', text: result.stdout }],
      structuredContent: {
        stdout: result.stdout,
        stderr,
        exitCode: result.status === 'ok' ? 0 : 1,
        executionTime: (performance.now() - started) / 1000,
      },
      isError: result.status !== 'ok',
    }
    const frame = this.codec.encode({
      headers: {
        ':message-type': { type: 'string', value: 'event' },
        ':event-type': { type: 'string', value: 'result' },
        ':content-type': { type: 'string', value: 'application/json' },
      },
      body: fromUtf8(JSON.stringify(payload)),
    })
    response.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-code-interpreter-session-id': sessionId })
    response.end(Buffer.from(frame))
  }
}
