import { LruCache, transpileTypeScript } from '../../src/runtime'

/**
 * Turns a request's code into a QuickJS global script whose completion value is the run's value. TypeScript
 * is transpiled first. Code that may use top-level `await` is evaluated with QuickJS's async flag, which keeps
 * global-script semantics (the completion value) where a module would only give its exports.
 */

export interface PreparedSource {
  script: string
  /** Evaluate with JS_EVAL_FLAG_ASYNC: the result is a promise of `{ value }`. */
  async: boolean
}

// A transpile takes milliseconds; TypeScript sent again (a retry, the same formula) is transpiled once.
const transpiled = new LruCache<string>(128)

export function prepareSource(code: string, language: 'javascript' | 'typescript'): PreparedSource {
  const script = language === 'typescript' ? transpiled.get(code, () => transpileTypeScript(code)) : code
  // QuickJS's async-eval flag allows top-level await in a global script; it costs a promise, so only when needed.
  return { script, async: script.includes('await') }
}
