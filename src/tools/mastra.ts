import { createTool } from '@mastra/core/tools'
import { z } from 'zod'
import type { Language } from '../core/types'
import { answerText, codeToolDescription, runCodeTool, toolAnswer, type CodeToolOptions } from './code-tool'

/**
 * `execgate/mastra`: a Mastra tool (@mastra/core 0.24, the last line that runs on Node 20) that runs the model's code
 * with execgate, in-process or remote.
 *
 *   const agent = new Agent({ name: 'analyst', instructions, model, tools: { execute_code: executeCodeTool({ execgate }) } })
 *
 * The answer is JSON text (status, output, value, error; images named by kind and size, not inlined: base64 in a text
 * result is noise to a model). Text, not an object: Mastra 0.24 takes any result object with a `value` key for an AI
 * SDK `{ type, value }` output and hands the model only `value`, which would hide status and output from it.
 */

export type { CodeToolOptions, CodeToolAnswer, CodeToolInput, CodeRunner, SandboxLike } from './code-tool'

const ALL_LANGUAGES = ['python', 'javascript', 'typescript', 'bash'] as const

export function executeCodeTool(options: CodeToolOptions) {
  const languages = (options.languages ?? ALL_LANGUAGES) as readonly Language[]
  return createTool({
    id: options.name ?? 'execute_code',
    description: codeToolDescription(options),
    inputSchema: z.object({
      language: z.enum(languages as [Language, ...Language[]]).describe('the language of the code'),
      code: z.string().describe('the program; the value of its last expression is returned as value'),
    }),
    execute: async ({ context }, invocation) => {
      const answer = toolAnswer(await runCodeTool(options, context, (invocation as { abortSignal?: AbortSignal } | undefined)?.abortSignal))
      return answerText(answer)
    },
  })
}
