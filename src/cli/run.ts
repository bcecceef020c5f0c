import fs from 'node:fs'
import path from 'node:path'
import { ADAPTERS } from '../../adapters/registry'
import {
  LANGUAGES,
  describeError,
  type ExecutionResult,
  type FileReference,
  type FilesystemAccess,
  type Language,
  type SecurityPolicy,
  workspaceFileBytes,
} from '../core'
import { loadConfig, type Config } from '../config/load'
import { LOCAL_TENANT } from '../execution/uploaded-files'
import { createExecgate, type Execgate } from '../index'
import { policyFromConfig, profilesFromConfig } from '../policy'
import { DirectoryLayer, MemoryWorkspace, OverlayWorkspace, normalizeWorkspacePath, type Workspace } from '../workspace'
import { formatResult, formatValidation } from './format'
import { writeOutputFiles } from './output-files'
import { EXIT_USAGE, usage } from './usage'

/** `execgate run` and `execgate validate`: a file's code, its language, the operator's policy and one execgate for it. */

export const EXTENSION_LANGUAGES: Record<string, Language> = {
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
  '.ts': 'typescript',
  '.py': 'python',
  '.sh': 'bash',
  '.bash': 'bash',
}

export interface RunFlags {
  lang?: Language
  adapter?: string
  timeout?: number
  memory?: number
  json?: boolean
  config?: string
  fs?: FilesystemAccess
  workspace?: string
  saveFiles?: string
  /** `--out DIR`: the run's rich outputs written there as files (src/cli/output-files.ts). */
  out?: string
  profile?: string
  file?: string[]
}

export function readSource(file: string | undefined, lang: Language | undefined): { code: string; language: Language } {
  if (!file || file === '-') {
    if (!lang) throw usage('reading code from standard input needs --lang (one of: ' + LANGUAGES.join(', ') + ')')
    return { code: fs.readFileSync(0, 'utf8'), language: lang }
  }
  const language = lang ?? EXTENSION_LANGUAGES[path.extname(file).toLowerCase()]
  if (!language) {
    throw usage(`cannot tell the language of "${file}" from its extension; pass --lang (one of: ${LANGUAGES.join(', ')})`)
  }
  let code: string
  try {
    code = fs.readFileSync(file, 'utf8')
  } catch (error) {
    throw usage(`cannot read "${file}": ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : describeError(error)}`)
  }
  return { code, language }
}

/**
 * The policy for a CLI run: the configured defaults, with --timeout, --memory and --fs as the operator sets them.
 * `--workspace` without `--fs` means `sandboxed`: writes land in memory, never in the directory.
 */
export function operatorPolicy(
  config: Config,
  flags: Pick<RunFlags, 'timeout' | 'memory' | 'fs' | 'workspace' | 'profile'>,
): SecurityPolicy {
  const base = flags.profile ? profileNamed(config, flags.profile) : policyFromConfig(config)
  const filesystem = flags.fs ?? (flags.workspace ? 'sandboxed' : undefined)
  return Object.freeze({
    ...base,
    ...(flags.timeout ? { wallTimeMs: flags.timeout, cpuTimeMs: Math.max(base.cpuTimeMs, flags.timeout) } : {}),
    ...(flags.memory ? { memoryMb: flags.memory } : {}),
    ...(filesystem ? { filesystem } : {}),
  })
}

/** `--profile NAME`: a profile from security.profiles (the shipped `data` one among them); the operator may use any. */
function profileNamed(config: Config, name: string): SecurityPolicy {
  const profiles = profilesFromConfig(config)
  const profile = profiles[name]
  if (!profile) throw usage(`--profile: no policy profile named "${name}"; profiles: ${Object.keys(profiles).join(', ') || 'none'}`)
  return profile
}

/**
 * `--file PATH` (repeatable): the request's own files, by their base name, read by the code from its workspace. Each is
 * streamed into the upload store (the same bytes again are reused, not stored twice) and named by digest, so the
 * process and docker tiers bind it in read-only: a 100 MB CSV is never read into memory or copied through JSON.
 */
async function requestFiles(paths: readonly string[] | undefined, uploads: Execgate['uploads']): Promise<FileReference[]> {
  const files: FileReference[] = []
  for (const file of paths ?? []) {
    try {
      fs.accessSync(file, fs.constants.R_OK)
      if (!fs.statSync(file).isFile()) throw new Error('not a file')
    } catch {
      throw usage(`--file: cannot read "${file}"`)
    }
    const stored = await uploads.put(LOCAL_TENANT, fs.createReadStream(file))
    files.push({ path: path.basename(file), sha256: stored.sha256 })
  }
  return files
}

/** `--workspace DIR` as the read-only stable layer under an in-memory overlay. */
function workspaceFromFlag(directory: string | undefined, config: Config): Workspace | undefined {
  if (directory === undefined) return undefined
  let stat: fs.Stats
  try {
    stat = fs.statSync(directory)
  } catch {
    throw usage(`--workspace: "${directory}" does not exist; give a directory to use as the read-only workspace`)
  }
  if (!stat.isDirectory()) throw usage(`--workspace: "${directory}" is not a directory`)
  return new OverlayWorkspace(new DirectoryLayer(directory, config.workspace.maxFileBytes), new MemoryWorkspace(config.workspace))
}

/** `--save-files DIR`: the files the run wrote, saved so nothing is lost with the in-memory overlay. */
function saveFiles(directory: string, result: ExecutionResult): string[] {
  const saved: string[] = []
  for (const file of result.files ?? []) {
    const target = path.join(directory, normalizeWorkspacePath(file.path))
    fs.mkdirSync(path.dirname(target), { recursive: true })
    fs.writeFileSync(target, workspaceFileBytes(file))
    saved.push(target)
  }
  return saved
}

export async function withExecgate<T>(flags: { config?: string; adapter?: string }, body: (execgate: Execgate) => Promise<T>): Promise<T> {
  const config = loadConfig({ file: flags.config })
  // A pinned adapter that is not enabled by config is enabled for this run: the operator asked for it.
  const enabled =
    flags.adapter && !config.execution.enabled.includes(flags.adapter) ? [...config.execution.enabled, flags.adapter] : undefined
  if (flags.adapter && !ADAPTERS[flags.adapter]) {
    throw usage(`--adapter: unknown adapter "${flags.adapter}"; known adapters: ${Object.keys(ADAPTERS).join(', ')}`)
  }
  // One command, no schedule: `adapters` checks once itself.
  // The result is the command's output: the per-run log line (info) is for services, so the default level is lifted.
  // One record per command: the ledger writes it on this thread at dispose rather than start a writer thread for it.
  const overrides = {
    readiness: { enabled: false },
    fabric: { ledger: { writer: 'inline' as const } },
    ...(config.log.level === 'info' ? { log: { level: 'warn' as const } } : {}),
    ...(enabled ? { execution: { enabled } } : {}),
  }
  // One request per command: no adapter starts a worker or interpreter until the run routed to it needs one.
  const execgate = await createExecgate({ config: loadConfig({ file: flags.config, overrides }), warm: false })
  try {
    return await body(execgate)
  } finally {
    await execgate.dispose()
  }
}

export async function runCommand(file: string | undefined, flags: RunFlags, out: NodeJS.WritableStream): Promise<number> {
  const { code, language } = readSource(file, flags.lang)
  return withExecgate(flags, async (execgate) => {
    const basePolicy = operatorPolicy(execgate.config, flags)
    const workspace = workspaceFromFlag(flags.workspace, execgate.config)
    const files = await requestFiles(flags.file, execgate.uploads)
    const result: ExecutionResult = await execgate.execute(
      { language, code, ...(files.length ? { files } : {}), ...(flags.adapter ? { adapter: flags.adapter } : {}) },
      { basePolicy, ...(workspace ? { workspace } : {}) },
    )
    out.write(flags.json ? JSON.stringify(result) + '\n' : formatResult(result))
    if (flags.out && result.outputs?.length) {
      const written = writeOutputFiles(flags.out, result.outputs)
      if (!flags.json) out.write(`wrote ${written.length} output file(s): ${written.join(', ')}\n`)
    }
    if (flags.saveFiles && result.files?.length) {
      const saved = saveFiles(flags.saveFiles, result)
      if (!flags.json) out.write(`saved ${saved.length} file(s) under ${flags.saveFiles}\n`)
    }
    return result.status === 'ok' ? 0 : result.status === 'invalid_request' ? EXIT_USAGE : 1
  })
}

export async function validateCommand(
  file: string,
  flags: Pick<RunFlags, 'lang' | 'adapter' | 'json' | 'config'>,
  out: NodeJS.WritableStream,
): Promise<number> {
  const { code, language } = readSource(file, flags.lang)
  return withExecgate(flags, async (execgate) => {
    const report = await execgate.validate(code, language, flags.adapter)
    out.write(flags.json ? JSON.stringify(report) + '\n' : formatValidation(report))
    return report.valid ? 0 : 1
  })
}
