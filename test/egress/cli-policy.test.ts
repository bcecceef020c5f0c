import { spawnSync } from 'node:child_process'
import path from 'node:path'

/** `execgate policy` names the test-only private-range exemption whenever it is set (the real CLI, from dist/). */
const root = path.join(__dirname, '..', '..')

function policy(env: Record<string, string>, json = false) {
  const child = spawnSync(
    process.execPath,
    [path.join(root, 'bin', 'execgate.js'), 'policy', '--adapter', 'quickjs', ...(json ? ['--json'] : [])],
    {
      cwd: root,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR,
        EXECGATE_EXECUTION_ENABLED: 'quickjs',
        ...env,
      },
      timeout: 30_000,
    },
  )
  return { code: child.status, stdout: child.stdout, stderr: child.stderr }
}

test('allowPrivateRanges is named in the policy output when set, and absent otherwise', () => {
  const plain = policy({})
  expect(plain.code).toBe(0)
  expect(plain.stdout).not.toContain('allowPrivateRanges')
  const exempted = policy({ EXECGATE_SECURITY_EGRESS_ALLOW_PRIVATE_RANGES: '127.0.0.0/8' })
  expect(exempted.stdout).toContain('WARNING: security.egress.allowPrivateRanges exempts 127.0.0.0/8')
  expect(JSON.parse(policy({ EXECGATE_SECURITY_EGRESS_ALLOW_PRIVATE_RANGES: '127.0.0.0/8' }, true).stdout).egress).toMatchObject({
    allowPrivateRanges: ['127.0.0.0/8'],
    maxRequests: 50,
  })
})
