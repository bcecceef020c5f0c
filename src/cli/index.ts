import fs from 'node:fs'
import path from 'node:path'
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import { ADAPTERS } from '../../adapters/registry'
import {
  ExecgateError,
  FILESYSTEM_ACCESS,
  LANGUAGES,
  describeError,
  isExecgateError,
  type ExecutionResult,
  type FileReference,
  type FilesystemAccess,
  type Language,
  type SecurityPolicy,
  type SyscallFilterSummary,
  workspaceFileBytes,
} from '../core'
import { loadConfig, type Config } from '../config/load'
import { EXECGATE_VERSION } from '../config/version'
import { LOCAL_TENANT } from '../execution/uploaded-files'
import { createExecgate, type Execgate } from '../index'
import { policyFromConfig, profilesFromConfig } from '../policy'
import { DirectoryLayer, MemoryWorkspace, OverlayWorkspace, normalizeWorkspacePath, type Workspace } from '../workspace'
import { formatResult, formatTable, formatValidation } from './format'
import { registerTaskCommands } from './tasks'
import { registerLedgerCommands } from './ledger'
import { registerPlanCommands } from './plans'
import { registerSandboxCommands } from './sandboxes'
import { writeOutputFiles } from './output-files'

/**
 * The operator's command line. Its flags set the policy for that run (an operator may loosen the configured
 * defaults; requests through the API may only tighten them). Exit code 0 only for `ok`; 2 for bad usage.
 */

export const EXTENSION_LANGUAGES: Record<string, Language> = {
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
  '.ts': 'typescript',
  '.py': 'python',
  '.sh': 'bash',
  '.bash': 'bash',
}

const EXIT_USAGE = 2

function positiveInteger(flag: string) {
  return (value: string): number => {
    const parsed = Number(value)
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < 1) {
      throw new InvalidArgumentError(`${flag} must be a positive whole number, got "${value}"`)
    }
    return parsed
  }
}

function nonNegativePort(value: string): number {
  const parsed = Number(value)
  if (!/^\d+$/.test(value.trim()) || parsed > 65535)
    throw new InvalidArgumentError(`--port must be a whole number from 0 to 65535, got "${value}"`)
  return parsed
}

function usage(detail: string): ExecgateError {
  return new ExecgateError('EXECGATE_CLI_USAGE', { detail })
}

interface RunFlags {
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

function readSource(file: string | undefined, lang: Language | undefined): { code: string; language: Language } {
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

async function withExecgate<T>(flags: { config?: string; adapter?: string }, body: (execgate: Execgate) => Promise<T>): Promise<T> {
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

async function runCommand(file: string | undefined, flags: RunFlags, out: NodeJS.WritableStream): Promise<number> {
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

async function validateCommand(
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

async function adaptersCommand(flags: { config?: string; json?: boolean }, out: NodeJS.WritableStream): Promise<number> {
  return withExecgate(flags, async (execgate) => {
    const status = await execgate.checkNow()
    const byName = new Map(status.adapters.map((adapter) => [adapter.name, adapter]))
    const admissionByName = new Map(status.admission.adapters.map((item) => [item.adapter, item]))
    const rows = Object.values(ADAPTERS).map((definition) => {
      const adapter = byName.get(definition.name)
      const admission = admissionByName.get(definition.name)
      const health = adapter?.health
      return {
        adapter: definition.name,
        languages: definition.languages.join(', '),
        tier: adapter ? String(adapter.tier) : '',
        enabled: adapter ? 'yes' : 'no',
        health: health
          ? `${health.state}${health.reason ? ` (${health.reason})` : ''}${health.latencyMs !== undefined ? ` ${Math.round(health.latencyMs)} ms` : ''}`
          : 'not enabled',
        breaker: adapter ? adapter.breaker : '',
        // In use per lane (interactive/batch) of the adapter's slots, the interactive reservation, waiting per lane.
        slots: admission
          ? `${admission.inUse.interactive}/${admission.inUse.batch} of ${admission.slots ?? 'unbounded'}${admission.reserved ? ` (${admission.reserved} interactive)` : ''}`
          : '',
        queued: admission ? `${admission.queued.interactive}/${admission.queued.batch}` : '',
        description: definition.description,
      }
    })
    if (flags.json) {
      out.write(
        JSON.stringify({ active: status.active, lastSwitch: status.lastSwitch ?? null, adapters: rows, admission: status.admission }) +
          '\n',
      )
    } else {
      out.write(formatTable(rows))
      out.write(
        `\nactive adapter: ${status.active}${status.active === 'auto' ? ' (routing picks the cheapest available adapter for each request)' : ''}\n`,
      )
      out.write(
        `slots and queued are interactive/batch; batch runs on in-process tiers: ${status.admission.inProcessBatch.inUse} of ${status.admission.inProcessBatch.limit}\n`,
      )
      out.write(
        `last switch: ${status.lastSwitch ? `${status.lastSwitch.from ?? 'auto'} → ${status.lastSwitch.to ?? 'auto'} at ${status.lastSwitch.at}: ${status.lastSwitch.reason}` : 'none'}\n`,
      )
    }
    return 0
  })
}

/** The seccomp filter's calls, wrapped to the width of a terminal. */
function formatSyscallFilter(filter: SyscallFilterSummary): string {
  const lines = ['', `seccomp filter on every run: ${filter.denied.length} system calls answer EPERM:`]
  let line = ' '
  for (const call of filter.denied) {
    if (line.length + call.length + 1 > 100) (lines.push(line), (line = ' '))
    line += ` ${call}`
  }
  lines.push(line)
  for (const rule of filter.conditional) lines.push(`  ${rule.call}: ${rule.errno} ${rule.when}`)
  lines.push(`  a call through another architecture's ABI: ${filter.foreignArchitecture}`)
  return `${lines.join('\n')}\n`
}

async function policyCommand(
  flags: { config?: string; json?: boolean; adapter: string; profile?: string },
  out: NodeJS.WritableStream,
): Promise<number> {
  return withExecgate(flags, async (execgate) => {
    const explanation = execgate.explainPolicy(flags.adapter, flags.profile)
    const { allowPrivateRanges, ...egressCaps } = execgate.config.security.egress
    // The test-only exemption is named whenever it is set, so it cannot sit in a production config unnoticed.
    const exemption = allowPrivateRanges.length
      ? `WARNING: security.egress.allowPrivateRanges exempts ${allowPrivateRanges.join(', ')} from the egress gateway's private-address check (for tests only)`
      : undefined
    if (flags.json) {
      out.write(JSON.stringify({ ...explanation, egress: { ...egressCaps, allowPrivateRanges } }) + '\n')
    } else {
      out.write(
        formatTable(
          explanation.rows.map((row) => ({
            limit: row.limit,
            setting: row.setting,
            enforcement: row.enforcement,
            required: row.required ? (row.satisfied ? 'yes' : 'yes — NOT ENFORCED') : '',
          })),
        ),
      )
      if (explanation.syscallFilter) out.write(formatSyscallFilter(explanation.syscallFilter))
      if (exemption) out.write(`\n${exemption}\n`)
      out.write(
        `\n${explanation.usable ? `${flags.adapter} can run requests under this policy` : `${flags.adapter} cannot run requests under this policy: a required limit is not enforced`}\n`,
      )
    }
    return explanation.usable ? 0 : 1
  })
}

/** Builds the command tree; `main` runs it. Exposed for tests. */
export function buildProgram(out: NodeJS.WritableStream, setExit: (code: number) => void): Command {
  const program = new Command('execgate')
    .description('Run code for voice and chat agents, safely and fast.')
    .version(EXECGATE_VERSION, '-V, --version', "print execgate's version")
    .exitOverride()
    .configureOutput({ writeOut: (text) => out.write(text), writeErr: (text) => process.stderr.write(text) })
    .showHelpAfterError('(run execgate --help for usage)')

  const languageOption = () =>
    new Option('--lang <language>', 'language of the code (default: from the file extension)').choices([...LANGUAGES])
  const configOption = () => new Option('--config <file>', 'extra JSON config file applied after config/default.json')

  program
    .command('run')
    .description('run a file (or - for standard input) and print the result')
    .argument('[file]', 'file to run; - or nothing reads standard input')
    .addOption(languageOption())
    .option('--adapter <name>', 'run on this adapter instead of routing')
    .option('--timeout <ms>', 'wall-time limit in milliseconds for this run', positiveInteger('--timeout'))
    .option('--memory <mib>', 'memory limit in MiB for this run', positiveInteger('--memory'))
    .addOption(
      new Option(
        '--fs <access>',
        "the code's workspace access (default: security.defaultPolicy.filesystem; sandboxed with --workspace)",
      ).choices([...FILESYSTEM_ACCESS]),
    )
    .option('--workspace <dir>', 'a directory the code reads as its workspace; writes land in memory, never in it')
    .option('--save-files <dir>', 'save the files the code wrote into this directory')
    .option('--out <dir>', 'write the charts, tables and display() items the run made into this directory (output-1.png, …)')
    .option('--profile <name>', 'run under this policy profile from security.profiles (e.g. data: pandas, numpy, matplotlib…)')
    .option(
      '--file <path>',
      'send this file with the request (repeatable); the code reads it from its workspace by its base name',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--json', 'print the ExecutionResult as JSON and nothing else')
    .addOption(configOption())
    .action(async (file: string | undefined, flags: RunFlags) => setExit(await runCommand(file, flags, out)))

  program
    .command('validate')
    .description('check a file against the policy and the adapter without running it')
    .argument('<file>', 'file to check')
    .addOption(languageOption())
    .option('--adapter <name>', 'validate with this adapter')
    .option('--json', 'print the ValidationReport as JSON')
    .addOption(configOption())
    .action(async (file: string, flags: RunFlags) => setExit(await validateCommand(file, flags, out)))

  program
    .command('adapters')
    .description('check and list adapters: languages, health, circuit breaker, the active adapter and its last switch')
    .option('--json', 'print as JSON')
    .addOption(configOption())
    .action(async (flags: { config?: string; json?: boolean }) => setExit(await adaptersCommand(flags, out)))

  program
    .command('serve')
    .description('serve the HTTP API (and MCP at /mcp) until SIGTERM')
    .option('--host <host>', 'address to bind (default: server.host; loopback only without API keys)')
    .option('--port <port>', 'port to bind (default: server.port; 0 for any free port)', nonNegativePort)
    .addOption(configOption())
    .action(async (flags: { host?: string; port?: number; config?: string }) => {
      // Listen at once (/healthz; /readyz 503 until the first tier is warm). The warm-ups start before the server's
      // modules load, so the workers and child processes start while this thread loads fastify.
      const execgate = await createExecgate({ file: flags.config, warm: false, role: 'server' })
      const warm = execgate.ready()
      try {
        const { serve } = await import('../server/serve')
        const running = await serve(execgate, { host: flags.host, port: flags.port })
        // Queued tasks (and those a crash interrupted) run from the start, not from the first task request; after the
        // first tier is warm, so opening the stores (SQLite's native module) does not hold readiness back.
        await warm
        await execgate.tasks.start()
        await execgate.plans.start()
        process.stderr.write(`[execgate] serving on ${running.url}\n`)
        // An operator's (and the soak's) way to see what the server keeps: with node --expose-gc, SIGUSR2 runs a full GC.
        const gc = (globalThis as { gc?: () => void }).gc
        if (gc) process.on('SIGUSR2', () => gc())
      } catch (error) {
        await execgate.dispose()
        throw error
      }
      await new Promise(() => undefined) // until a signal ends the process
    })

  program
    .command('mcp')
    .description('serve the MCP tools (execute_code, validate_code, list_languages) over stdio')
    .addOption(configOption())
    .action(async (flags: { config?: string }) => {
      // Answer the client's handshake at once and warm the adapters meanwhile.
      const execgate = await createExecgate({ file: flags.config, warm: false })
      void execgate.ready()
      try {
        const { serveMcpStdio } = await import('../server/mcp')
        await serveMcpStdio(execgate)
      } finally {
        await execgate.dispose()
      }
    })

  program
    .command('policy')
    .description('show how an adapter enforces each limit of the policy (hard, soft or none)')
    .requiredOption('--adapter <name>', 'the adapter to explain')
    .option('--profile <name>', 'explain this profile from security.profiles instead of the default policy')
    .option('--json', 'print as JSON')
    .addOption(configOption())
    .action(async (flags: { config?: string; json?: boolean; adapter: string; profile?: string }) =>
      setExit(await policyCommand(flags, out)),
    )

  registerTaskCommands(program, { out, setExit, readSource })
  registerLedgerCommands(program, { out, setExit })
  registerPlanCommands(program, { out, setExit })
  registerSandboxCommands(program, { out, setExit, readSource })
  return program
}

/**
 * Runs the CLI; never prints a stack trace for bad input or configuration. `onExitCode` hears a command's exit code as
 * soon as the command knows it: the executable sets `process.exitCode` there, so a process whose event loop empties
 * while it is still closing (seen once in ~50 `plan run --wait` runs: the plan FAILED and printed, exit 0) still exits
 * with the command's code.
 */
export async function main(
  argv: string[] = process.argv,
  out: NodeJS.WritableStream = process.stdout,
  onExitCode: (code: number) => void = () => undefined,
): Promise<number> {
  let exitCode = 0
  const program = buildProgram(out, (code) => onExitCode((exitCode = code)))
  // A command awaits pools, threads and sockets that are unref'd while idle (so a library user's process can end);
  // if every handle is unref'd at one moment mid-command, Node would end the process there with exit code 0 and
  // nothing printed (seen in CI: `plan suspend`, `run --fs none`). This ref'd timer keeps the CLI alive until the
  // command's promise settles.
  const keepAlive = setInterval(() => undefined, 1 << 30)
  try {
    await program.parseAsync(argv)
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are not failures; commander has already printed its message.
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help'
        ? 0
        : EXIT_USAGE
    }
    process.stderr.write(`${isExecgateError(error) ? error.message : `[execgate] ${describeError(error)}`}\n`)
    return isExecgateError(error) && error.fault === 'client' ? EXIT_USAGE : 1
  } finally {
    clearInterval(keepAlive)
  }
  return exitCode
}

if (require.main === module) {
  void main(process.argv, process.stdout, (code) => (process.exitCode = code)).then((code) => {
    process.exitCode = code
  })
}
