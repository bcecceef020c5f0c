// Where the agents' code runs: a remote execgate server when EXECGATE_URL is set (with EXECGATE_API_KEY), else an
// execgate in this process. The tools take either; the agent code is the same.
import { createExecgate } from 'execgate'
import { ExecgateClient } from 'execgate/client'

export async function connect() {
  if (process.env.EXECGATE_URL)
    return {
      execgate: new ExecgateClient({ url: process.env.EXECGATE_URL, apiKey: process.env.EXECGATE_API_KEY }),
      where: 'remote',
      close: async () => {},
    }
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs', 'monty', 'shell'] },
      sandboxes: { adapter: 'shell' },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  return { execgate, where: 'in-process', close: () => execgate.dispose() }
}

export const QUESTION = 'Orders of 12.50, 30.00 and 7.25: what is the total with 8% tax?'
/** What the scripted models ask to run (a real model writes its own). */
export const SCRIPTED_CALL = { language: 'python', code: 'orders = [12.50, 30.00, 7.25]\nround(sum(orders) * 1.08, 2)' }
/** What the scripted models say once they read the tool's answer. */
export const scriptedAnswer = (answer) => `The total with tax is ${JSON.parse(answer).value}.`
