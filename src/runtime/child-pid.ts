import fs from 'node:fs'

/**
 * The pid of a process's one child (a launcher's, such as bubblewrap's, whose child execs the real program), read from
 * /proc without asking anyone: `/proc/PID/task/PID/children` where the kernel has it, else a scan of every
 * `/proc/N/stat` for that parent. Undefined while there is no child yet (or several: the caller would not know which).
 */
export function onlyChildOf(pid: number): number | undefined {
  let children: number[]
  try {
    children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    children = childrenByScan(pid)
  }
  return children.length === 1 ? children[0] : undefined
}

function childrenByScan(parent: number): number[] {
  const found: number[] = []
  for (const entry of safeReaddir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      // Field 4 (ppid) follows the command name in parentheses, which may itself hold spaces and parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === parent) found.push(Number(entry))
    } catch {
      // Gone meanwhile.
    }
  }
  return found
}

function safeReaddir(directory: string): string[] {
  try {
    return fs.readdirSync(directory)
  } catch {
    return []
  }
}
