import type { PythonScan } from '../../src/runtime'

/**
 * What monty 0.0.18 lacks that CPython code uses often, found by the differential corpus (test/python-diff): code
 * that names one of these fails on monty with AttributeError / NameError / TypeError where CPython answers. Routing
 * sends such code to a full Python before running it, rather than running it twice (the service's rerun after a
 * monty error is the net for what a scan cannot see). docs/adapters/monty.md lists the divergences that remain.
 */
const MISSING_ATTRIBUTES = new Set([
  // str
  'format',
  'format_map',
  'maketrans',
  'translate',
  // int, float
  'is_integer',
  'bit_length',
  'bit_count',
  'as_integer_ratio',
  'to_bytes',
  'from_bytes',
  // math
  'hypot',
  'fsum',
  'prod',
  'dist',
  // datetime
  'isocalendar',
  'toordinal',
  'fromordinal',
  'astimezone',
  'timetuple',
  // re, sys
  'subn',
  'maxsize',
  // function and exception metadata
  '__doc__',
  '__name__',
  '__qualname__',
  '__cause__',
  '__context__',
  '__traceback__',
])

const MISSING_BUILTINS = new Set([
  'issubclass',
  'callable',
  'vars',
  'globals',
  'locals',
  'dir',
  'format',
  'ascii',
  'memoryview',
  'bytearray',
  'complex',
])

/** Present in monty but answering differently, with no error to rerun on: `casefold` is `lower` (`ß` stays). */
const WRONG_ATTRIBUTES = new Set(['casefold'])
/** `frozenset([1, 2]) == {1, 2}` is False on monty. */
const WRONG_BUILTINS = new Set(['frozenset'])

/** Why monty would answer this code differently from CPython, when the scan can tell; undefined when it cannot. */
export function montyGap(scan: PythonScan): string | undefined {
  const attributes = scan.attributes.filter((name) => MISSING_ATTRIBUTES.has(name))
  if (attributes.length > 0) return `monty lacks ${attributes.map((name) => `.${name}`).join(', ')}`
  const builtins = [...new Set(scan.calls.map((call) => call.name).filter((name) => MISSING_BUILTINS.has(name)))]
  if (builtins.length > 0) return `monty lacks the builtin ${builtins.join(', ')}`
  if (scan.percentFormatting) return "monty has no printf-style formatting ('…' % values)"
  // monty refuses these at parse time (SyntaxError "not yet supported"); a thousands separator is common in money.
  const specs = scan.formatSpecs.filter((spec) => /[,_#]/.test(spec.replace(/\{[^}]*\}/g, '')))
  if (specs.length > 0) return `monty's f-strings have no ',', '_' or '#' in a format spec (${specs.map((spec) => `:${spec}`).join(', ')})`
  const wrong = [
    ...scan.attributes.filter((name) => WRONG_ATTRIBUTES.has(name)).map((name) => `.${name}`),
    ...new Set(scan.calls.map((call) => call.name).filter((name) => WRONG_BUILTINS.has(name))),
  ]
  if (wrong.length > 0) return `monty's ${wrong.join(', ')} answers differently from CPython`
  return undefined
}
