/**
 * What a bash script needs, read from its syntax tree without running it: the commands it names (and whether any
 * name is only known at run time), and how many commands it has, for cost estimates. Shared by the shell adapter
 * (can it run this?) and the process adapter (what would it cost there?). The parser is just-bash's own, so "the
 * native tier can parse it" means exactly that; it is loaded on first use.
 */

export interface ShellScriptScan {
  /** Literal command names, in order of first appearance (builtins, functions and programs alike). */
  commands: string[]
  /** Functions the script defines; calling one needs no program. */
  functions: string[]
  /** Why a command cannot be known before the run (`$cmd args`, `eval "$x"`, `source file`), if one cannot. */
  dynamic?: string
  /** Simple commands in the script, counted once each: each is a pass over the data it is given. */
  stages: number
  /** Set when just-bash cannot parse the script. */
  syntaxError?: string
}

import { LruCache } from '../../src/runtime/lru-cache'
import { requireJustBash } from './just-bash'

type AstNode = { type?: string; [key: string]: unknown }
type Parse = (script: string) => AstNode

let parser: Parse | undefined
function parseScript(script: string): AstNode {
  parser ??= requireJustBash<{ parse: Parse }>().parse
  return parser(script)
}

/** Scripts longer than this are not scanned on the serving thread; routing treats them as unknown. */
export const MAX_SCANNED_SCRIPT_BYTES = 64 * 1024

/** Commands whose arguments name another command to run (`xargs grep`, `timeout 5 sort`, `env X=1 awk`). */
const COMMAND_RUNNERS = new Set(['xargs', 'timeout', 'time', 'env', 'command', 'exec', 'nice', 'nohup', 'builtin'])
/** Commands that run a script given as text (`bash -c '…'`, `eval '…'`). */
const SCRIPT_RUNNERS = new Set(['bash', 'sh', 'eval'])
/** Commands that run a file's contents, unknown before the run. */
const FILE_RUNNERS = new Set(['source', '.'])

/** The literal text of a word, or undefined when part of it is expanded at run time. */
function literalWord(word: unknown): string | undefined {
  const parts = (word as { parts?: AstNode[] } | undefined)?.parts
  if (!parts) return undefined
  let text = ''
  for (const part of parts) {
    if (part.type === 'Literal' || part.type === 'SingleQuoted' || part.type === 'Escaped') text += String(part.value ?? '')
    // `[` (the test command) parses as the start of a glob pattern.
    else if (part.type === 'Glob' && typeof part.pattern === 'string' && part.pattern === '[') text += '['
    else if (part.type === 'DoubleQuoted') {
      const inner = literalWord(part)
      if (inner === undefined) return undefined
      text += inner
    } else return undefined
  }
  return text
}

// Routing asks about the same script several times (can the shell run it? what would each tier cost?), and
// agents resend scripts: the 256 most recent scans are kept.
const scans = new LruCache<ShellScriptScan>(256)

/** The scan of a script (cached; treat it as read-only). */
export function scanShellScript(script: string): ShellScriptScan {
  return scans.get(script, () => scanUncached(script))
}

function scanUncached(script: string): ShellScriptScan {
  const scan: ShellScriptScan = { commands: [], functions: [], stages: 0 }
  if (Buffer.byteLength(script) > MAX_SCANNED_SCRIPT_BYTES) {
    return { ...scan, dynamic: `the script is over ${MAX_SCANNED_SCRIPT_BYTES} bytes and is not scanned` }
  }
  let tree: AstNode
  try {
    tree = parseScript(script)
  } catch (error) {
    return { ...scan, syntaxError: error instanceof Error ? error.message : String(error) }
  }
  const seen = new Set<string>()
  const name = (command: string) => {
    if (!seen.has(command)) scan.commands.push(command)
    seen.add(command)
  }
  const visitScriptText = (text: string, depth: number) => {
    if (depth > 8) return (scan.dynamic ??= 'scripts nested more than 8 deep')
    const inner = scanShellScript(text)
    if (inner.syntaxError) scan.dynamic ??= `a nested script does not parse: ${inner.syntaxError}`
    if (inner.dynamic) scan.dynamic ??= inner.dynamic
    inner.commands.forEach(name)
    scan.functions.push(...inner.functions)
    scan.stages += inner.stages
  }
  const visitCommand = (node: AstNode) => {
    if (node.name === undefined || node.name === null) return // assignments only (`x=1`)
    scan.stages++
    const command = literalWord(node.name)
    if (command === undefined) return (scan.dynamic ??= 'a command name is only known at run time')
    name(command)
    const args = ((node.args as unknown[]) ?? []).map(literalWord)
    if (FILE_RUNNERS.has(command)) scan.dynamic ??= `\`${command}\` runs a file whose commands are only known at run time`
    else if (SCRIPT_RUNNERS.has(command)) {
      const text = command === 'eval' ? (args.includes(undefined) ? undefined : args.join(' ')) : args[args.indexOf('-c') + 1]
      if (command !== 'eval' && !args.includes('-c')) scan.dynamic ??= `\`${command}\` without -c runs a file or stdin`
      else if (text === undefined) scan.dynamic ??= `\`${command}\` runs text only known at run time`
      else visitScriptText(text, 1)
    } else if (COMMAND_RUNNERS.has(command)) {
      // The first argument that is neither an option, an assignment (env) nor a duration (timeout) is the command.
      const rest = command === 'timeout' ? args.slice(args.findIndex((arg) => arg !== undefined && !arg.startsWith('-')) + 1) : args
      const target = rest.find((arg) => arg === undefined || (!arg.startsWith('-') && !(command === 'env' && arg.includes('='))))
      if (target === undefined && rest.includes(undefined)) scan.dynamic ??= `\`${command}\` runs a command only known at run time`
      else if (target !== undefined) name(target)
    }
  }
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk)
    if (!value || typeof value !== 'object') return
    const node = value as AstNode
    if (node.type === 'SimpleCommand') visitCommand(node)
    if (node.type === 'FunctionDef' && typeof node.name === 'string') scan.functions.push(node.name)
    for (const key of Object.keys(node)) if (key !== 'name' || node.type !== 'SimpleCommand') walk(node[key])
  }
  walk(tree)
  return scan
}

/** A linear cost model: a fixed cost per script plus a cost per input byte for each command that reads it. */
export interface ShellCostModel {
  startupMs: number
  nsPerByteStage: number
}

export function estimateShellMs(scan: ShellScriptScan, inputBytes: number, model: ShellCostModel): number {
  return model.startupMs + (model.nsPerByteStage * inputBytes * Math.max(1, scan.stages)) / 1e6
}

/** Bytes of the files a run was handed, for the cost model's per-byte part. */
export function inputBytesOf(files: readonly { content: string }[] | undefined): number {
  let bytes = 0
  for (const file of files ?? []) bytes += file.content.length
  return bytes
}

/**
 * A cost model whose fixed part is learned from the adapter's own finished runs. A constant measured once goes
 * stale with the machine's load: bubblewrap's start took 19 ms on a quiet machine and 45 ms at load average 17, which
 * moved the crossover with the native shell from about 60 KB to 220 KB of input. Each `ok` run's wall time, less its
 * per-byte part, moves the fixed cost a fifth of the way (an exponential moving average); the per-byte part stays
 * the configured one, since it is a property of the tools, not of the machine's load.
 */
export class CalibratedShellCost {
  private startupMs: number

  constructor(private readonly model: ShellCostModel) {
    this.startupMs = model.startupMs
  }

  estimate(scan: ShellScriptScan, inputBytes: number): number {
    return estimateShellMs(scan, inputBytes, { startupMs: this.startupMs, nsPerByteStage: this.model.nsPerByteStage })
  }

  observe(scan: ShellScriptScan, inputBytes: number, wallMs: number): void {
    const fixed = wallMs - (this.model.nsPerByteStage * inputBytes * Math.max(1, scan.stages)) / 1e6
    // A run that took less than nothing per byte, or ten times the estimate, says more about the run than the machine.
    if (!Number.isFinite(fixed) || fixed <= 0 || fixed > this.startupMs * 10) return
    this.startupMs += (fixed - this.startupMs) / 5
  }

  /** The fixed cost now (for the docs' bench and tests). */
  currentStartupMs(): number {
    return this.startupMs
  }
}
