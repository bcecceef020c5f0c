import type { Redis } from 'ioredis'
import { requireOptional } from '../../core/optional-dependency'
import { RedisUploadIndex } from '../files/upload-index'
import { RedisLedgerStore } from '../ledger/redis-ledger-store'
import { RedisPlanStore } from '../plans/redis-plan-store'
import { RedisSandboxRegistry } from '../sandboxes/sandbox-registry-redis'
import { RedisSessionRegistry } from '../sessions/session-registry-redis'
import { BullmqDispatcher } from '../tasks/bullmq-dispatcher'
import { RedisTaskStore } from '../tasks/redis-task-store'
import { RedisOutputRelay } from '../tasks/redis-output-relay'
import type { FabricStoreDriver, FabricStoreSettings } from './types'

/** A connection of its own for each store (each closes its own), ioredis loaded only when this driver opens one. */
function connect(settings: FabricStoreSettings): Redis {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer dependency, loaded only for this driver
  const { Redis } = requireOptional('redis', () => require('ioredis') as typeof import('ioredis'))
  return batchWrites(new Redis(settings.redisUrl, { maxRetriesPerRequest: 3 }))
}

/**
 * The commands a connection sends in one turn of the event loop leave in one write. ioredis writes each command to
 * its socket as it is made, a system call each, and on loopback each call also wakes redis-server, which on a small
 * machine takes the core from this process. Corked at a turn's first command and uncorked once the turn's code and
 * its promise reactions have run (process.nextTick), the commands made at once (a plan's step tasks and their logs,
 * a claim and its dependencies' outputs) cost one write. The commands, their order and their replies are unchanged.
 */
function batchWrites(redis: Redis): Redis {
  redis.on('connect', () => {
    // A new socket at each (re)connection.
    const socket = redis.stream
    const write = socket.write
    const uncork = () => socket.uncork()
    socket.write = function (this: typeof socket, ...args: Parameters<typeof write>) {
      if (!socket.writableCorked) {
        socket.cork()
        process.nextTick(uncork)
      }
      return write.apply(this, args)
    } as typeof write
  })
  return redis
}

/**
 * The shared store: every node of a deployment and every `execgate worker` on one Redis (`fabric.redisUrl`), keys
 * under `fabric.redisPrefix`; due tasks reach workers through BullMQ.
 */
export const REDIS_DRIVER: FabricStoreDriver = {
  description: 'Redis at fabric.redisUrl (BullMQ for due tasks); shared by every node and worker',
  shared: true,
  tasks: (settings) =>
    new RedisTaskStore({
      redis: connect(settings),
      prefix: `${settings.redisPrefix}:tasks`,
      ownsConnection: true,
      // The lease of a dependent started behind its dependency's end, as long as a BullMQ job's.
      leaseMs: settings.leaseMs,
    }),
  taskDispatcher: (settings, tasks) => {
    const dispatcher = new BullmqDispatcher({
      url: settings.redisUrl,
      queue: `${settings.redisPrefix}-tasks`,
      leaseMs: settings.leaseMs,
      // Announcements on the task store's connection: one sent after an insert lands after it.
      ...(tasks instanceof RedisTaskStore ? { storeConnection: tasks.connection } : {}),
    })
    // A completion's write makes the dependents the store knows ready: they are announced right behind it.
    if (tasks instanceof RedisTaskStore) tasks.announceBehind = (task) => dispatcher.dispatchBehindStoreWrites!(task)
    return dispatcher
  },
  // Connected at the first output published or the first reader: a process doing neither opens no connection for them.
  outputRelay: (settings) => new RedisOutputRelay(() => connect(settings), `${settings.redisPrefix}:tasks`),
  plans: (settings, tasks) =>
    new RedisPlanStore({
      redis: connect(settings),
      prefix: `${settings.redisPrefix}:plans`,
      ownsConnection: true,
      // A new plan's insert, then its steps' insert, on one connection: sent together, landing in that order.
      ...(tasks instanceof RedisTaskStore ? { tasksConnection: tasks.connection } : {}),
    }),
  ledgerRecords: (settings) =>
    new RedisLedgerStore({ redis: connect(settings), prefix: `${settings.redisPrefix}:ledger`, ownsConnection: true }),
  sandboxRegistry: (settings) => new RedisSandboxRegistry(connect(settings), settings.redisPrefix),
  sessionRegistry: (settings) => new RedisSessionRegistry(connect(settings), settings.redisPrefix),
  // Connected at the first upload: a node that never sees one opens no connection for them.
  uploadIndex: (settings) => new RedisUploadIndex(() => connect(settings), settings.redisPrefix),
}
