import { spawn } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { ProcessAdapter } from './adapters/process'
import { sandboxCommand } from './adapters/process/sandbox'
import { DEFAULT_POLICY } from './src/policy'
function run(file: string, args: string[], write?: string): Promise<void> {
  return new Promise((res) => { const c = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'ignore', 'pipe', 'ignore'], uid: 61014, gid: 61014, detached: true, env: {} }); (c.stdio[3] as any).end(write ?? ''); (c.stdio[3] as any).resume(); c.stdout!.resume(); c.stderr?.resume(); c.on('close', () => res()) })
}
async function time(name: string, fn: () => Promise<unknown>) {
  for (let i = 0; i < 5; i++) await fn()
  const s: number[] = []
  for (let i = 0; i < 60; i++) { const t = performance.now(); await fn(); s.push(performance.now() - t) }
  s.sort((a, b) => a - b); console.log(name.padEnd(40), s[30].toFixed(2))
}
async function main() {
  const a = new ProcessAdapter()
  const cmd = sandboxCommand((a as any).plan, { language: 'python', policy: DEFAULT_POLICY, mode: 'run', withFiles: false, collectFiles: false })
  const full = cmd.args
  const dd = full.indexOf('--')
  const noPrlimit = full.slice(dd + 2)
  const launcherAt = noPrlimit.indexOf('/bin/sh')
  const bw = noPrlimit.slice(0, launcherAt)
  const prog = noPrlimit.slice(launcherAt + 4)
  for (let r = 0; r < 2; r++) {
    await time('full', () => run(cmd.file, full, 'print(2)'))
    await time('no prlimit', () => run('/usr/bin/bwrap', noPrlimit, 'print(2)'))
    await time('no prlimit, no launcher', () => run('/usr/bin/bwrap', [...bw, ...prog], 'print(2)'))
    await time('no prlimit, no launcher, no runner', () => run('/usr/bin/bwrap', [...bw, '/usr/bin/python3', '-I', '-c', 'print(2)'], 'print(2)'))
  }
}
main()
