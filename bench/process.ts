import { spawn } from 'node:child_process'
import { createExecgate } from '../src'
import { measureInterleaved, ratio, type BenchSection } from './harness'

/** A bare bubblewrap sandbox like the process tier's, for the raw side of the process and seccomp sections. */
export const RAW_BWRAP = [
  '--unshare-all',
  '--as-pid-1',
  '--die-with-parent',
  '--new-session',
  '--clearenv',
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  '--symlink',
  'usr/lib64',
  '/lib64',
  '--proc',
  '/proc',
  '--dev',
  '/dev',
  '--tmpfs',
  '/workspace',
  '--chdir',
  '/workspace',
]

/** One raw bubblewrap run, as the same kind of host uid the adapter uses, awaited the same way (async spawn). */
function rawRun(uid: number | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/bwrap', [...RAW_BWRAP, '/usr/bin/python3', '-I', '-c', 'print(2)'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(uid === undefined ? {} : { uid, gid: uid }),
    })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 && out === '2\n' ? resolve() : reject(new Error(`raw bwrap exited ${code}: ${out}`))))
  })
}

/** Raw `bwrap … python3 -c 'print(2)'` against the same program through execgate's process adapter. */
export async function run(): Promise<BenchSection> {
  const execgate = await createExecgate({
    overrides: { execution: { enabled: ['process'], adapter: 'process' }, log: { level: 'silent' } },
  })
  // The adapter's last uid; free between runs, since the series take turns.
  const uid = process.getuid?.() === 0 ? 61015 : undefined
  try {
    const [raw, service, bash] = await measureInterleaved(
      [
        { name: "raw bwrap … python3 -c 'print(2)'", fn: () => rawRun(uid) },
        {
          name: 'ExecutionService → process adapter: python print(2)',
          fn: async () => {
            const result = await execgate.execute({ language: 'python', code: 'print(2)' })
            if (result.status !== 'ok' || result.stdout !== '2\n') throw new Error(`execgate answered ${result.status}: ${result.message}`)
          },
        },
        {
          name: 'ExecutionService → process adapter: bash echo 2',
          fn: async () => {
            const result = await execgate.execute({ language: 'bash', code: 'echo 2' })
            if (result.status !== 'ok') throw new Error(`execgate answered ${result.status}: ${result.message}`)
          },
        },
      ],
      { iterations: 200, batch: 20, warmup: 5 },
    )
    return {
      title: 'process adapter: raw bubblewrap vs execgate',
      measurements: [raw, service, bash],
      ratios: [ratio('service/raw (python print(2))', service, raw, '≤ 1.2×')],
      notes: [
        'the adapter adds a dash launcher (rlimits, then exec), the runner (.pyc: audit hook, ' +
          'value channel), a uid of its own per run and the service (policy, static checks)',
      ],
    }
  } finally {
    await execgate.dispose()
  }
}
