import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'

const digests = new Map<string, string>()

/**
 * Runs a Lua script by its digest (EVALSHA), sending its text (EVAL) only when Redis does not hold it yet (NOSCRIPT:
 * a fresh or restarted Redis, a SCRIPT FLUSH). A plan on Redis runs ~15 scripts of ~1 KB each: EVAL sent each one's
 * text every time, and Redis hashed it to find the script it had compiled. An EVALSHA answered NOSCRIPT ran nothing,
 * so sending the EVAL then runs the script once.
 */
export async function runScript(redis: Redis, lua: string, keys: number, ...args: (string | number)[]): Promise<unknown> {
  return (await runScriptInOrder(redis, lua, keys, ...args)).answer
}

/**
 * runScript, saying whether the script ran as the command sent at the call (`inOrder`): a command sent on the same
 * connection after the call then ran after it. Not so after a NOSCRIPT: the EVAL was sent later.
 */
export async function runScriptInOrder(
  redis: Redis,
  lua: string,
  keys: number,
  ...args: (string | number)[]
): Promise<{ answer: unknown; inOrder: boolean }> {
  let digest = digests.get(lua)
  if (!digest) digests.set(lua, (digest = createHash('sha1').update(lua).digest('hex')))
  try {
    return { answer: await redis.evalsha(digest, keys, ...args), inOrder: true }
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
    return { answer: await redis.eval(lua, keys, ...args), inOrder: false }
  }
}
