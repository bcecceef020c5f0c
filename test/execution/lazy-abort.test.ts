import { LazyAbort } from '../../src/execution/lazy-abort'

describe("a run's lazily made AbortSignal", () => {
  it('is made on first use, and is born aborted with the reason of an abort that came before it', () => {
    const abort = new LazyAbort()
    const reason = new Error('deadline')
    abort.abort(reason)
    expect(abort.aborted).toBe(true)
    expect(abort.signal.aborted).toBe(true)
    expect(abort.signal.reason).toBe(reason)
  })

  it('aborts a signal already made, once, and tells listeners taken without it', () => {
    const abort = new LazyAbort()
    const heard: string[] = []
    abort.listen(() => heard.push('listener'))
    const stopped = abort.listen(() => heard.push('stopped listening'))
    stopped()
    abort.signal.addEventListener('abort', () => heard.push('signal'))
    abort.abort('first')
    abort.abort('second')
    expect(abort.signal.reason).toBe('first')
    expect(heard).toEqual(['signal', 'listener'])
  })
})
