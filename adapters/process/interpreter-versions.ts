import { execFile } from 'node:child_process'

/**
 * The versions of the host interpreters the sandbox runs (the same files, bound read-only), for
 * `capabilities.engines`: each run's ledger record and signed receipt name them. Learned once, in the background
 * (three `--version` runs, ~50 ms), so no run waits for them; records written before they are known lack them.
 */
const PATTERNS: Readonly<Record<string, RegExp>> = {
  python3: /Python (\S+)/,
  // `node` in a record is the Node.js hosting execgate; this is the one the sandbox runs code with.
  'sandbox-node': /v(\d\S*)/,
  bash: /version (\S+)/,
}

function versionOf(file: string, pattern: RegExp): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(file, ['--version'], { timeout: 10_000, env: {} }, (error, stdout, stderr) =>
      resolve(error ? undefined : pattern.exec(`${stdout}${stderr}`)?.[1]),
    )
  })
}

/** Fills `into` with `python3`, `sandbox-node` and `bash` versions as they arrive; never rejects. */
export async function learnInterpreterVersions(
  interpreters: { python: string; javascript: string; bash: string },
  into: Record<string, string>,
): Promise<void> {
  const files: Record<string, string> = { python3: interpreters.python, 'sandbox-node': interpreters.javascript, bash: interpreters.bash }
  await Promise.all(
    Object.entries(files).map(async ([name, file]) => {
      const version = await versionOf(file, PATTERNS[name]!)
      try {
        if (version) into[name] = version
      } catch {
        // a frozen object: the versions stay unknown, which records tolerate
      }
    }),
  )
}
