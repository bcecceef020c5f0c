import type { OutputStream } from './adapter'

/**
 * Output capture with the cap applied while the code runs, not after: a flood never grows the host's memory
 * past about twice the cap per stream. When the cap is passed, the head and the tail are kept with a marker
 * between them, which is what a person (or an LLM) reading a failed run needs most.
 */

export function truncationMarker(omittedBytes: number): string {
  return `\n…[execgate: ${omittedBytes} bytes omitted]…\n`
}

/** The largest prefix of `buffer` of at most `maxBytes` that ends on a UTF-8 character boundary. */
function headBytes(buffer: Buffer, maxBytes: number): Buffer {
  let end = Math.min(maxBytes, buffer.length)
  while (end > 0 && end < buffer.length && (buffer[end]! & 0xc0) === 0x80) end--
  return buffer.subarray(0, end)
}

/** The largest suffix of `buffer` of at most `maxBytes` that starts on a UTF-8 character boundary. */
function tailBytes(buffer: Buffer, maxBytes: number): Buffer {
  let start = Math.max(0, buffer.length - maxBytes)
  while (start < buffer.length && (buffer[start]! & 0xc0) === 0x80) start++
  return buffer.subarray(start)
}

class StreamBuffer {
  private head = ''
  private headSize = 0
  private tail: Buffer[] = []
  private tailSize = 0
  total = 0

  constructor(private readonly keepBytes: number) {}

  /** `omittedBytes`: bytes of this write left out before it got here (between its head and its tail). */
  append(text: string, omittedBytes = 0): void {
    const size = Buffer.byteLength(text)
    this.total += size + omittedBytes
    let rest: Buffer | undefined
    if (this.tailSize === 0 && this.headSize < this.keepBytes) {
      if (this.headSize + size <= this.keepBytes) {
        this.head += text
        this.headSize += size
        return
      }
      const buffer = Buffer.from(text)
      const fits = headBytes(buffer, this.keepBytes - this.headSize)
      this.head += fits.toString()
      this.headSize += fits.length
      rest = buffer.subarray(fits.length)
    }
    const chunk = rest ?? Buffer.from(text)
    // One huge write keeps only what a tail can show.
    const kept = chunk.length > 2 * this.keepBytes ? Buffer.from(tailBytes(chunk, this.keepBytes)) : chunk
    this.tail.push(kept)
    this.tailSize += kept.length
    // Drop whole chunks from the front while what is left still covers the tail we may need.
    while (this.tail.length > 1 && this.tailSize - this.tail[0]!.length >= this.keepBytes) {
      this.tailSize -= this.tail.shift()!.length
    }
  }

  /** The stream cut to `budget` bytes: whole if it fits, else head + marker + tail. */
  render(budget: number): string {
    const complete = this.total === this.headSize + this.tailSize
    const tail = this.tail.length ? Buffer.concat(this.tail) : undefined
    if (this.total <= budget && complete) return tail ? this.head + tail.toString() : this.head
    const head = Buffer.from(this.head)
    const all = complete && tail ? Buffer.concat([head, tail]) : head
    const headPart = headBytes(all, Math.floor(budget / 2))
    const tailPart = tailBytes(complete || !tail ? all : tail, budget - headPart.length)
    const omitted = this.total - headPart.length - tailPart.length
    return headPart.toString() + truncationMarker(omitted) + tailPart.toString()
  }
}

export interface CapturedOutput {
  stdout: string
  stderr: string
  truncated: boolean
  stdoutBytes: number
  stderrBytes: number
}

export class OutputCapture {
  private readonly streams: Record<OutputStream, StreamBuffer>

  /**
   * @param limitBytes the policy's output cap (stdout + stderr + value)
   * @param onOutput forwards every chunk as it arrives, for streaming callers; chunks past the cap are not sent
   */
  constructor(
    readonly limitBytes: number,
    private readonly onOutput?: (stream: OutputStream, chunk: string) => void,
  ) {
    this.streams = { stdout: new StreamBuffer(limitBytes), stderr: new StreamBuffer(limitBytes) }
  }

  get totalBytes(): number {
    return this.streams.stdout.total + this.streams.stderr.total
  }

  /** True once the code has written more than the cap. */
  get exceeded(): boolean {
    return this.totalBytes > this.limitBytes
  }

  /** Records a chunk; returns false once the cap is passed, so the adapter can stop the run. */
  write(stream: OutputStream, text: string, omittedBytes = 0): boolean {
    const wasExceeded = this.exceeded
    this.streams[stream].append(text, omittedBytes)
    if (this.onOutput && !wasExceeded) this.onOutput(stream, text)
    return !this.exceeded
  }

  /** The captured output, cut to the cap less `reservedBytes` (the value's share). */
  finish(reservedBytes = 0): CapturedOutput {
    const out = this.streams.stdout
    const err = this.streams.stderr
    const budget = Math.max(0, this.limitBytes - reservedBytes)
    const truncated = out.total + err.total > budget
    let outBudget = out.total
    let errBudget = err.total
    if (truncated) {
      const half = Math.floor(budget / 2)
      outBudget = Math.min(out.total, Math.max(half, budget - err.total))
      errBudget = budget - outBudget
    }
    return {
      stdout: out.render(outBudget),
      stderr: err.render(errBudget),
      truncated,
      stdoutBytes: out.total,
      stderrBytes: err.total,
    }
  }
}

/** Cuts output a backend returned whole (remote adapters) to the cap, the same way as a live capture. */
export function truncateOutput(stdout: string, stderr: string, limitBytes: number, reservedBytes = 0): CapturedOutput {
  const capture = new OutputCapture(limitBytes)
  capture.write('stdout', stdout)
  capture.write('stderr', stderr)
  return capture.finish(reservedBytes)
}

/** Bytes of a value's JSON, the share of the output cap it uses; `undefined` costs nothing. */
export function valueBytes(value: unknown): number {
  if (value === undefined) return 0
  // The common values without JSON.stringify (counted twice a run, by the adapter and the service): a finite number's
  // text is its JSON, all ASCII; any other number is `null` in JSON.
  if (typeof value === 'number') return Number.isFinite(value) ? String(value).length : 4
  if (typeof value === 'boolean') return value ? 4 : 5
  if (value === null) return 4
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '')
  } catch {
    return 0
  }
}
