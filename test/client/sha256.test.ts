import { createHash, randomBytes } from 'node:crypto'
import { Sha256 } from '../../src/client/sha256'

/** The client's own SHA-256 (it hashes a Blob as it streams, without node:crypto) agrees with Node's. */
test('digests equal node:crypto at every padding boundary, fed whole and in odd pieces', () => {
  for (const size of [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 65_537]) {
    const bytes = randomBytes(size)
    const expected = createHash('sha256').update(bytes).digest('hex')
    const pieces = new Sha256()
    for (let at = 0; at < size; at += 7) pieces.update(bytes.subarray(at, at + 7))
    expect({ size, whole: new Sha256().update(bytes).hex(), pieces: pieces.hex() }).toEqual({ size, whole: expected, pieces: expected })
  }
  expect(new Sha256().update(new TextEncoder().encode('abc')).hex()).toBe(
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
  )
})
