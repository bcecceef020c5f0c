import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { LANGUAGES, type Language } from '../core'
import type { Task, TaskCaller } from '../fabric/tasks'
import type { Execgate } from '../index'
import { toolRefusal } from './mcp-refusal'

/** One line an agent can read: the state, why, and the value or error once there is one. */
function describeTask(task: Task): string {
  const result = task.result
  const outcome =
    task.state === 'COMPLETED'
      ? ` value: ${JSON.stringify(result?.value ?? null)}`
      : task.reason && task.reason !== 'submitted'
        ? ` (${task.reason})`
        : ''
  return `task ${task.id} is ${task.state}${outcome}`
}

/**
 * MCP tools for durable tasks: `submit_task` queues work that outlives the call (with priority, dependencies, a
 * start-by deadline), `get_task` reads its state and result, waiting a little if asked. Both are the caller's tenant's.
 */
export function registerTaskTools(server: McpServer, execgate: Execgate, caller: TaskCaller): void {
  server.registerTool(
    'submit_task',
    {
      title: 'Queue a durable task',
      description:
        'Queues a program to run as a durable task (it survives restarts and is retried by its ' +
        'policy). Returns the task id at once; call get_task for its state and result.',
      inputSchema: {
        language: z.enum(LANGUAGES as unknown as [Language, ...Language[]]),
        code: z.string().min(1),
        priority: z.number().int().optional().describe('higher runs first; default 0'),
        dependencies: z
          .array(z.string())
          .optional()
          .describe('task ids that must complete first; their values are in deps/<id>/value.json'),
        deadline: z.string().optional().describe('start-by time, ISO 8601; not started by then, the task ends TERMINATED'),
        idempotencyKey: z.string().min(1).optional().describe('submitting again with the same key returns the same task'),
        timeoutMs: z.number().int().positive().optional(),
      },
    },
    async (input) => {
      const { language, code, ...rest } = input
      let task: Task
      try {
        task = await execgate.tasks.submit({ request: { language, code }, ...rest }, caller)
      } catch (error) {
        return toolRefusal(error)
      }
      return {
        content: [{ type: 'text' as const, text: describeTask(task) }],
        structuredContent: task as unknown as Record<string, unknown>,
      }
    },
  )
  server.registerTool(
    'get_task',
    {
      title: "A task's state and result",
      description:
        'The state (PENDING, SPAWNING, RUNNING, SUSPENDED, COMPLETED, FAILED, TERMINATED), the ' +
        'reason of its last transition, and its result once it ran.',
      inputSchema: {
        id: z.string().min(1),
        waitMs: z.number().int().min(0).max(60_000).optional().describe('wait up to this long for the task to end'),
      },
    },
    async (input) => {
      const task = input.waitMs
        ? await execgate.tasks.wait(input.id, { ...caller, timeoutMs: input.waitMs }).catch(() => undefined)
        : await execgate.tasks.get(input.id, caller)
      if (!task) return { content: [{ type: 'text' as const, text: `no task "${input.id}"` }], isError: true }
      return {
        content: [{ type: 'text' as const, text: describeTask(task) }],
        structuredContent: task as unknown as Record<string, unknown>,
        isError: task.state === 'FAILED' || task.state === 'TERMINATED',
      }
    },
  )
}
