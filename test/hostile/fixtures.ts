import { ExecgateError, type HostFunctions, type HostFunctionSpec } from '../../src/core'

/**
 * The hostile README's fixtures for adapters with host functions: `read_file` and `write_file` over an empty
 * in-memory workspace (paths confined, never the host's filesystem) and `hostFn()` resolving to `{a: 1}`.
 */
export class HostileHostFunctions implements HostFunctions {
  private readonly files = new Map<string, string>()
  private static readonly SPECS: HostFunctionSpec[] = [
    { name: 'read_file', description: 'read a workspace file', parameters: { type: 'array', items: [{ type: 'string' }] } },
    { name: 'write_file', description: 'write a workspace file', parameters: { type: 'array', items: [{ type: 'string' }, { type: 'string' }] } },
    { name: 'hostFn', description: 'returns {a: 1}', parameters: { type: 'array', maxItems: 0 } },
  ]

  list(): readonly HostFunctionSpec[] {
    return HostileHostFunctions.SPECS
  }

  has(name: string): boolean {
    return HostileHostFunctions.SPECS.some((spec) => spec.name === name)
  }

  private confine(name: string, value: unknown): string {
    if (typeof value !== 'string' || value === '' || value.includes('\0') || value.startsWith('/') || value.includes('\\') || value.split('/').includes('..') || /^[a-z]+:/i.test(value)) {
      throw new ExecgateError('EXECGATE_POLICY_VIOLATION', { detail: `${name}: path ${JSON.stringify(value)} leaves the workspace` })
    }
    return value
  }

  async call(name: string, args: readonly unknown[]): Promise<unknown> {
    switch (name) {
      case 'read_file': {
        const file = this.confine(name, args[0])
        const content = this.files.get(file)
        if (content === undefined) throw new Error(`${name}: no file ${file} in the workspace`)
        return content
      }
      case 'write_file':
        this.files.set(this.confine(name, args[0]), String(args[1]))
        return null
      case 'hostFn':
        return { a: 1 }
      default:
        throw new ExecgateError('EXECGATE_HOST_CALL_UNKNOWN', { name })
    }
  }
}
