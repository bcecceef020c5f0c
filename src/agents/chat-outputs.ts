import { describeOutputs, tableMarkdown, type Output } from '../core'

/**
 * A run's rich outputs in a chat answer (Markdown): what was made in words, each chart as an inline image (a data:
 * URL, so the answer stands alone), each table as a Markdown table, HTML and JSON items as code blocks.
 */
export function chatOutputs(outputs: readonly Output[] | undefined): string {
  if (!outputs?.length) return ''
  let chart = 0
  const parts = outputs.map((output) => {
    switch (output.kind) {
      case 'image':
        chart++
        return `![chart ${chart}](data:${output.mimeType};base64,${output.data})`
      case 'table':
        return tableMarkdown(output)
      case 'html':
        return `\`\`\`html\n${output.data}\n\`\`\``
      case 'json':
        return `\`\`\`json\n${JSON.stringify(output.data, null, 2)}\n\`\`\``
    }
  })
  return `\n\nMade ${describeOutputs(outputs)}.\n\n${parts.join('\n\n')}`
}
