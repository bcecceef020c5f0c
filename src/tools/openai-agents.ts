import { tool, type FunctionTool } from '@openai/agents'
import {
  answerText,
  codeToolDescription,
  codeToolInputSchema,
  runCodeTool,
  toolAnswer,
  type CodeToolInput,
  type CodeToolOptions,
} from './code-tool'

/**
 * `execgate/openai-agents`: a function tool for the OpenAI Agents SDK (@openai/agents) that runs the model's code
 * with execgate, in-process or remote.
 *
 *   const agent = new Agent({ name: 'analyst', tools: [executeCodeTool({ execgate: client })] })
 *   await run(agent, 'What is the total of these orders?')
 *
 * Strict JSON-schema parameters (language, code). The model reads status, output, value and error as JSON text;
 * images a run made are added as image content (`{ type: 'image' }`), which the Responses API passes to the model.
 */

export type { CodeToolOptions, CodeToolAnswer, CodeToolInput, CodeRunner, SandboxLike } from './code-tool'

export function executeCodeTool(options: CodeToolOptions): FunctionTool<unknown, ReturnType<typeof codeToolInputSchema>> {
  return tool({
    name: options.name ?? 'execute_code',
    description: codeToolDescription(options),
    parameters: codeToolInputSchema(options.languages),
    strict: true,
    execute: async (input, _context, details) => {
      const answer = toolAnswer(await runCodeTool(options, input as unknown as CodeToolInput, details?.signal))
      if (!answer.images?.length) return answerText(answer)
      return [
        { type: 'text' as const, text: answerText(answer) },
        ...answer.images.map((image) => ({ type: 'image' as const, image: { data: image.data, mediaType: image.mimeType } })),
      ]
    },
  }) as FunctionTool<unknown, ReturnType<typeof codeToolInputSchema>>
}
