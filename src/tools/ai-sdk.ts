import { jsonSchema, tool, type Tool } from 'ai'
import {
  answerText,
  codeToolDescription,
  codeToolInputSchema,
  runCodeTool,
  toolAnswer,
  type CodeToolAnswer,
  type CodeToolInput,
  type CodeToolOptions,
} from './code-tool'

/**
 * `execgate/ai-sdk`: a Vercel AI SDK tool (ai ^6) that runs the model's code with execgate, in-process or remote.
 *
 *   const tools = { execute_code: executeCodeTool({ execgate: new ExecgateClient({ url, apiKey }) }) }
 *   await generateText({ model, tools, stopWhen: stepCountIs(5), prompt })
 *
 * The model reads status, output, value and error as JSON; images a run made reach it as image content.
 */

export type { CodeToolOptions, CodeToolAnswer, CodeToolInput, CodeRunner, SandboxLike } from './code-tool'

export function executeCodeTool(options: CodeToolOptions): Tool<CodeToolInput, CodeToolAnswer> {
  return tool<CodeToolInput, CodeToolAnswer>({
    description: codeToolDescription(options),
    inputSchema: jsonSchema<CodeToolInput>(codeToolInputSchema(options.languages)),
    execute: async (input, { abortSignal }) => toolAnswer(await runCodeTool(options, input, abortSignal)),
    toModelOutput: ({ output }) => {
      if (!output.images?.length) return { type: 'json', value: JSON.parse(answerText(output)) }
      return {
        type: 'content',
        value: [
          { type: 'text', text: answerText(output) },
          ...output.images.map((image) => ({ type: 'image-data' as const, data: image.data, mediaType: image.mimeType })),
        ],
      }
    },
  })
}
