/**
 * monty's native binding, loaded directly. The `@pydantic/monty` package is an ESM wrapper around it (which Node
 * 20.19+ can require, but bundlers and Jest cannot); the binding itself is a plain Node addon in a package per
 * platform, with the same classes: `Monty.create` and `run` return a `MontyException` instead of throwing.
 */
export interface MontyException {
  exception: { typeName: string; message: string }
  message: string
  traceback(): { line?: number; column?: number }[]
  display(format?: string): string
}

export interface MontyProgram {
  run(options: { limits: object; printCallback: (stream: string, text: string) => void }): unknown
}

export interface MontyBinding {
  Monty: { create(code: string, options?: { scriptName?: string }): MontyProgram | MontyException }
  MontyException: new (...args: never[]) => MontyException
}

const PACKAGES: Record<string, string> = {
  'linux-x64': '@pydantic/monty-linux-x64-gnu',
  'linux-arm64': '@pydantic/monty-linux-arm64-gnu',
  'darwin-x64': '@pydantic/monty-darwin-x64',
  'darwin-arm64': '@pydantic/monty-darwin-arm64',
  'win32-x64': '@pydantic/monty-win32-x64-msvc',
}

let binding: MontyBinding | undefined

export function loadMontyBinding(): MontyBinding {
  if (binding) return binding
  const name = PACKAGES[`${process.platform}-${process.arch}`]
  if (!name) throw new Error(`monty has no native binding for ${process.platform}-${process.arch}`)
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the binding's name is known only at run time
  binding = require(name) as MontyBinding
  return binding
}

export function isMontyException(value: unknown): value is MontyException {
  return binding !== undefined && value instanceof binding.MontyException
}
