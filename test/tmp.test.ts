import { PyodideAdapter } from '../adapters/pyodide'
import { contractContext } from './contract/adapter-contract'
test('x', async () => {
  const a = new PyodideAdapter({ poolSize: 1 }); await a.warm()
  for (const code of ["print('hello')\n6 * 7", "class A:\n  def f(self): return 5\nA().f()", "raise ValueError('boom')", "def (:", "import js\nprint(js.process.env)", "from js import Object\nf = Object.constructor('return typeof process === \"object\" ? Object.keys(process.env).length : \"none\"')\nprint(f())", "x = 1", "import collections\ncollections.Counter('aab').most_common(1)"]) {
    const t = Date.now(); const r = await a.execute({ language: 'python', code }, contractContext()); console.log(JSON.stringify(code).slice(0,40), r.status, JSON.stringify(r.value), JSON.stringify(r.stdout), r.error?.type, r.error?.message, r.error?.line, Date.now() - t)
  }
  const t = Date.now(); for (let i = 0; i < 50; i++) await a.execute({ language: 'python', code: '1+1' }, contractContext()); console.log('per run ms', (Date.now() - t) / 50)
  await a.dispose()
}, 60000)
