import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * `npm run bench -- --against <git ref>`: the regression guard. The ref is exported (`git archive`, so the shared
 * repository gains no worktree entry) into a folder beside the temp dir, given this tree's node_modules (a symlink
 * when its package-lock.json is the same, `npm ci` otherwise) and built with its own build script. The sections then
 * load both builds into this one process and measure them interleaved, so a shared machine's noise falls on both.
 */

/** One build of execgate under test: this working tree, or the ref's build. */
export interface Subject {
  /** `working tree`, or the ref and its commit: `main (8fef44d)`. */
  label: string
  /** Short tag put before series names when two subjects are compared: `work`, `base`. */
  tag: string
  /** The build's dist folder (holds src/, adapters/, bench/). */
  dist: string
  /** The build's `bin/execgate.js`. */
  bin: string
  /** The build's library entry (`createExecgate`, `DEFAULT_POLICY`, …). */
  lib: typeof import('../src')
  /** A module of the build by its path under dist, without extension; several candidates when files moved between versions. */
  load<T>(...candidates: string[]): T
}

function subjectAt(root: string, label: string, tag: string): Subject {
  const dist = path.join(root, 'dist')
  const load = <T>(...candidates: string[]): T => {
    for (const candidate of candidates) {
      const file = path.join(dist, `${candidate}.js`)
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      if (fs.existsSync(file)) return require(file) as T
    }
    throw new Error(`[execgate] [bench] ${label} has none of ${candidates.join(', ')}`)
  }
  return { label, tag, dist, bin: path.join(root, 'bin', 'execgate.js'), lib: load<typeof import('../src')>('src/index'), load }
}

/** The tree this bench was built from (dist/bench/against.js → the repository root). */
export function workingSubject(): Subject {
  return subjectAt(path.resolve(__dirname, '../..'), 'working tree', 'work')
}

function git(root: string, args: string[]): string {
  return execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
}

/**
 * The ref's build, made once per commit and kept in the temp dir (`execgate-bench-<commit>`) for the next comparison
 * against the same commit. Progress goes to stderr so stdout stays the markdown report.
 */
export function buildBaseline(ref: string): Subject {
  const root = path.resolve(__dirname, '../..')
  const commit = git(root, ['rev-parse', '--verify', `${ref}^{commit}`])
  const short = commit.slice(0, 7)
  const dir = path.join(os.tmpdir(), `execgate-bench-${commit}`)
  const built = path.join(dir, '.execgate-bench-built')
  const say = (line: string) => process.stderr.write(`[execgate] [bench] ${line}\n`)
  if (fs.existsSync(built) || !holdBuildLock(dir, built)) {
    say(`reusing the build of ${ref} (${short}) in ${dir}`)
    relinkModules(dir, root)
    return subjectAt(dir, `${ref} (${short})`, 'base')
  }
  try {
    fs.rmSync(dir, { recursive: true, force: true })
    fs.mkdirSync(dir, { recursive: true })
    say(`exporting ${ref} (${short}) to ${dir}`)
    const archive = execFileSync('git', ['-C', root, 'archive', '--format=tar', commit], { maxBuffer: 1 << 30 })
    execFileSync('tar', ['-x', '-C', dir], { input: archive })
    const lockOf = (at: string) => fs.readFileSync(path.join(at, 'package-lock.json'), 'utf8')
    if (lockOf(dir) === lockOf(root)) {
      // The same lock: the same packages. A symlink also means one copy of native modules (better-sqlite3) in the process.
      fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir')
    } else {
      say(`${short}'s package-lock.json differs from this tree's: npm ci`)
      execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] })
      execFileSync('npm', ['rebuild', 'better-sqlite3'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] })
    }
    say(`building ${short}`)
    execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] })
    fs.writeFileSync(built, `${commit}\n`)
  } finally {
    fs.rmSync(`${dir}.lock`, { recursive: true, force: true })
  }
  return subjectAt(dir, `${ref} (${short})`, 'base')
}

/**
 * A kept build links the node_modules of the tree that made it, which may be gone since (a worktree removed): its
 * modules then fail to load. Linked again to this tree's, the same packages when the locks match (they did, or it
 * would hold a copy of its own, not a link).
 */
function relinkModules(dir: string, root: string): void {
  const link = path.join(dir, 'node_modules')
  const isLink = fs.lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()
  if (!isLink || fs.existsSync(link)) return
  fs.unlinkSync(link)
  fs.symlinkSync(path.join(root, 'node_modules'), link, 'dir')
}

/**
 * Whether this process is to build `dir`: true once it holds `<dir>.lock` (a directory: mkdir is atomic), false when
 * another process built it meanwhile. Two benches of the same ref at once would otherwise export into one directory
 * together and fail (ENOTEMPTY). A lock whose holder has died is taken over.
 */
function holdBuildLock(dir: string, built: string): boolean {
  const lock = `${dir}.lock`
  const pause = new Int32Array(new SharedArrayBuffer(4))
  for (;;) {
    if (fs.existsSync(built)) return false
    try {
      fs.mkdirSync(lock)
      fs.writeFileSync(path.join(lock, 'pid'), `${process.pid}\n`)
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    let holder = 0
    try {
      holder = Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8').trim())
    } catch {
      // The lock went meanwhile, or its holder has not written its pid yet: look again.
    }
    if (holder > 0 && !alive(holder)) fs.rmSync(lock, { recursive: true, force: true })
    else Atomics.wait(pause, 0, 0, 1000)
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** `work/base p50 = 0.62× (0.041 vs 0.066 ms)`: how the working tree compares with the baseline on one series. */
export function against(label: string, work: { p50Ms: number }, base: { p50Ms: number }): string {
  return `${label}: work/base p50 = ${(work.p50Ms / base.p50Ms).toFixed(2)}× (${work.p50Ms.toFixed(3)} vs ${base.p50Ms.toFixed(3)} ms)`
}

/** A series name for one subject: unchanged with one subject, tagged `[base]`/`[work]` when several are compared. */
export function tagged(subjects: readonly Subject[], subject: Subject, name: string): string {
  return subjects.length > 1 ? `[${subject.tag}] ${name}` : name
}
