import { TaskLiveOutput, type TaskOutputChunk } from '../../../src/fabric/tasks/task-live-output'

/** What a run printed so far, kept for a stream opened mid-run: bounded, per attempt, gone when the run ends. */

const chunk = (taskId: string, text: string): TaskOutputChunk => ({ type: 'output', taskId, stream: 'stdout', chunk: text })

test('keeps the newest chunks within its bound, and copies them out', () => {
  const live = new TaskLiveOutput(10)
  live.begin('a', 1)
  for (const text of ['1234', '5678', 'abcd', 'efgh']) live.add(chunk('a', text))
  const snapshot = live.snapshot('a')!
  expect([snapshot.attempt, snapshot.chunks.map((item) => item.chunk)]).toEqual([1, ['abcd', 'efgh']])
  live.add(chunk('a', 'ij'))
  expect(snapshot.chunks).toHaveLength(2)
  // One chunk larger than the bound is kept whole: the reader sees the run's latest line rather than nothing.
  live.add(chunk('a', 'x'.repeat(50)))
  expect(live.snapshot('a')!.chunks.map((item) => item.chunk.length)).toEqual([50])
})

test('keeps nothing for a task not running here; an older attempt ending does not drop the newer one', () => {
  const live = new TaskLiveOutput()
  live.add(chunk('b', 'lost'))
  expect(live.snapshot('b')).toBeUndefined()
  live.begin('b', 2)
  live.add(chunk('b', 'second'))
  live.end('b', 1)
  expect(live.snapshot('b')!.chunks.map((item) => item.chunk)).toEqual(['second'])
  live.end('b', 2)
  expect(live.snapshot('b')).toBeUndefined()
})
