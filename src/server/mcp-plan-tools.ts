import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { LANGUAGES, type Language } from '../core'
import type { PlanView } from '../fabric/plans'
import type { TaskCaller } from '../fabric/tasks'
import type { Execgate } from '../index'
import { toolRefusal } from './mcp-refusal'

/** A few lines an agent can read: the plan's state and why, then each step's state and value. */
function describePlan(plan: PlanView): string {
  const steps = plan.steps.map((step) => {
    const outcome =
      step.state === 'COMPLETED'
        ? ` value: ${JSON.stringify(step.result?.value ?? null)}`
        : step.state === 'FAILED'
          ? ` (${step.reason})`
          : ''
    return `- ${step.id}: ${step.state}${outcome}`
  })
  return [
    `plan ${plan.id} is ${plan.state} (version ${plan.version}, ${plan.revisions.length} of ` +
      `${plan.maxRevisions} revisions used): ${plan.reason}`,
    ...steps,
  ].join('\n')
}

/**
 * MCP tools for plans: `submit_plan` runs a DAG of code steps (each reads its dependencies' outputs under
 * steps/<id>/, a failed step is revised by the reflector), `get_plan` reads its state, waiting a little if asked.
 * Both are the caller's tenant's.
 */
export function registerPlanTools(server: McpServer, execgate: Execgate, caller: TaskCaller): void {
  const step = z.object({
    id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
    description: z.string().optional(),
    language: z.enum(LANGUAGES as unknown as [Language, ...Language[]]),
    code: z
      .string()
      .min(1)
      .describe('the value of its last expression is the step\'s value; read a dependency\'s with read_file("steps/<id>/value.json")'),
    dependsOn: z.array(z.string()).optional().describe('ids of the steps whose outputs it reads'),
    limits: z
      .object({
        timeoutMs: z.number().int().positive().optional(),
        memoryMb: z.number().int().positive().optional(),
        outputBytes: z.number().int().positive().optional(),
        maxAttempts: z.number().int().positive().optional(),
      })
      .optional(),
  })
  server.registerTool(
    'submit_plan',
    {
      title: 'Run a plan of code steps',
      description:
        'Runs a plan: steps of code that depend on each other (a DAG). Each step reads what the ' +
        'steps it depends on produced at steps/<id>/value.json and steps/<id>/files/<path>; ' +
        'independent steps run in parallel; a failed step is revised by the reflector. Returns the ' +
        'plan id at once; call get_plan for its state.',
      inputSchema: {
        goal: z.string().optional().describe('what the plan is for'),
        steps: z.array(step).min(1),
        maxRevisions: z.number().int().min(0).optional(),
      },
    },
    async (input) => {
      let plan: PlanView
      try {
        plan = await execgate.plans.run(input, caller)
      } catch (error) {
        return toolRefusal(error)
      }
      return {
        content: [{ type: 'text' as const, text: describePlan(plan) }],
        structuredContent: plan as unknown as Record<string, unknown>,
      }
    },
  )
  server.registerTool(
    'get_plan',
    {
      title: "A plan's state and its steps'",
      description:
        "The plan's state (RUNNING, REVISING, COMPLETED, FAILED, TERMINATED), its version and revisions, and each step's state and value.",
      inputSchema: {
        id: z.string().min(1),
        waitMs: z.number().int().min(0).max(60_000).optional().describe('wait up to this long for the plan to end'),
      },
    },
    async (input) => {
      const plan = input.waitMs
        ? await execgate.plans.wait(input.id, { ...caller, timeoutMs: input.waitMs }).catch(() => undefined)
        : await execgate.plans.get(input.id, caller)
      if (!plan) return { content: [{ type: 'text' as const, text: `no plan "${input.id}"` }], isError: true }
      return {
        content: [{ type: 'text' as const, text: describePlan(plan) }],
        structuredContent: plan as unknown as Record<string, unknown>,
        isError: plan.state === 'FAILED' || plan.state === 'TERMINATED',
      }
    },
  )
}
