import { DEFAULT_POLICY } from '../../src/policy'
import { MemoryWorkspace, RunHostFunctions, standardHostFunctions } from '../../src/workspace'

/**
 * The hostile README's fixtures for adapters with host functions, made of the product's own parts: the standard
 * host functions (`read_file`, `write_file`, …) over an empty in-memory workspace with sandboxed access, and
 * `hostFn()` resolving to `{a: 1}`. Escape payloads thus probe the real path confinement and argument checks.
 */
export class HostileHostFunctions extends RunHostFunctions {
  constructor() {
    super(
      [
        ...standardHostFunctions(),
        { name: 'hostFn', description: 'returns {a: 1}', parameters: { type: 'array', maxItems: 0 }, handler: () => ({ a: 1 }) },
      ],
      {
        policy: { ...DEFAULT_POLICY, filesystem: 'sandboxed', hostCalls: { maxCount: 10_000, maxTotalMs: 10_000 } },
        workspace: new MemoryWorkspace(),
      },
    )
  }
}
