/**
 * The process the crash test kills: it submits `count` tasks with idempotency keys to the embedded store in
 * `dataDir`, says "submitted" on stdout, and runs them until it is killed.
 */
import { createExecgate } from '../../../src'
import { crashTestSpecs } from './crash-specs'

async function main(): Promise<void> {
  const [dataDir, count] = [process.argv[2]!, Number(process.argv[3])]
  const execgate = await createExecgate({
    env: {
      EXECGATE_LOG_LEVEL: 'silent',
      EXECGATE_READINESS_ENABLED: 'false',
      EXECGATE_EXECUTION_ENABLED: 'quickjs',
      EXECGATE_FABRIC_DATA_DIR: dataDir,
      EXECGATE_FABRIC_CONCURRENCY: '4',
    },
  })
  await execgate.execute({ language: 'javascript', code: '1' })
  await execgate.tasks.submitMany(crashTestSpecs(count))
  process.stdout.write('submitted\n')
}

void main()
