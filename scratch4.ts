import { spawn } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { ProcessAdapter } from './adapters/process'
import { sandboxCommand } from './adapters/process/sandbox'
import { DEFAULT_POLICY } from './src/policy'
const B = ['--unshare-all', '--as-pid-1', '--die-with-parent', '--new-session', '--clearenv', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/workspace', '--chdir', '/workspace']
const ctx = () => ({ traceId: 't', policy: DEFAULT_POLICY, signal: new AbortController().signal, deadline: performance.now() + 5000 })
function run(file: string, args: string[], stdio: any[], write?: string): Promise<void> {
  return new Promise((res) => { const c = spawn(file, args, { stdio, uid: 61014, gid: 61014, detached: true, env: {} }); if (write) { (c.stdio[3] as any).end(write); (c.stdio[3] as any).resume() } c.stdout!.resume(); c.stderr?.resume(); c.on('close', () => res()) })
}
async function time(name: string, fn: () => Promise<unknown>) {
  for (let i = 0; i < 5; i++) await fn()
  const s: number[] = []
  for (let i = 0; i < 60; i++) { const t = performance.now(); await fn(); s.push(performance.now() - t) }
  s.sort((a, b) => a - b); console.log(name.padEnd(40), s[30].toFixed(2))
}
async function main() {
  const a = new ProcessAdapter()
  const plan = (a as any).plan
  const cmd = sandboxCommand(plan, { language: 'python', policy: DEFAULT_POLICY, mode: 'run', withFiles: false, collectFiles: false })
  for (let r = 0; r < 2; r++) {
    await time('raw 3 stdio', () => run('/usr/bin/bwrap', [...B, '/usr/bin/python3', '-I', '-c', 'print(2)'], ['ignore', 'pipe', 'pipe']))
    await time('raw 7 stdio', () => run('/usr/bin/bwrap', [...B, '/usr/bin/python3', '-I', '-c', 'print(2)'], ['pipe', 'pipe', 'pipe', 'pipe', 'ignore', 'pipe', 'ignore']))
    await time('full command, 7 stdio', () => run(cmd.file, cmd.args, ['pipe', 'pipe', 'pipe', 'pipe', 'ignore', 'pipe', 'ignore'], 'print(2)'))
    await time('adapter.execute', () => a.execute({ language: 'python', code: 'print(2)' }, ctx() as any))
  }
}
main()
