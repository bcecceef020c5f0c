import { tool, type DynamicStructuredTool } from '@langchain/core/tools'
import type { ExecutionResult } from '../core/types'
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
 * `execgate/langchain`: a LangChain.js tool (@langchain/core ^1) that runs the model's code with execgate, in-process
 * or remote.
 *
 *   const codeTool = executeCodeTool({ execgate: new ExecgateClient({ url, apiKey }) })
 *   const model = chatModel.bindTools([codeTool])        // or createAgent({ model, tools: [codeTool] })
 *
 * `content_and_artifact`: the ToolMessage's content is what the model reads (status, output, value, error as JSON text,
 * then any images as image_url data-URL blocks); its artifact is the whole ExecutionResult, for the application.
 */

export type { CodeToolOptions, CodeToolAnswer, CodeToolInput, CodeRunner, SandboxLike } from './code-tool'

type ContentBlock = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } }

export function executeCodeTool(options: CodeToolOptions): DynamicStructuredTool {
  return tool(
    async (input: CodeToolInput, config): Promise<[string | ContentBlock[], ExecutionResult]> => {
      const result = await runCodeTool(options, input, (config as { signal?: AbortSignal } | undefined)?.signal)
      const answer = toolAnswer(result)
      if (!answer.images?.length) return [answerText(answer), result]
      return [
        [
          { type: 'text', text: answerText(answer) },
          ...answer.images.map((image) => ({
            type: 'image_url' as const,
            image_url: { url: `data:${image.mimeType};base64,${image.data}` },
          })),
        ],
        result,
      ]
    },
    {
      name: options.name ?? 'execute_code',
      description: codeToolDescription(options),
      schema: codeToolInputSchema(options.languages),
      responseFormat: 'content_and_artifact',
    },
  ) as DynamicStructuredTool
}
