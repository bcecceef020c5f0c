import type { LedgerEntry, RunRecord, StreamDigest } from './types'

/**
 * JSON texts of objects many records share, by identity: an adapter's engines, a code's and a value's references, the
 * empty stream, the empty list. Registered when made (`shared`); an engines object arrives from the writer thread's
 * hand-over once a batch, and is registered as it is spliced.
 */
const sharedJson = new WeakMap<object, string>()
const NO_TEXT = ''

/** Marks an object that many records name as it is (never changed after): its JSON is made once. */
export function shared<T extends object>(value: T): T {
  sharedJson.set(value, NO_TEXT)
  return value
}

/**
 * Shared objects that say no more than a missing key would (the empty streams, the empty list): left out of a run's
 * text, and put back on read (`restoreOmitted`). A trivial run's stdout and stderr digests of nothing and its two
 * empty lists were ~220 of its record's ~1,060 bytes, hashed, bound, written to the WAL and copied again at the
 * checkpoint for every run.
 */
const omitted = new WeakSet<object>()

/** Marks a shared object (`shared`) that a run's text leaves out: it is what `restoreOmitted` puts back. */
export function omittedDefault<T extends object>(value: T): T {
  omitted.add(value)
  return shared(value)
}

/** SHA-256 of no bytes: the digest of an empty stream. */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'

/**
 * A stored entry as its writer had it: a run's keys `runEntryJson` left out (the empty streams and lists) put back,
 * each a new object (the caller may change it). Records written before they were left out hold them already.
 */
export function restoreOmitted(entry: LedgerEntry): LedgerEntry {
  if (entry?.kind !== 'run') return entry
  const run = entry as Partial<RunRecord>
  run.inputs ??= []
  run.outputs ??= []
  run.stdout ??= emptyStream()
  run.stderr ??= emptyStream()
  return entry
}

const emptyStream = (): StreamDigest => ({ sha256: EMPTY_SHA256, size: 0, stored: false })

/** Whether many records name this object as it is (a repeated code's reference, a value's digest, the empty list). */
export const isShared = (value: object): boolean => sharedJson.has(value)

/** The keys of a run's record that may hold a shared object, spliced after the rest in this order. */
const SPLICED = ['engines', 'code', 'inputs', 'outputs', 'stdout', 'stderr', 'value'] as const
/** SPLICED's first keys, kept by identity even when not registered. */
const ALWAYS_KEPT = 1

/**
 * `JSON.stringify(entry)` but for its keys that hold shared objects (SPLICED), whose JSON is made once per object and
 * spliced in last: a trivial run's entry is ~0.8 KB of which half is such objects, serialised again for every record
 * before (a third of the writer's JSON then, two thirds once the code, value and streams were shared).
 * The same content once read (`restoreOmitted` puts back the keys left out); only the spliced keys' place differs,
 * which the chain does not care about (a record's hash is over its stored text).
 */
export function runEntryJson(entry: RunRecord): string {
  const fields = entry as unknown as Record<string, unknown>
  const taken = lastTaken
  let same = true
  let any = false
  for (let at = 0; at < SPLICED.length; at++) {
    const value = fields[SPLICED[at]!]
    if (typeof value !== 'object' || value === null) {
      if (taken[at] !== undefined) same = false
      taken[at] = undefined
      continue
    }
    // The engines are kept whatever object holds them: in the writer thread they are the hand-over's copy (one per
    // adapter and hand-over, writer-handover.ts), never registered.
    if (at >= ALWAYS_KEPT && !sharedJson.has(value)) {
      if (taken[at] !== undefined) same = false
      taken[at] = undefined
      continue
    }
    if (taken[at] !== value) same = false
    taken[at] = value
    fields[SPLICED[at]!] = undefined
    any = true
  }
  if (!any) return JSON.stringify(entry)
  let text: string
  try {
    text = JSON.stringify(entry)
  } finally {
    for (let at = 0; at < SPLICED.length; at++) if (taken[at] !== undefined) fields[SPLICED[at]!] = taken[at]
  }
  // Records one after another name the same shared objects: the text spliced after the rest is then the last one's.
  if (!same) {
    let tail = ''
    for (let at = 0; at < SPLICED.length; at++) {
      const value = taken[at]
      if (value === undefined || omitted.has(value)) continue
      let json = sharedJson.get(value)
      if (!json) sharedJson.set(value, (json = JSON.stringify(value)))
      tail += `,"${SPLICED[at]}":${json}`
    }
    lastTail = flat(tail)
  }
  return `${text.slice(0, -1)}${lastTail}}`
}

/** The shared objects the last record's text spliced (by SPLICED's index), and that text. */
const lastTaken: (object | undefined)[] = new Array<object | undefined>(SPLICED.length).fill(undefined)
let lastTail = ''

/** The string as one piece of memory: kept for many records, it is not re-walked as a tree of pieces each time. */
function flat(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string
}
