import fs from 'node:fs'
import path from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import { ExecgateError, LANGUAGES, type ExecutionResult, type Language } from '../core'
import { loadConfig } from '../config/load'
import type { SandboxInfo, SandboxSnapshot, SavedArtifact } from '../fabric/sandboxes'
import { createExecgate } from '../index'

/**
 * `execgate sandbox start|exec|cp|save|snapshot|stop|list`. A sandbox lives in the process that started it, and each CLI command
 * is a process of its own, so these talk to a running `execgate serve` over HTTP (`--url`, or EXECGATE_URL; its key
 * in `--key` or EXECGATE_API_KEY). `exec --local` is the exception: it starts a sandbox in this process, copies files
 * in, runs each command given in turn in it, copies files out, and stops it, all in one command.
 */

export interface SandboxCommandHelpers {
  out: NodeJS.WritableStream
  setExit(code: number): void
  readSource(file: string | undefined, lang: Language | undefined): { code: string; language: Language }
}

interface RemoteFlags {
  url?: string
  key?: string
  json?: boolean
}

const positive =
  (flag: string) =>
  (value: string): number => {
    const parsed = Number(value)
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < 1)
      throw new InvalidArgumentError(`${flag} must be a positive whole number, got "${value}"`)
    return parsed
  }
const repeatable = (value: string, previous: string[]) => [...previous, value]

function usage(detail: string): ExecgateError {
  return new ExecgateError('EXECGATE_CLI_USAGE', { detail })
}

/** A client of one server's sandbox routes. */
function remote(flags: RemoteFlags) {
  const base = (flags.url ?? process.env.EXECGATE_URL ?? '').replace(/\/+$/, '')
  if (!base)
    throw usage(
      'sandboxes live in a running server: give --url of an `execgate serve` (or set ' +
        'EXECGATE_URL), or run commands in a sandbox for this command only with `execgate ' +
        'sandbox exec --local`',
    )
  const key = flags.key ?? process.env.EXECGATE_API_KEY
  return async (method: string, route: string, body?: unknown, accept = 'application/json'): Promise<Response> => {
    const raw = body instanceof Uint8Array
    const response = await fetch(base + route, {
      method,
      headers: {
        accept,
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body === undefined ? {} : { 'content-type': raw ? 'application/octet-stream' : 'application/json' }),
      },
      body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
    })
    if (response.ok) return response
    const text = await response.text()
    let message = text
    try {
      message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text
    } catch {
      // not JSON: the text as it came
    }
    throw new Error(`${message.replace(/^\[execgate\] /, '')} (HTTP ${response.status} from ${base})`)
  }
}

/** `sha256:<digest>` names an artifact of the ledger (the tenant's), copied in by digest. */
const ARTIFACT = /^sha256:([0-9a-fA-F]{64})$/

/** `sb-…:path` names a file in a sandbox; anything else is a local path. */
function sandboxPath(spec: string): { id: string; path: string } | undefined {
  const match = /^([A-Za-z0-9_-]+):(.+)$/.exec(spec)
  return match && !fs.existsSync(spec) ? { id: match[1]!, path: match[2]! } : undefined
}

function line(info: SandboxInfo): string {
  return (
    `${info.id}  ${info.adapter}  execs ${info.execs}  idle timeout ` +
    `${Math.round(info.idleTimeoutMs / 1000)} s  expires ${info.expiresAt}\n`
  )
}

/** Reads a server-sent event stream, writing output as it comes; resolves with the result event. */
async function followExec(response: Response, out: NodeJS.WritableStream): Promise<ExecutionResult> {
  const decoder = new TextDecoder()
  let buffered = ''
  let result: ExecutionResult | undefined
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true })
    let end: number
    while ((end = buffered.indexOf('\n\n')) !== -1) {
      const event = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      const name = /^event: (.*)$/m.exec(event)?.[1]
      const data = /^data: (.*)$/m.exec(event)?.[1]
      if (!name || data === undefined) continue
      if (name === 'result') result = JSON.parse(data) as ExecutionResult
      else if (name === 'stdout') out.write((JSON.parse(data) as { chunk: string }).chunk)
      else if (name === 'stderr') process.stderr.write((JSON.parse(data) as { chunk: string }).chunk)
    }
  }
  if (!result) throw new Error('the server closed the stream without a result')
  return result
}

export function registerSandboxCommands(program: Command, helpers: SandboxCommandHelpers): void {
  const { out, setExit } = helpers
  const sandbox = program.command('sandbox').description('persistent sandboxes: start, exec, copy files, stop (docs/sandboxes.md)')
  const remoteOptions = (command: Command) =>
    command
      .option('--url <url>', 'the execgate server (default: EXECGATE_URL)')
      .option('--key <key>', 'its API key (default: EXECGATE_API_KEY)')
      .option('--json', 'print JSON')

  remoteOptions(sandbox.command('start').description('start a sandbox on the server and print its id'))
    .option('--adapter <name>', "docker, process or shell (default: the server's sandboxes.adapter)")
    .option('--timeout <ms>', 'time limit of each exec', positive('--timeout'))
    .option('--memory <mib>', 'memory limit of each exec', positive('--memory'))
    .option('--idle-timeout <ms>', 'stop it after this long without a call', positive('--idle-timeout'))
    .option('--from <snapshot>', "a snapshot's id (execgate sandbox snapshot): start with its files")
    .action(async (flags: RemoteFlags & { adapter?: string; timeout?: number; memory?: number; idleTimeout?: number; from?: string }) => {
      const call = remote(flags)
      const body = {
        ...(flags.from ? { from: flags.from } : {}),
        ...(flags.adapter ? { adapter: flags.adapter } : {}),
        ...(flags.timeout ? { timeoutMs: flags.timeout } : {}),
        ...(flags.memory ? { memoryMb: flags.memory } : {}),
        ...(flags.idleTimeout ? { idleTimeoutMs: flags.idleTimeout } : {}),
      }
      const info = (await (await call('POST', '/v1/sandboxes', body)).json()) as SandboxInfo
      out.write(flags.json ? `${JSON.stringify(info, null, 2)}\n` : `${info.id}\n`)
    })

  remoteOptions(sandbox.command('exec').description('run a command in a sandbox: exec <id> <command>, or exec --local <command>...'))
    .argument('[args...]', 'the sandbox id then the command; with --local, commands only (each one exec, in order)')
    .option('--local', 'a sandbox in this process, for this command only: no server')
    .option('--adapter <name>', 'with --local: the backend (default: sandboxes.adapter)')
    .option('--in <local[:path]>', 'with --local: copy a local file in first (repeatable)', repeatable, [])
    .option('--out <path[:local]>', 'with --local: copy a sandbox file out at the end (repeatable)', repeatable, [])
    .addOption(new Option('--lang <language>', 'run --code-file as this language instead of a command').choices([...LANGUAGES]))
    .option('--code-file <file>', 'a program to run instead of a command')
    .option('--timeout <ms>', 'time limit of this exec', positive('--timeout'))
    .option('--config <file>', 'with --local: extra JSON config file')
    .action(
      async (
        args: string[],
        flags: RemoteFlags & {
          local?: boolean
          adapter?: string
          in: string[]
          out: string[]
          lang?: Language
          codeFile?: string
          timeout?: number
          config?: string
        },
      ) => {
        const program = flags.codeFile ? helpers.readSource(flags.codeFile, flags.lang) : undefined
        const execOf = (command: string | undefined) => ({
          ...(program ? { language: program.language, code: program.code } : { command }),
          ...(flags.timeout ? { timeoutMs: flags.timeout } : {}),
        })
        if (flags.local) {
          if (args.length === 0 && !program) throw usage('exec --local needs at least one command (or --code-file)')
          setExit(await execLocal(args, flags, execOf, out))
          return
        }
        const [id, ...words] = args
        if (!id || (words.length === 0 && !program))
          throw usage('exec needs the sandbox id and a command: execgate sandbox exec <id> "<command>" --url <server>')
        const call = remote(flags)
        const response = await call(
          'POST',
          `/v1/sandboxes/${encodeURIComponent(id)}/exec`,
          execOf(words.join(' ')),
          flags.json ? 'application/json' : 'text/event-stream',
        )
        const result = flags.json ? ((await response.json()) as ExecutionResult) : await followExec(response, out)
        if (flags.json) out.write(`${JSON.stringify(result)}\n`)
        else if (result.status !== 'ok')
          process.stderr.write(`[execgate] ${result.status}: ${result.message ?? result.error?.message ?? ''}\n`)
        setExit(result.status === 'ok' ? 0 : 1)
      },
    )

  remoteOptions(
    sandbox
      .command('cp')
      .description(
        'copy a file in (cp ./data.csv SB:data.csv, or an artifact: cp sha256:<digest> SB:data.csv) or out (cp SB:out.txt ./out.txt)',
      ),
  )
    .argument('<from>')
    .argument('<to>')
    .action(async (from: string, to: string, flags: RemoteFlags) => {
      const call = remote(flags)
      const artifact = ARTIFACT.exec(from)?.[1]
      const source = artifact ? undefined : sandboxPath(from)
      const target = sandboxPath(to)
      if (artifact) {
        if (!target) throw usage('an artifact is copied into a sandbox: execgate sandbox cp sha256:<digest> <sandbox id>:<path>')
        const filePath = target.path.split('/').map(encodeURIComponent).join('/')
        await call('PUT', `/v1/sandboxes/${encodeURIComponent(target.id)}/files/${filePath}?sha256=${artifact}`)
        return
      }
      if (source && target) throw usage('cp copies between this machine and a sandbox; one side must be a local path')
      if (target) {
        await call(
          'PUT',
          `/v1/sandboxes/${encodeURIComponent(target.id)}/files/${target.path.split('/').map(encodeURIComponent).join('/')}`,
          fs.readFileSync(from),
        )
      } else if (source) {
        const response = await call(
          'GET',
          `/v1/sandboxes/${encodeURIComponent(source.id)}/files/${source.path.split('/').map(encodeURIComponent).join('/')}`,
          undefined,
          'application/octet-stream',
        )
        const local = fs.existsSync(to) && fs.statSync(to).isDirectory() ? path.join(to, path.basename(source.path)) : to
        fs.writeFileSync(local, Buffer.from(await response.arrayBuffer()))
      } else {
        throw usage('cp needs one side as <sandbox id>:<path>, e.g. execgate sandbox cp ./data.csv sb-1234:data.csv')
      }
    })

  remoteOptions(
    sandbox
      .command('save')
      .description(
        'store a sandbox file in the artifact ledger and print its sha256 (GET ' +
          '/v1/artifacts/<sha256>, or cp sha256:<digest> into another sandbox)',
      ),
  )
    .argument('<id>')
    .argument('<path>')
    .action(async (id: string, file: string, flags: RemoteFlags) => {
      const saved = (await (
        await remote(flags)('POST', `/v1/sandboxes/${encodeURIComponent(id)}/artifacts`, { path: file })
      ).json()) as SavedArtifact
      out.write(flags.json ? `${JSON.stringify(saved, null, 2)}\n` : `${saved.sha256}\n`)
    })

  remoteOptions(
    sandbox
      .command('snapshot')
      .description("snapshot a sandbox's files into the ledger and print the snapshot's id (sandbox start --from <id> restores it)"),
  )
    .argument('<id>')
    .action(async (id: string, flags: RemoteFlags) => {
      const snapshot = (await (await remote(flags)('POST', `/v1/sandboxes/${encodeURIComponent(id)}/snapshots`)).json()) as SandboxSnapshot
      out.write(flags.json ? `${JSON.stringify(snapshot, null, 2)}\n` : `${snapshot.id}\n`)
    })

  remoteOptions(sandbox.command('stop').description('stop a sandbox and delete its workspace'))
    .argument('<id>')
    .action(async (id: string, flags: RemoteFlags) => {
      await remote(flags)('DELETE', `/v1/sandboxes/${encodeURIComponent(id)}`)
      if (!flags.json) out.write(`stopped ${id}\n`)
    })

  remoteOptions(sandbox.command('list').description('list your live sandboxes on the server')).action(async (flags: RemoteFlags) => {
    const { sandboxes } = (await (await remote(flags)('GET', '/v1/sandboxes')).json()) as { sandboxes: SandboxInfo[] }
    if (flags.json) out.write(`${JSON.stringify(sandboxes, null, 2)}\n`)
    else for (const info of sandboxes) out.write(line(info))
  })
}

/** `exec --local`: start, copy in, each command in turn, copy out, stop; the exit code is the last exec's. */
async function execLocal(
  commands: string[],
  flags: { adapter?: string; in: string[]; out: string[]; config?: string; json?: boolean },
  execOf: (command: string | undefined) => object,
  out: NodeJS.WritableStream,
): Promise<number> {
  const config = loadConfig({ file: flags.config })
  // The backend asked for is enabled for this command, as `run --adapter` does.
  const enabled =
    flags.adapter && !config.execution.enabled.includes(flags.adapter) ? [...config.execution.enabled, flags.adapter] : undefined
  const overrides = {
    readiness: { enabled: false },
    ...(config.log.level === 'info' ? { log: { level: 'warn' as const } } : {}),
    ...(enabled ? { execution: { enabled } } : {}),
  }
  const execgate = await createExecgate({ config: loadConfig({ file: flags.config, overrides }), warm: false })
  try {
    const sandbox = await execgate.sandboxes.start(flags.adapter ? { adapter: flags.adapter } : {})
    for (const spec of flags.in) {
      const [local, inside] = spec.includes(':')
        ? [spec.slice(0, spec.lastIndexOf(':')), spec.slice(spec.lastIndexOf(':') + 1)]
        : [spec, path.basename(spec)]
      await sandbox.writeFile(inside!, fs.readFileSync(local!))
    }
    let last: ExecutionResult | undefined
    for (const command of commands.length ? commands : [undefined]) {
      let streamed = false
      last = await sandbox.exec(
        execOf(command),
        flags.json ? {} : { onOutput: (stream, chunk) => ((streamed = true), (stream === 'stdout' ? out : process.stderr).write(chunk)) },
      )
      if (flags.json) out.write(`${JSON.stringify(last)}\n`)
      else if (!streamed) {
        // Output a backend answered only with its result (a refusal before anything ran).
        out.write(last.stdout)
        process.stderr.write(last.stderr)
      }
      if (last.status !== 'ok') {
        if (!flags.json) process.stderr.write(`[execgate] ${last.status}: ${last.message ?? last.error?.message ?? ''}\n`)
        break
      }
    }
    for (const spec of flags.out) {
      const [inside, local] = spec.includes(':')
        ? [spec.slice(0, spec.indexOf(':')), spec.slice(spec.indexOf(':') + 1)]
        : [spec, path.basename(spec)]
      fs.writeFileSync(local!, await sandbox.readFile(inside!))
    }
    return last?.status === 'ok' ? 0 : 1
  } finally {
    await execgate.dispose()
  }
}
