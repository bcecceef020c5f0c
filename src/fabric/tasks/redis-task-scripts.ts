import { afterChange, type TaskChange } from './task-store'
import type { Task, TaskEvent } from './task-types'

/**
 * The Lua scripts of the Redis task store (redis-task-store.ts): each write of a task is one of them, so its state
 * index, its action-log entry and the compare-and-set land together or not at all.
 */

/**
 * A compare-and-set of the task's JSON with one or more transitions in a row: ARGV[1] the JSON expected, [2] the new
 * JSON, [3] the start-by score ('' for none), [4] the id, then one event template per transition (`%d` for its seq).
 * Moves the id from the first state's index to the last's and answers the first event's seq (the others follow it:
 * one script, so nothing else takes a seq between them), or -1 when the stored task is not the one expected. With a
 * seventh key (`dependents:<id>`, when the transitions end the task) ARGV[5] is the prefix, ARGV[6] how many
 * dependents the end makes ready, then (id, JSON expected, JSON ready) for each, and the templates after them: each
 * such dependent still stored as expected is written ready in the same script (no write of its own after the end's
 * answer), and the dependents' JSON follow the seq in the answer, read after that (no round trip of their own).
 */
export const TRANSITION = `
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[1] then return {-1} end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[4])
redis.call('SADD', KEYS[3], ARGV[4])
local templates = 5
local readies = 0
if #KEYS >= 7 then
  readies = tonumber(ARGV[6])
  templates = 7 + 3 * readies
end
local first = -1
for i = templates, #ARGV do
  local seq = redis.call('INCR', KEYS[4])
  if first < 0 then first = seq end
  redis.call('RPUSH', KEYS[5], string.format(ARGV[i], seq))
end
if ARGV[3] == '' then redis.call('ZREM', KEYS[6], ARGV[4]) else redis.call('ZADD', KEYS[6], tonumber(ARGV[3]), ARGV[4]) end
for i = 7, 6 + 3 * readies, 3 do
  local key = ARGV[5] .. ':task:' .. ARGV[i]
  if redis.call('GET', key) == ARGV[i + 1] then redis.call('SET', key, ARGV[i + 2]) end
end
local answer = {first}
if #KEYS >= 7 then
  local ids = redis.call('SMEMBERS', KEYS[7])
  for from = 1, #ids, 500 do
    local keys = {}
    for i = from, math.min(from + 499, #ids) do keys[#keys + 1] = ARGV[5] .. ':task:' .. ids[i] end
    for _, raw in ipairs(redis.call('MGET', unpack(keys))) do answer[#answer + 1] = raw end
  end
end
return answer
`

/** The JSON of every task that depends on KEYS[1]'s task, in one round trip: ARGV[1] the prefix. */
export const DEPENDENTS = `
local ids = redis.call('SMEMBERS', KEYS[1])
local raws = {}
for from = 1, #ids, 500 do
  local keys = {}
  for i = from, math.min(from + 499, #ids) do keys[#keys + 1] = ARGV[1] .. ':task:' .. ids[i] end
  for _, raw in ipairs(redis.call('MGET', unpack(keys))) do raws[#raws + 1] = raw end
end
return raws
`

/**
 * Inserts a batch in one script: per task (8 arguments each: id, JSON, tenant, state, idempotency key, deadline score,
 * event template, dependencies joined by newlines) it answers 1 when stored, or the id of the task already stored
 * under the same idempotency key or the same id, which is then left as it is. Atomic, so two nodes submitting with
 * one key (a client's retry that reached another node) or one plan step's task store one task, never two.
 */
export const INSERT = `
local P = ARGV[1]
local answers = {}
for i = 2, #ARGV, 8 do
  local id, body, tenant, state, key, deadline, event, deps =
    ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]
  local taken = false
  if key ~= '' then
    local other = redis.call('HGET', P .. ':idempotency:' .. tenant, key)
    if other and redis.call('EXISTS', P .. ':task:' .. other) == 1 then taken = other end
  end
  if not taken and redis.call('EXISTS', P .. ':task:' .. id) == 1 then taken = id end
  if taken then
    answers[#answers + 1] = taken
  else
    if key ~= '' then redis.call('HSET', P .. ':idempotency:' .. tenant, key, id) end
    redis.call('SET', P .. ':task:' .. id, body)
    redis.call('ZADD', P .. ':tenant:' .. tenant, redis.call('INCR', P .. ':seq'), id)
    redis.call('SADD', P .. ':state:' .. state, id)
    for dep in string.gmatch(deps, '[^\\n]+') do redis.call('SADD', P .. ':dependents:' .. dep, id) end
    redis.call('RPUSH', P .. ':events:' .. id, string.format(event, redis.call('INCR', P .. ':eventSeq')))
    if deadline ~= '' then redis.call('ZADD', P .. ':deadlines', tonumber(deadline), id) end
    answers[#answers + 1] = 1
  end
end
return answers
`

export const UPDATE = `
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`

/** A task after `changes` in a row, at `at`: each step's task and event, the events' templates, the JSON written. */
export function applied(
  current: Task,
  changes: readonly TaskChange[],
  at: string,
): { task: Task; steps: { task: Task; event: Omit<TaskEvent, 'seq'> }[]; templates: string[]; raw: string } {
  const steps: { task: Task; event: Omit<TaskEvent, 'seq'> }[] = []
  let task = current
  for (const change of changes) {
    const previous = task.state
    task = afterChange(task, change, at)
    steps.push({ task, event: { taskId: task.id, at, from: previous, to: change.to, reason: change.reason, attempt: task.attempts } })
  }
  // Each event's seq comes from the script's counter: `%d` stands where JSON has the placeholder 0.
  const templates = steps.map((step) =>
    JSON.stringify({ seq: 0, ...step.event })
      .replaceAll('%', '%%')
      .replace('{"seq":0,', '{"seq":%d,'),
  )
  return { task, steps, templates, raw: JSON.stringify(task) }
}
