import type { FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import { LANGUAGES, type ExecutionResult, type Language } from '../core'
import type { TaskCaller } from '../fabric/tasks'
import type { Execgate } from '../index'
import { EXECGATE_VERSION } from './version'
import { registerTaskTools } from './mcp-task-tools'
import { registerPlanTools } from './mcp-plan-tools'
import { registerSandboxTools } from './mcp-sandbox-tools'
import { registerReceiptTools } from './mcp-receipt-tools'
import { outputContent, outputsSentence, structuredResult } from './mcp-outputs'

/** A short sentence for the tool's text content; the full result is the structured content. */
function summary(result: ExecutionResult): string {
  if (result.status === 'ok') {
    const value = result.value === undefined ? '' : ` value: ${JSON.stringify(result.value)}`
    const out = result.stdout ? ` stdout: ${result.stdout.length > 500 ? `${result.stdout.slice(0, 500)}…` : result.stdout.trimEnd()}` : ''
    return `ok on ${result.adapter} in ${Math.round(result.durationMs)} ms.${value}${out}`
  }
  return `${result.status} on ${result.adapter}: ${result.message ?? result.error?.message ?? ''}`
}

/**
 * execgate as MCP tools: `execute_code`, `validate_code`, `list_languages`, each with an input schema and the
 * result as structured content plus a short text. `profile` is the caller's policy profile (a tenant's).
 */
export async function createMcpServer(
  execgate: Execgate,
  profile?: string,
  sessionScope: (sessionId: string) => string = (sessionId) => sessionId,
  tenant?: string,
) {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js')
  const server = new McpServer({ name: 'execgate', version: EXECGATE_VERSION })
  const language = z.enum(LANGUAGES as unknown as [Language, ...Language[]])
  server.registerTool(
    'execute_code',
    {
      title: 'Run code in a sandbox',
      description:
        'Runs a short program (JavaScript, TypeScript, Python or bash) in an isolated sandbox ' +
        'under a security policy and returns its status, output and the value of its last ' +
        'expression.',
      inputSchema: {
        language,
        code: z.string().min(1).describe('the program; the value of its last expression is returned'),
        sessionId: z.string().min(1).max(128).optional().describe('keeps state between calls on adapters with sessions'),
        timeoutMs: z.number().int().positive().optional().describe('tightens the wall-time limit'),
      },
    },
    async (input) => {
      // A tool call is an agent waiting mid-turn: it runs in the interactive lane.
      const result = await execgate.execute(
        {
          language: input.language,
          code: input.code,
          lane: 'interactive',
          ...(input.sessionId ? { sessionId: sessionScope(input.sessionId) } : {}),
          ...(input.timeoutMs ? { timeoutMs: input.timeoutMs } : {}),
        },
        // The caller's tenant: its quotas, and its ledger (get_receipt finds only the tenant's own runs).
        { profile, ...(tenant ? { tenant } : {}) },
      )
      return {
        content: [{ type: 'text' as const, text: summary(result) + outputsSentence(result) }, ...outputContent(result)],
        structuredContent: structuredResult(result),
        isError: result.status !== 'ok',
      }
    },
  )
  server.registerTool(
    'validate_code',
    {
      title: 'Check code without running it',
      description: 'Checks a program against the security policy (imports, eval, file access) and its syntax, without running it.',
      inputSchema: { language, code: z.string().min(1) },
    },
    async (input) => {
      const report = await execgate.validate(input.code, input.language)
      const text = report.valid
        ? 'valid'
        : `invalid: ${report.issues.map((issue) => `${issue.message}${issue.line ? ` (line ${issue.line})` : ''}`).join('; ')}`
      return { content: [{ type: 'text' as const, text }], structuredContent: report as unknown as Record<string, unknown> }
    },
  )
  server.registerTool(
    'list_languages',
    { title: 'Languages execgate runs', description: 'The languages the enabled adapters run.', inputSchema: {} },
    async () => {
      const languages = execgate.languages()
      return { content: [{ type: 'text' as const, text: languages.join(', ') }], structuredContent: { languages: [...languages] } }
    },
  )
  const caller: TaskCaller = { ...(tenant ? { tenant } : {}), ...(profile ? { profile } : {}) }
  registerTaskTools(server, execgate, caller)
  registerPlanTools(server, execgate, caller)
  registerSandboxTools(server, execgate, caller)
  registerReceiptTools(server, execgate, caller)
  return server
}

/** `execgate mcp`: the tools over stdio. */
export async function serveMcpStdio(execgate: Execgate): Promise<void> {
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js')
  const server = await createMcpServer(execgate)
  await server.connect(new StdioServerTransport())
  await new Promise<void>((resolve) => process.stdin.once('close', resolve))
  await server.close()
}

/** POST /mcp: stateless streamable HTTP, one server and transport per request, behind the API's keys. */
export function mcpHttpHandler(execgate: Execgate, scope: (tenant: FastifyRequest['tenant'], sessionId: string) => string) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js')
    const server = await createMcpServer(
      execgate,
      request.tenant.profile,
      (sessionId) => scope(request.tenant, sessionId),
      request.tenant.name,
    )
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    reply.hijack()
    reply.raw.on('close', () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    await transport.handleRequest(request.raw, reply.raw, request.body)
  }
}
