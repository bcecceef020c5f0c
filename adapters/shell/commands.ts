/**
 * The commands the native shell has: just-bash's built-in utilities without its opt-in network, Python,
 * JavaScript and SQLite commands (those languages have adapters of their own, and the network is the policy's),
 * plus the shell's builtins and keywords. Loaded on first use: just-bash costs nothing until a shell runs.
 */

import { requireJustBash } from '../shared/just-bash'

/** Opt-ins that stay off whatever just-bash's registry lists. */
const OFF = new Set(['sqlite3', 'curl', 'wget', 'python', 'python3', 'js-exec', 'node'])

/** Builtins the interpreter runs itself (checked against just-bash's `type -t` in the adapter's tests). */
export const SHELL_BUILTINS: readonly string[] = [
  ':',
  '.',
  '[',
  'alias',
  'break',
  'builtin',
  'cd',
  'command',
  'compgen',
  'complete',
  'continue',
  'declare',
  'dirs',
  'echo',
  'eval',
  'exec',
  'exit',
  'export',
  'false',
  'getopts',
  'hash',
  'help',
  'let',
  'local',
  'mapfile',
  'popd',
  'printf',
  'pushd',
  'pwd',
  'read',
  'readarray',
  'readonly',
  'return',
  'set',
  'shift',
  'shopt',
  'source',
  'test',
  'trap',
  'true',
  'type',
  'typeset',
  'unalias',
  'unset',
  'wait',
]

/** Utilities execgate adds to just-bash's (see child.js): `yes`, which agents pipe into `head`. */
export const ADDED_UTILITIES: readonly string[] = ['yes']

type Registry = { getCommandNames(): string[] }

let utilities: string[] | undefined

/** just-bash utilities the native shell registers (`commands` in its options). */
export function shellUtilities(): string[] {
  utilities ??= requireJustBash<Registry>()
    .getCommandNames()
    .filter((name) => !OFF.has(name))
  return utilities
}

let known: Set<string> | undefined

/** Every name a script may use as a command here. */
export function knownCommands(): ReadonlySet<string> {
  known ??= new Set([...shellUtilities(), ...ADDED_UTILITIES, ...SHELL_BUILTINS])
  return known
}
