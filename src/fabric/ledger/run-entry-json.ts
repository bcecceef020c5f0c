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
 * Every key of a run's record, in the order its text gives them (describeRun's). The compiler checks that none is
 * missing: a key added to RunRecord and not here would otherwise never reach the stored text.
 */
const RUN_KEYS = [
  'kind',
  'runId',
  'traceId',
  'tenant',
  'agentType',
  'lane',
  'taskId',
  'attempt',
  'planId',
  'planVersion',
  'stepId',
  'language',
  'adapter',
  'tier',
  'execgateVersion',
  'code',
  'policySha256',
  'limits',
  'policy',
  'egress',
  'engines',
  'startedAt',
  'endedAt',
  'status',
  'error',
  'wallMs',
  'cpuMs',
  'peakMemoryBytes',
  'inputs',
  'outputs',
  'stdin',
  'stdout',
  'stderr',
  'value',
  'fallbackFrom',
  'planDocument',
] as const satisfies readonly (keyof RunRecord)[]
const everyKeyListed: [Exclude<keyof RunRecord, (typeof RUN_KEYS)[number]>] extends [never] ? true : never = true
void everyKeyListed

/**
 * The entry's values in RUN_KEYS' order, read by name: the entry is one object of one shape (describeRun's literal),
 * so each read is a known field, where `entry[key]` over 36 names was a generic lookup each (measured: the JSON of a
 * trivial run 3.6 -> 1.9 µs). The tuple's type follows RUN_KEYS; the test checks the order.
 */
type RunValues<Keys extends readonly (keyof RunRecord)[]> = { -readonly [I in keyof Keys]: RunRecord[Keys[I] & keyof RunRecord] }

function valuesOf(e: RunRecord): RunValues<typeof RUN_KEYS> {
  return [
    e.kind,
    e.runId,
    e.traceId,
    e.tenant,
    e.agentType,
    e.lane,
    e.taskId,
    e.attempt,
    e.planId,
    e.planVersion,
    e.stepId,
    e.language,
    e.adapter,
    e.tier,
    e.execgateVersion,
    e.code,
    e.policySha256,
    e.limits,
    e.policy,
    e.egress,
    e.engines,
    e.startedAt,
    e.endedAt,
    e.status,
    e.error,
    e.wallMs,
    e.cpuMs,
    e.peakMemoryBytes,
    e.inputs,
    e.outputs,
    e.stdin,
    e.stdout,
    e.stderr,
    e.value,
    e.fallbackFrom,
    e.planDocument,
  ]
}

/** `,"<key>":` for each of RUN_KEYS. */
const KEY_TEXT = RUN_KEYS.map((key) => `,${JSON.stringify(key)}:`)
/** The last record's value of each key and its JSON: records one after another repeat most of them (`ok`, `monty`). */
const lastValue: unknown[] = new Array<unknown>(RUN_KEYS.length).fill(undefined)
const lastJson: string[] = new Array<string>(RUN_KEYS.length).fill('')

/**
 * `JSON.stringify(entry)`, written key by key: a shared object's JSON is made once per object (`shared`), a value
 * the last record had is not serialised again, the keys a run leaves empty (`omittedDefault`) are left out, and
 * absent keys cost a look, not a walk of the serialiser (a trivial run's entry has ~36 keys, ~20 of them absent:
 * JSON.stringify of it was ~14 % of the writer thread's time). The same content once read (`restoreOmitted` puts the
 * left-out keys back); the chain hashes the stored text as it is.
 */
export function runEntryJson(entry: RunRecord): string {
  let text = ''
  const values: readonly unknown[] = valuesOf(entry)
  for (let at = 0; at < values.length; at++) {
    const value = values[at]
    if (value === undefined) continue
    let json: string
    if (value === lastValue[at]) json = lastJson[at]!
    else if (typeof value !== 'object' || value === null) {
      json = JSON.stringify(value)
      lastValue[at] = value
      lastJson[at] = json
    } else if (omitted.has(value)) continue
    else {
      const known = sharedJson.get(value)
      // Any other object is the record's own (an error, a list of files): serialised each time, never remembered.
      if (known === undefined) json = JSON.stringify(value)
      else {
        json = known === NO_TEXT ? JSON.stringify(value) : known
        if (known === NO_TEXT) sharedJson.set(value, json)
        lastValue[at] = value
        lastJson[at] = json
      }
    }
    text += KEY_TEXT[at]! + json
  }
  return `{${text.slice(1)}}`
}
