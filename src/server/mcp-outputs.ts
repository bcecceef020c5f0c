import { describeOutputs, tableMarkdown, type ExecutionResult } from '../core'

/**
 * A result's rich outputs as MCP content: each image as an MCP image block (what a client shows, or hands a model
 * that sees images), each table as Markdown text, HTML and JSON items as text. In the structured content an image
 * keeps its MIME type and size but not its bytes, which the image block already carries once.
 */

type McpContent = { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string }

export function outputContent(result: ExecutionResult): McpContent[] {
  return (result.outputs ?? []).map((output): McpContent => {
    switch (output.kind) {
      case 'image':
        return { type: 'image', data: output.data, mimeType: output.mimeType }
      case 'table':
        return { type: 'text', text: tableMarkdown(output) }
      case 'html':
        return { type: 'text', text: output.data }
      case 'json':
        return { type: 'text', text: JSON.stringify(output.data) }
    }
  })
}

/** The result for `structuredContent`, images without their bytes (they are in the content). */
export function structuredResult(result: ExecutionResult): Record<string, unknown> {
  if (!result.outputs?.some((output) => output.kind === 'image')) return result as unknown as Record<string, unknown>
  const outputs = result.outputs.map((output, index) =>
    output.kind === 'image' ? { kind: output.kind, mimeType: output.mimeType, bytes: output.bytes, content: index + 1 } : output,
  )
  return { ...result, outputs } as unknown as Record<string, unknown>
}

/** " made 2 charts (PNG), a table (…)." to follow a result's one-line summary, or nothing. */
export function outputsSentence(result: ExecutionResult): string {
  const made = describeOutputs(result.outputs)
  return made ? ` made ${made}.` : ''
}
