import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Logger } from '../../observability/logger'
import { describeError } from '../../core'
import type { OutputRelay, TaskOutput } from './output-relay'

/**
 * Rich outputs between processes over Redis pub/sub, on the channel `<prefix>:outputs`: each message is one output as
 * JSON with the id of the process that made it (which ignores its own). Pub/sub keeps nothing: a reader hears the
 * outputs made while it listens, and the task's stored result keeps them all. Each side connects at first use, so a
 * worker nobody reads from opens only the publishing connection, and a node that runs nothing only the subscriber.
 */
export class RedisOutputRelay implements OutputRelay {
  private readonly origin = randomUUID()
  private readonly channel: string
  private publisher: Redis | undefined
  private subscriber: Redis | undefined
  private readonly listeners = new Set<(output: TaskOutput) => void>()

  constructor(
    private readonly connect: () => Redis,
    prefix: string,
    private readonly logger?: Logger,
  ) {
    this.channel = `${prefix}:outputs`
  }

  publish(output: TaskOutput): void {
    this.publisher ??= this.connect()
    this.publisher
      .publish(this.channel, JSON.stringify({ origin: this.origin, output }))
      .catch((error: unknown) => this.logger?.warn({ taskId: output.taskId, err: describeError(error) }, 'a rich output was not relayed'))
  }

  subscribe(listener: (output: TaskOutput) => void): () => void {
    if (!this.subscriber) {
      const subscriber = (this.subscriber = this.connect())
      subscriber.on('message', (_channel: string, message: string) => {
        let parsed: { origin?: string; output?: TaskOutput }
        try {
          parsed = JSON.parse(message) as typeof parsed
        } catch {
          return
        }
        if (parsed.origin === this.origin || !parsed.output) return
        for (const each of this.listeners) each(parsed.output)
      })
      subscriber
        .subscribe(this.channel)
        .catch((error: unknown) => this.logger?.warn({ err: describeError(error) }, 'rich outputs of other processes will not be heard'))
    }
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  async close(): Promise<void> {
    this.listeners.clear()
    const connections = [this.publisher, this.subscriber].filter((connection): connection is Redis => connection !== undefined)
    this.publisher = this.subscriber = undefined
    await Promise.all(connections.map((connection) => connection.quit().catch(() => connection.disconnect())))
  }
}
