import { describeOutputs, tableMarkdown, type ExecutionResult, type ValidationReport } from '../core'

/** Human output for the CLI: the status, the program's output, the value and the duration, in that order. */
export function formatResult(result: ExecutionResult): string {
  const lines = [`status: ${result.status}  (${result.adapter}, ${result.durationMs.toFixed(1)} ms)`]
  if (result.message) lines.push(`message: ${result.message}`)
  if (result.error && result.error.message !== result.message) {
    const where = result.error.line ? ` at line ${result.error.line}${result.error.column ? `, column ${result.error.column}` : ''}` : ''
    lines.push(`error: ${result.error.type}: ${result.error.message}${where}`)
  }
  if (result.stdout) lines.push('--- stdout ---', result.stdout.replace(/\n$/, ''))
  if (result.stderr) lines.push('--- stderr ---', result.stderr.replace(/\n$/, ''))
  if (result.truncated)
    lines.push(`(output cut to the limit: ${result.stdoutBytes} bytes of stdout and ${result.stderrBytes} of stderr were written)`)
  if (result.value !== undefined) lines.push(`value: ${JSON.stringify(result.value)}`)
  if (result.outputs?.length) {
    lines.push(`outputs: ${describeOutputs(result.outputs)}`)
    for (const output of result.outputs) if (output.kind === 'table') lines.push(tableMarkdown(output, 10))
  }
  if (result.files?.length) lines.push(`files written: ${result.files.map((file) => file.path).join(', ')}`)
  if (result.hostCalls?.length) {
    const failed = result.hostCalls.filter((call) => !call.ok).length
    lines.push(`host calls: ${result.hostCalls.length}${failed ? ` (${failed} refused or failed)` : ''}`)
  }
  if (result.fallbackFrom) lines.push(`fell back from ${result.fallbackFrom.adapter}: ${result.fallbackFrom.reason}`)
  // The router's reason already names where it escalated from and why.
  if (result.route?.escalatedFrom) lines.push(result.route.reason)
  // The key of the run's provenance record: `execgate ledger provenance <run id>`.
  if (result.runId) lines.push(`run id: ${result.runId}`)
  return lines.join('\n') + '\n'
}

export function formatValidation(report: ValidationReport): string {
  const lines = [`${report.valid ? 'valid' : 'invalid'} ${report.language} (checked by ${report.validator})`]
  for (const issue of report.issues) {
    const where = issue.line ? `${issue.line}:${issue.column ?? 1} ` : ''
    lines.push(`  ${where}${issue.severity} [${issue.code}] ${issue.message}`)
  }
  return lines.join('\n') + '\n'
}

/** A plain text table with a header row, columns padded to their widest cell. */
export function formatTable(rows: Record<string, string>[]): string {
  if (rows.length === 0) return '(none)\n'
  const columns = Object.keys(rows[0]!)
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => (row[column] ?? '').length)))
  const render = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  return (
    [
      render(columns),
      render(widths.map((width) => '-'.repeat(width))),
      ...rows.map((row) => render(columns.map((c) => row[c] ?? ''))),
    ].join('\n') + '\n'
  )
}
