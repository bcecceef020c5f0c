import { randomFillSync } from 'node:crypto'

/**
 * Run ids are UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Every run's id is the key
 * of its ledger record, and the record store's `(tenant, id)` index took random v4 ids at random places: each batch
 * dirtied index pages all over the file (measured at 100,000 records: 23.8 µs of CPU a record to write, 15.8 µs with
 * time-ordered ids, the gap growing with the ledger). A v7 id is as unique and as unguessable as the caller needs (the
 * 74 random bits; records are scoped by tenant anyway) and lands at the index's end.
 */
const POOL_IDS = 256
const pool = Buffer.alloc(16 * POOL_IDS)
let next = POOL_IDS

const HEX_DIGITS = Buffer.from('0123456789abcdef')
/** The id's text, written byte by byte: one flat string, 0.1–0.15 µs a run less than hex, five slices and a template (measured). */
const text = Buffer.alloc(36, '-')
/** Where each of the 16 bytes' two hex digits go, around the dashes. */
const DIGIT_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]

export function newRunId(now: number = Date.now()): string {
  if (next === POOL_IDS) {
    randomFillSync(pool)
    next = 0
  }
  const at = next++ * 16
  // The 48-bit milliseconds big-endian, byte by byte: writeUIntBE's argument checks were a third of this function's time.
  const high = Math.floor(now / 2 ** 32)
  const low = now >>> 0
  pool[at] = high >>> 8
  pool[at + 1] = high
  pool[at + 2] = low >>> 24
  pool[at + 3] = low >>> 16
  pool[at + 4] = low >>> 8
  pool[at + 5] = low
  pool[at + 6] = (pool[at + 6]! & 0x0f) | 0x70
  pool[at + 8] = (pool[at + 8]! & 0x3f) | 0x80
  for (let index = 0; index < 16; index++) {
    const byte = pool[at + index]!
    const digit = DIGIT_AT[index]!
    text[digit] = HEX_DIGITS[byte >> 4]!
    text[digit + 1] = HEX_DIGITS[byte & 15]!
  }
  return text.toString('latin1')
}
