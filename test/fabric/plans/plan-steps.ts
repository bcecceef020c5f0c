import type { PlanStepSpec } from '../../../src/fabric/plans'

/** A JavaScript plan step, depending on the steps named (the multi-node plan tests build their plans from these). */
export const js = (id: string, code: string, dependsOn?: string[]): PlanStepSpec => ({
  id,
  language: 'javascript',
  code,
  ...(dependsOn ? { dependsOn } : {}),
})

/** The code that reads an earlier step's value inside a step (plans pass values through the plan's workspace). */
export const value = (id: string) => `JSON.parse(await read_file("steps/${id}/value.json"))`
