import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { LANGUAGES, describeError, type ExecutionResult, type Language } from '../core'
import type { SandboxCaller, SandboxInfo } from '../fabric/sandboxes'
import type { Execgate } from '../index'
import { outputContent, outputsSentence, structuredResult } from './mcp-outputs'

function describeSandbox(info: SandboxInfo): string {
  return (
    `sandbox ${info.id} on ${info.adapter} (runs ${info.languages.join(', ')}; stopped after ` +
    `${Math.round(info.idleTimeoutMs / 1000)} s idle)`
  )
}

function describeExec(result: ExecutionResult): string {
  const output = [result.stdout, result.stderr].filter(Boolean).join('\n--- stderr ---\n')
  const shown = output.length > 2000 ? `${output.slice(0, 1000)}\n…\n${output.slice(-1000)}` : output
  const head =
    result.status === 'ok'
      ? `ok in ${Math.round(result.durationMs)} ms`
      : `${result.status}: ${result.message ?? result.error?.message ?? ''}`
  return shown ? `${head}\n${shown}` : head
}

const failure = (error: unknown) => ({ content: [{ type: 'text' as const, text: describeError(error) }], isError: true })

/**
 * The caller's sandbox on any node (another node's reached through its HTTP API), or the tool's answer that there is
 * none: missing and another tenant's alike, or lost with its node (naming its last snapshot).
 */
async function findSandbox(execgate: Execgate, id: string, caller: SandboxCaller) {
  try {
    const sandbox = await execgate.sandboxes.find(id, caller)
    if (sandbox) return sandbox
    return { content: [{ type: 'text' as const, text: `no sandbox "${id}"; start one with sandbox_start` }], isError: true }
  } catch (error) {
    return failure(error)
  }
}

/**
 * MCP tools for persistent sandboxes: `sandbox_start` opens one (its files stay between calls), `sandbox_exec` runs a
 * shell command (or a program) in it, `sandbox_stop` ends it. All are the caller's tenant's; a sandbox also ends
 * after its idle timeout.
 */
export function registerSandboxTools(server: McpServer, execgate: Execgate, caller: SandboxCaller): void {
  server.registerTool(
    'sandbox_start',
    {
      title: 'Start a persistent sandbox',
      description:
        'Starts a sandbox: a workspace kept across calls, where sandbox_exec runs shell commands ' +
        '(ls, cat, grep, jq, sed, awk…) and programs. Files written by one call are there for the ' +
        'next. Returns its id.',
      inputSchema: {
        adapter: z.string().min(1).optional().describe('docker, process or shell; default: the configured one'),
        idleTimeoutMs: z.number().int().positive().optional().describe('stopped after this long without a call'),
        files: z
          .array(z.object({ path: z.string().min(1), content: z.string(), encoding: z.enum(['utf8', 'base64']).optional() }))
          .optional()
          .describe('files to place in the workspace first'),
        from: z
          .string()
          .regex(/^(sha256:)?[0-9a-fA-F]{64}$/)
          .optional()
          .describe("a snapshot's id (from sandbox_snapshot): the new sandbox starts with its files"),
      },
    },
    async (input) => {
      try {
        const sandbox = await execgate.sandboxes.start(input, caller)
        const info = sandbox.info()
        return {
          content: [{ type: 'text' as const, text: describeSandbox(info) }],
          structuredContent: info as unknown as Record<string, unknown>,
        }
      } catch (error) {
        return failure(error)
      }
    },
  )
  server.registerTool(
    'sandbox_exec',
    {
      title: 'Run a command in a sandbox',
      description:
        'Runs a bash command line (or a program: language and code) in a sandbox from ' +
        'sandbox_start, under the security policy. It starts in the workspace; files persist, `cd` ' +
        'and variables do not.',
      inputSchema: {
        sandboxId: z.string().min(1),
        command: z.string().min(1).optional().describe('a bash command line'),
        language: z.enum(LANGUAGES as unknown as [Language, ...Language[]]).optional(),
        code: z.string().min(1).optional(),
        timeoutMs: z.number().int().positive().optional().describe('tightens the time limit of this exec'),
      },
    },
    async (input) => {
      const sandbox = await findSandbox(execgate, input.sandboxId, caller)
      if (!('exec' in sandbox)) return sandbox
      // A tool call is an agent waiting mid-turn: it runs in the interactive lane.
      const result = await sandbox.exec({
        ...(input.command !== undefined ? { command: input.command } : { language: input.language, code: input.code }),
        ...(input.timeoutMs ? { timeoutMs: input.timeoutMs } : {}),
        lane: 'interactive',
      })
      return {
        content: [{ type: 'text' as const, text: describeExec(result) + outputsSentence(result) }, ...outputContent(result)],
        structuredContent: structuredResult(result),
        isError: result.status !== 'ok',
      }
    },
  )
  server.registerTool(
    'sandbox_snapshot',
    {
      title: "Snapshot a sandbox's files",
      description:
        "Saves every file of a sandbox's workspace as one snapshot and returns its id; " +
        'sandbox_start with from: that id starts a new sandbox (a fork, or a restore after a stop) ' +
        'with those files.',
      inputSchema: { sandboxId: z.string().min(1) },
    },
    async (input) => {
      const sandbox = await findSandbox(execgate, input.sandboxId, caller)
      if (!('exec' in sandbox)) return sandbox
      try {
        const snapshot = await sandbox.snapshot()
        return {
          content: [
            {
              type: 'text' as const,
              text: `snapshot ${snapshot.id} of sandbox ${sandbox.id}: ${snapshot.files} files, ${snapshot.bytes} bytes`,
            },
          ],
          structuredContent: snapshot as unknown as Record<string, unknown>,
        }
      } catch (error) {
        return failure(error)
      }
    },
  )
  server.registerTool(
    'sandbox_stop',
    { title: 'Stop a sandbox', description: 'Stops a sandbox and deletes its workspace.', inputSchema: { sandboxId: z.string().min(1) } },
    async (input) => {
      const sandbox = await findSandbox(execgate, input.sandboxId, caller)
      if (!('exec' in sandbox)) return sandbox
      const stopped = await sandbox.stop().then(
        () => true,
        () => false,
      )
      return {
        content: [{ type: 'text' as const, text: stopped ? `sandbox ${input.sandboxId} stopped` : `no sandbox "${input.sandboxId}"` }],
        isError: !stopped,
      }
    },
  )
}
