import fs from 'node:fs'
import path from 'node:path'
import vm from 'node:vm'
import { ACME_KEY, startServeProcess, type ServeProcess } from './serve-harness'

/**
 * client-portability.test.ts reads the client's imports; this one runs it. The built client (dist/src/client and
 * dist/src/core/errors.js, the files it loads) is evaluated in a fresh V8 context that holds only what a browser or
 * Deno offers too: fetch and its classes, streams, URL, TextEncoder/Decoder, AbortController, timers, Web Crypto. No
 * `process`, `Buffer`, `require` or `node:` module is reachable from it, so a Node-only call in the client fails here
 * with a ReferenceError. It then runs execute, stream and a typed error against a real `execgate serve` on loopback.
 */

const DIST = path.join(__dirname, '../../dist/src')
const WEB_GLOBALS = [
  'fetch',
  'Headers',
  'Request',
  'Response',
  'FormData',
  'Blob',
  'AbortController',
  'AbortSignal',
  'DOMException',
  'URL',
  'URLSearchParams',
  'TextEncoder',
  'TextDecoder',
  'ReadableStream',
  'WritableStream',
  'TransformStream',
  'setTimeout',
  'clearTimeout',
  'queueMicrotask',
  'structuredClone',
  'crypto',
  'console',
  'atob',
  'btoa',
  'Event',
  'EventTarget',
] as const

/** Loads the built client into a browser-like context with a module loader that knows only the client's own files. */
function loadClientInWebContext(): { client: Record<string, unknown>; context: vm.Context } {
  const globals: Record<string, unknown> = {}
  for (const name of WEB_GLOBALS) globals[name] = (globalThis as Record<string, unknown>)[name]
  const context = vm.createContext(globals)
  const cache = new Map<string, { exports: Record<string, unknown> }>()
  const load = (file: string): Record<string, unknown> => {
    const cached = cache.get(file)
    if (cached) return cached.exports
    const module = { exports: {} as Record<string, unknown> }
    cache.set(file, module)
    const wrapper = vm.runInContext(`(function (exports, require, module) {${fs.readFileSync(file, 'utf8')}\n})`, context, {
      filename: file,
    }) as (exports: unknown, require: (specifier: string) => unknown, module: unknown) => void
    const requireFrom = (specifier: string): unknown => {
      const target = path.resolve(path.dirname(file), specifier) + '.js'
      const allowed = target.startsWith(path.join(DIST, 'client') + path.sep) || target === path.join(DIST, 'core', 'errors.js')
      if (!allowed) throw new Error(`the client required ${specifier} from ${path.basename(file)}: not available in a browser`)
      return load(target)
    }
    wrapper(module.exports, requireFrom, module)
    return module.exports
  }
  if (!fs.existsSync(path.join(DIST, 'client', 'index.js')))
    throw new Error('dist/ is not built: run `npm run build` (npm test builds first)')
  return { client: load(path.join(DIST, 'client', 'index.js')), context }
}

let server: ServeProcess
beforeAll(async () => {
  server = await startServeProcess()
}, 90_000)
afterAll(async () => {
  await server?.stop()
})

test('the context really lacks Node: no process, Buffer or require', () => {
  const { context } = loadClientInWebContext()
  expect(vm.runInContext('[typeof process, typeof Buffer, typeof require, typeof fetch]', context)).toEqual([
    'undefined',
    'undefined',
    'undefined',
    'function',
  ])
})

test('execute, stream and a typed error run against a real server from a browser-like context', async () => {
  const { client } = loadClientInWebContext()
  const Client = client.ExecgateClient as new (options: { url: string; apiKey: string }) => {
    execute(request: { language: string; code: string }): Promise<{ status: string; value?: unknown }>
    stream(request: { language: string; code: string }): AsyncIterable<{ type: string }>
    languages(): Promise<unknown[]>
  }
  const remote = new Client({ url: server.url, apiKey: ACME_KEY })
  const result = await remote.execute({ language: 'javascript', code: '6 * 7' })
  expect(result).toMatchObject({ status: 'ok', value: 42 })

  const types: string[] = []
  for await (const event of remote.stream({ language: 'javascript', code: 'console.log("from a browser"); 1' })) types.push(event.type)
  expect(types).toContain('stdout')
  expect(types[types.length - 1]).toBe('result')

  const denied = new Client({ url: server.url, apiKey: 'not-a-key-0123456789' })
  const isClientError = client.isExecgateClientError as (error: unknown) => boolean
  const error = await denied.languages().then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(isClientError(error)).toBe(true)
  expect((error as { code: string; status: number }).status).toBe(401)
}, 60_000)
