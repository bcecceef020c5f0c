import { PLAN_STATES as CONSOLE_PLAN_STATES } from '../../console/src/api-types-fabric'
import { TASK_STATES as CONSOLE_TASK_STATES } from '../../console/src/api-types'
import { PLAN_STATES } from '../../src/fabric/plans/plan-types'
import { TASK_STATES } from '../../src/fabric/tasks/task-types'

/**
 * The console mirrors the API's documented JSON as any client would (console/src/api-types*.ts), so its lists of
 * states are written again there. A state the server gains must reach the console's badges and buttons too.
 */
test("the console's task and plan states are the server's", () => {
  expect([...CONSOLE_TASK_STATES]).toEqual([...TASK_STATES])
  expect([...CONSOLE_PLAN_STATES]).toEqual([...PLAN_STATES])
})
