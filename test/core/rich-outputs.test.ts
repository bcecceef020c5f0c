import { acceptOutputs, outputResultFields } from '../../src/core'
import { DEFAULT_POLICY } from '../../src/policy'

/**
 * The host's check of what a runner reports from inside its sandbox: nothing it says about an output is trusted,
 * its bytes are counted here and the policy's count and bytes hold whatever the runner did.
 */
const png = Buffer.from('\x89PNG\r\n\x1a\n' + 'x'.repeat(100), 'latin1').toString('base64')

describe('rich outputs as the host accepts them', () => {
  test('bytes are counted by the host, never taken from the report', () => {
    const { outputs } = acceptOutputs(
      [
        { kind: 'image', mimeType: 'image/png', data: png, bytes: 1 },
        { kind: 'table', columns: ['a'], rows: [[1], [2]], rowCount: 5, bytes: 0 },
        { kind: 'json', data: { a: [1, 2] } },
        { kind: 'html', data: '<b>é</b>' },
      ],
      DEFAULT_POLICY,
    )
    expect(outputs.map((output) => [output.kind, output.bytes])).toEqual([
      ['image', 108],
      ['table', JSON.stringify({ columns: ['a'], rows: [[1], [2]] }).length],
      ['json', JSON.stringify({ a: [1, 2] }).length],
      ['html', Buffer.byteLength('<b>é</b>')],
    ])
    expect(outputs[2]).toMatchObject({ mimeType: 'application/json' })
  })

  test('malformed items are dropped: a foreign mime type, data that is not base64, a table claiming fewer rows than it has', () => {
    const accepted = acceptOutputs(
      [
        { kind: 'image', mimeType: 'text/html', data: png },
        { kind: 'image', mimeType: 'image/png', data: '<script>' },
        { kind: 'table', columns: ['a'], rows: [[1], [2]], rowCount: 1 },
        { kind: 'table', columns: [1], rows: [], rowCount: 0 },
        { kind: 'file', data: 'x' },
        'image',
      ],
      DEFAULT_POLICY,
    )
    expect(accepted).toMatchObject({ outputs: [], overLimit: 0, reason: '6 malformed outputs dropped' })
  })

  test('the count and the bytes hold: items past them are left out and an ok run becomes output_limit', () => {
    const policy = { ...DEFAULT_POLICY, maxOutputs: 2, outputsBytes: 250 }
    const images = Array.from({ length: 4 }, () => ({ kind: 'image', mimeType: 'image/png', data: png }))
    expect(acceptOutputs(images, policy)).toMatchObject({ overLimit: 2, outputs: [{ bytes: 108 }, { bytes: 108 }] })
    const small = { ...policy, maxOutputs: 10, outputsBytes: 200 }
    expect(acceptOutputs(images, small).outputs).toHaveLength(1)
    const fields = outputResultFields('ok', images, 3, policy, 'process')
    expect(fields.status).toBe('output_limit')
    expect(fields.outputs).toHaveLength(2)
    expect(fields.message).toBe(
      '[execgate] [process] 5 outputs left out: a run may return 2 outputs of 250 bytes in all (policy maxOutputs, outputsBytes)',
    )
    // A run that already failed keeps its status; the outputs it made before are kept.
    expect(outputResultFields('error', images, 0, policy, 'process')).toMatchObject({ status: 'error', outputs: [{}, {}] })
    expect(outputResultFields('ok', undefined, undefined, policy, 'process')).toEqual({ status: 'ok' })
  })
})
