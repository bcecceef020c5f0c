import type { LedgerEntry, RunRecord, StreamDigest } from './types'

/**
 * JSON texts of objects many records share, by identity: an adapter's engines, a code's and a value's references, the
 * empty stream, the empty list. Registered when made (`shared`), their JSON made the first time a record names them.
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

/**
 * Every key of a run's record, in the order its text gives them: first those runs one after another share (a
 * tenant's, an adapter's, a policy's, a repeated code's and value's), then those each run has its own of. The compiler
 * checks that none is missing: a key added to RunRecord and not here would otherwise never reach the stored text.
 */
const RUN_KEYS = [
  'kind',
  'tenant',
  'agentType',
  'lane',
  'planId',
  'planVersion',
  'language',
  'adapter',
  'tier',
  'execgateVersion',
  'code',
  'policySha256',
  'limits',
  'policy',
  'engines',
  'status',
  'value',
  'planDocument',
  'runId',
  'traceId',
  'taskId',
  'attempt',
  'stepId',
  'egress',
  'startedAt',
  'endedAt',
  'error',
  'wallMs',
  'cpuMs',
  'peakMemoryBytes',
  'inputs',
  'outputs',
  'stdin',
  'stdout',
  'stderr',
  'fallbackFrom',
] as const satisfies readonly (keyof RunRecord)[]
const everyKeyListed: [Exclude<keyof RunRecord, (typeof RUN_KEYS)[number]>] extends [never] ? true : never = true
void everyKeyListed
/** RUN_KEYS before this index are the shared ones (from `kind` to `planDocument`). */
const STEADY = 18

/**
 * The entry's values in RUN_KEYS' order, read by name: the entry is one object of one shape (describeRun's literal),
 * so each read is a known field, where `entry[key]` over 36 names was a generic lookup each (measured: the JSON of a
 * trivial run 3.6 -> 1.9 µs). The tuple's type follows RUN_KEYS; the test checks the order.
 */
type RunValues<Keys extends readonly (keyof RunRecord)[]> = { -readonly [I in keyof Keys]: RunRecord[Keys[I] & keyof RunRecord] }

function valuesOf(e: RunRecord): RunValues<typeof RUN_KEYS> {
  return [
    e.kind,
    e.tenant,
    e.agentType,
    e.lane,
    e.planId,
    e.planVersion,
    e.language,
    e.adapter,
    e.tier,
    e.execgateVersion,
    e.code,
    e.policySha256,
    e.limits,
    e.policy,
    e.engines,
    e.status,
    e.value,
    e.planDocument,
    e.runId,
    e.traceId,
    e.taskId,
    e.attempt,
    e.stepId,
    e.egress,
    e.startedAt,
    e.endedAt,
    e.error,
    e.wallMs,
    e.cpuMs,
    e.peakMemoryBytes,
    e.inputs,
    e.outputs,
    e.stdin,
    e.stdout,
    e.stderr,
    e.fallbackFrom,
  ]
}

/** `,"<key>":` for each of RUN_KEYS. */
const KEY_TEXT = RUN_KEYS.map((key) => `,${JSON.stringify(key)}:`)
/** The last record's value of each key and its JSON: records one after another repeat most of them (`ok`, `monty`). */
const lastValue: unknown[] = new Array<unknown>(RUN_KEYS.length).fill(undefined)
const lastJson: string[] = new Array<string>(RUN_KEYS.length).fill('')
/**
 * The text of the last record's shared keys (RUN_KEYS before STEADY, without a leading comma), and the values it was
 * made of; empty when it held an object of the record's own, which is never taken for another record's.
 */
let steadyText = ''
const steadyValues: unknown[] = new Array<unknown>(STEADY).fill(undefined)

/** The JSON of `value` as key `at`'s, with the key; `''` for a value the text leaves out. */
function keyJson(at: number, value: unknown, mine: { own: boolean }): string {
  if (value === undefined) return ''
  if (value === lastValue[at]) return lastJson[at]!
  let json: string
  if (typeof value !== 'object' || value === null) json = JSON.stringify(value)
  else if (omitted.has(value)) return ''
  else {
    const known = sharedJson.get(value)
    // Any other object is the record's own (an error, a list of files): serialised each time, never remembered.
    if (known === undefined) {
      mine.own = true
      return KEY_TEXT[at]! + JSON.stringify(value)
    }
    json = known === NO_TEXT ? JSON.stringify(value) : known
    if (known === NO_TEXT) sharedJson.set(value, json)
  }
  lastValue[at] = value
  lastJson[at] = KEY_TEXT[at]! + json
  return lastJson[at]!
}

const own = { own: false }

/**
 * `JSON.stringify(entry)`, written key by key: a shared object's JSON is made once per object (`shared`), a value
 * the last record had is not serialised again, the keys a run leaves empty (`omittedDefault`) are left out, and
 * absent keys cost a look, not a walk of the serialiser (a trivial run's entry has ~36 keys, ~20 of them absent:
 * JSON.stringify of it was ~14 % of the writer thread's time). When the shared keys hold what the last record's did,
 * their text is the last record's, one piece: the text is then made of a few pieces, not two a key. The same content
 * once read (`restoreOmitted` puts the left-out keys back); the chain hashes the stored text as it is.
 */
export function runEntryJson(entry: RunRecord): string {
  const values: readonly unknown[] = valuesOf(entry)
  let same = steadyText !== ''
  for (let at = 0; same && at < STEADY; at++) same = values[at] === steadyValues[at]
  if (same) return finish(steadyText, values)
  let text = ''
  own.own = false
  for (let at = 0; at < STEADY; at++) {
    text += keyJson(at, values[at], own)
    steadyValues[at] = values[at]
  }
  // One piece of memory, kept for the records after this one; never kept when it holds a record's own object.
  steadyText = own.own ? '' : flat(text.slice(1))
  return finish(own.own ? text.slice(1) : steadyText, values)
}

/** The record's text: its shared keys' text, then its own keys'. */
function finish(steady: string, values: readonly unknown[]): string {
  let text = `{${steady}`
  for (let at = STEADY; at < values.length; at++) {
    const json = keyJson(at, values[at], own)
    if (json !== '') text += text.length === 1 ? json.slice(1) : json
  }
  return `${text}}`
}

/** The string as one piece of memory: kept for many records, it is not re-walked as a tree of pieces each time. */
function flat(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string
}
