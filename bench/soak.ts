import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

/**
 * Soak test (issue 15): runs `execgate serve` as a child on a free loopback port, drives 80% ordinary runs and 20%
 * hostile payloads from test/hostile/cases.json for --minutes N at --concurrency C, samples the RSS of the server and
 * of each of its descendants, and prints a verdict. Exits non-zero when a target is missed.
 * Usage: npm run soak -- --minutes 5 [--concurrency 8] [--max-growth-mb 50] [--max-peak-mb 768] [--docker]
 */
interface Flags {
  minutes: number
  concurrency: number
  maxGrowthMb: number
  maxPeakMb: number
  docker: boolean
}

function parseFlags(argv: string[]): Flags {
  const flags: Flags = { minutes: 5, concurrency: 8, maxGrowthMb: 50, maxPeakMb: 768, docker: false }
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]
    if (name === '--docker') flags.docker = true
    else if (name === '--minutes') flags.minutes = Number(argv[++i])
    else if (name === '--concurrency') flags.concurrency = Number(argv[++i])
    else if (name === '--max-growth-mb') flags.maxGrowthMb = Number(argv[++i])
    else if (name === '--max-peak-mb') flags.maxPeakMb = Number(argv[++i])
    else throw new Error(`unknown flag ${name}`)
  }
  return flags
}

/** The pid itself and every descendant, from /proc/<pid>/task/<tid>/children. */
function processTree(rootPid: number): number[] {
  const pids = [rootPid]
  for (let i = 0; i < pids.length; i++) {
    const taskDir = `/proc/${pids[i]}/task`
    let tids: string[] = []
    try {
      tids = fs.readdirSync(taskDir)
    } catch {
      continue
    }
    for (const tid of tids) {
      try {
        const children = fs.readFileSync(`${taskDir}/${tid}/children`, 'utf8').trim()
        if (children) pids.push(...children.split(/\s+/).map(Number))
      } catch {
        /* the process exited while we read it */
      }
    }
  }
  return pids
}

function rssMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024
  } catch {
    return 0
  }
}

function treeRssMb(rootPid: number): { server: number; children: number; total: number; pids: number[] } {
  const pids = processTree(rootPid)
  const server = rssMb(rootPid)
  const children = pids.slice(1).reduce((sum, pid) => sum + rssMb(pid), 0)
  return { server, children, total: server + children, pids }
}

interface Case {
  language: string
  code: string
}

const ordinary: Case[] = [
  { language: 'javascript', code: 'let s = 0; for (let i = 0; i < 1000; i++) s += i; console.log(s)' },
  { language: 'python', code: 'print(sum(range(1000)))' },
  { language: 'javascript', code: 'JSON.stringify({ a: [1, 2, 3] })' },
  { language: 'python', code: 'x = [i * i for i in range(100)]\nprint(len(x))' },
]

async function startServer(docker: boolean): Promise<{ child: ChildProcess; url: string }> {
  const bin = path.join(__dirname, '../../bin/execgate.js')
  const enabled = ['quickjs', 'monty', 'pyodide', 'process', ...(docker ? ['docker'] : [])].join(',')
  const child = spawn(process.execPath, ['--expose-gc', bin, 'serve', '--host', '127.0.0.1', '--port', '0'], {
    env: { ...process.env, EXECGATE_LOG_LEVEL: 'warn', EXECGATE_EXECUTION_ENABLED: enabled },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const url = await new Promise<string>((resolve, reject) => {
    let text = ''
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk
      const match = /serving on (http:\/\/\S+)/.exec(text)
      if (match) resolve(match[1]!)
    })
    child.on('exit', (code) => reject(new Error(`execgate serve exited with ${code}: ${text}`)))
  })
  // Wait for warm-up so the first minute measures steady state, not adapter start.
  for (let i = 0; i < 120; i++) {
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    )
    if (ready) break
    await new Promise((r) => setTimeout(r, 1000))
  }
  return { child, url }
}

export async function soak(flags: Flags): Promise<boolean> {
  const hostile = (JSON.parse(fs.readFileSync(path.join(__dirname, '../../test/hostile/cases.json'), 'utf8')) as Case[]).filter(
    (c) => c.language === 'javascript' || c.language === 'python',
  )
  const { child, url } = await startServer(flags.docker)
  const pid = child.pid!
  const statuses = new Map<string, number>()
  let errors = 0
  let requests = 0
  let peak = 0
  let peakChildren = 0
  let warmRss: number | undefined
  const started = Date.now()
  const deadline = started + flags.minutes * 60_000
  const maxRequests = flags.minutes * 60 * 500 // bound on count as well as time
  const sampler = setInterval(() => {
    const rss = treeRssMb(pid)
    // The targets are on the server process itself; pool processes are reported beside it.
    peak = Math.max(peak, rss.server)
    peakChildren = Math.max(peakChildren, rss.children)
    if (warmRss === undefined && Date.now() - started >= Math.min(60_000, flags.minutes * 30_000)) warmRss = rss.server
    console.error(
      `[soak] ${((Date.now() - started) / 1000).toFixed(0)}s requests=${requests} rss ` +
        `server=${rss.server.toFixed(0)}MB ` +
        `children(${rss.pids.length - 1})=${rss.children.toFixed(0)}MB`,
    )
  }, 5000)
  async function worker(): Promise<void> {
    while (Date.now() < deadline && requests < maxRequests) {
      requests++
      const pool = Math.random() < 0.2 ? hostile : ordinary
      const job = pool[Math.floor(Math.random() * pool.length)]!
      try {
        const response = await fetch(`${url}/v1/executions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ language: job.language, code: job.code }),
          signal: AbortSignal.timeout(120_000),
        })
        const body = (await response.json().catch(() => ({}))) as { status?: string }
        if (response.status >= 500) errors++
        const key = body.status ?? `http ${response.status}`
        statuses.set(key, (statuses.get(key) ?? 0) + 1)
      } catch {
        errors++
      }
    }
  }
  await Promise.all(Array.from({ length: flags.concurrency }, worker))
  clearInterval(sampler)
  await new Promise((r) => setTimeout(r, 10_000)) // idle pause before the end measurement
  // A full GC in the server (`execgate serve` runs one on SIGUSR2 when node has --expose-gc), so the end figure is
  // what the server keeps, not garbage it has not yet had a reason to collect.
  child.kill('SIGUSR2')
  await new Promise((r) => setTimeout(r, 2000))
  const end = treeRssMb(pid)
  const descendants = end.pids.slice(1)
  child.kill('SIGTERM')
  await new Promise((r) => child.once('exit', r))
  await new Promise((r) => setTimeout(r, 2000))
  const leftovers = descendants.filter((p) => fs.existsSync(`/proc/${p}`))
  const growth = end.server - (warmRss ?? end.server)
  console.log(`requests: ${requests}; by status: ${JSON.stringify(Object.fromEntries(statuses))}`)
  console.log(`errors (connection or 5xx): ${errors}; leftover processes: ${leftovers.length}`)
  console.log(
    `server RSS after warm-up ${(warmRss ?? 0).toFixed(0)} MB, end (after 10 s idle and a ` +
      `full GC) ${end.server.toFixed(0)} MB, peak ${peak.toFixed(0)} MB; pool processes peak ` +
      `${peakChildren.toFixed(0)} MB total`,
  )
  const failures: string[] = []
  if (errors > 0) failures.push(`${errors} errors (target 0)`)
  if (leftovers.length > 0) failures.push(`${leftovers.length} leftover processes (target 0)`)
  if (growth > flags.maxGrowthMb) failures.push(`RSS grew ${growth.toFixed(0)} MB (target ≤ ${flags.maxGrowthMb})`)
  if (peak > flags.maxPeakMb) failures.push(`peak RSS ${peak.toFixed(0)} MB (target ≤ ${flags.maxPeakMb})`)
  console.log(failures.length ? `VERDICT: FAIL - ${failures.join('; ')}` : 'VERDICT: PASS')
  return failures.length === 0
}

if (require.main === module) {
  soak(parseFlags(process.argv.slice(2))).then(
    (ok) => {
      process.exitCode = ok ? 0 : 1
    },
    (error: unknown) => {
      console.error(error)
      process.exitCode = 2
    },
  )
}
