export {
  createTaskService,
  SQLITE_FILE_NAME,
  type FabricSettings,
  type TaskService,
  type TaskServiceOptions,
  type TaskCaller,
} from './task-service'
export {
  TaskScheduler,
  defaultOwnerAlive,
  type TaskSchedulerOptions,
  type TaskStreamItem,
  type ResumeChanges,
  RESUME_FIELDS,
  type ExecuteFunction,
} from './task-scheduler'
export { SqliteTaskStore, TASKS_SQLITE_FILE_NAME, type SqliteTaskStoreOptions } from './sqlite-task-store'
export { RedisTaskStore, type RedisTaskStoreOptions } from './redis-task-store'
export { BullmqDispatcher, bullmqPriority, type TaskDispatcher, type BullmqDispatcherOptions } from './bullmq-dispatcher'
export type { TaskStore, TaskReader, TaskChange, TaskListFilter, TaskPage } from './task-store'
export {
  assertResumeChanges,
  refusalIn,
  requestRefusal,
  withLoosestTimeout,
  type RequestCheck,
  type CheckedCaller,
} from './request-refusal'
export { TASK_SPEC_SCHEMA, findTaskProblem } from './task-schema'
export { TRANSITIONS, canTransition, outcomeOf, backoffDelay } from './lifecycle'
export { DEPENDENCY_ROOT } from './dependency-inputs'
export { TaskOutputs, type TaskOutput } from './task-outputs'
export { bucketTaskWorkspaces } from './bucket-workspaces'
export * from './task-types'
