import { spawn } from 'node:child_process'
import { hostSeccompFilter } from '../adapters/shared/seccomp-filter'
import { measureInterleaved, ratio, type BenchSection } from './harness'
import { RAW_BWRAP } from './process'

/**
 * What the process tier's seccomp filter costs: the same raw bubblewrap sandbox with and without `--seccomp`, on a
 * program that starts and prints (the filter's load, once per run) and on one making 200,000 system calls (the
 * filter's ~70 BPF instructions on each call).
 */

const SYSCALLS = 200_000
const PROGRAMS = {
  print: 'print(2)',
  syscalls: `import os\nfor _ in range(${SYSCALLS}): os.getppid()\nprint(2)`,
}

function rawRun(program: string, filter: Buffer | undefined, uid: number | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const args = [...RAW_BWRAP, ...(filter ? ['--seccomp', '3'] : []), '/usr/bin/python3', '-I', '-c', program]
    const child = spawn('/usr/bin/bwrap', args, {
      stdio: ['ignore', 'pipe', 'pipe', filter ? 'pipe' : 'ignore'],
      ...(uid === undefined ? {} : { uid, gid: uid }),
    })
    if (filter) (child.stdio[3] as NodeJS.WritableStream).end(filter)
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 && out === '2\n' ? resolve() : reject(new Error(`bwrap exited ${code}: ${out}`))))
  })
}

export async function run(): Promise<BenchSection> {
  const filter = hostSeccompFilter()
  if (!filter) throw new Error(`no seccomp filter for ${process.arch}`)
  const uid = process.getuid?.() === 0 ? 61014 : undefined
  const [plain, filtered, plainCalls, filteredCalls] = await measureInterleaved(
    [
      { name: "bwrap … python3 -c 'print(2)'", fn: () => rawRun(PROGRAMS.print, undefined, uid) },
      { name: "bwrap --seccomp … python3 -c 'print(2)'", fn: () => rawRun(PROGRAMS.print, filter, uid) },
      { name: `bwrap … python3: ${SYSCALLS} getppid()`, fn: () => rawRun(PROGRAMS.syscalls, undefined, uid) },
      { name: `bwrap --seccomp … python3: ${SYSCALLS} getppid()`, fn: () => rawRun(PROGRAMS.syscalls, filter, uid) },
    ],
    { iterations: 60, batch: 10, warmup: 3 },
  )
  const perCallNs = ((filteredCalls!.p50Ms - plainCalls!.p50Ms) / SYSCALLS) * 1e6
  return {
    title: 'seccomp: the process tier filter on and off',
    measurements: [plain!, filtered!, plainCalls!, filteredCalls!],
    ratios: [ratio('seccomp/plain (print(2))', filtered!, plain!), ratio(`seccomp/plain (${SYSCALLS} calls)`, filteredCalls!, plainCalls!)],
    notes: [
      `filter: ${filter.length / 8} BPF instructions; p50 difference per system call ≈ ` +
        `${perCallNs.toFixed(0)} ns (getppid, the last call on the deny-list scan's fall-through ` +
        `path)`,
    ],
  }
}
