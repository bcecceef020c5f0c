import { parseRevisionReply } from '../../../src/fabric/plans'

/** The reflector's replies are a model's text: every shape it may take is read, or refused naming the flaw. */

const step = { id: 'b', language: 'python', code: 'print("{not a brace}")\n1', dependsOn: ['a'] }

test('a JSON object, fenced or wrapped in prose, with braces inside its strings', () => {
  const body = JSON.stringify({ note: 'fixed the import', steps: [step] })
  for (const reply of [body, '```json\n' + body + '\n```', `Here is the revised plan:\n${body}\nIt should work now {I think}.`]) {
    expect(parseRevisionReply(reply)).toEqual({ note: 'fixed the import', steps: [step] })
  }
})

test('a bare array of steps is taken; a note that is not a string is dropped', () => {
  expect(parseRevisionReply(JSON.stringify([step]))).toEqual({ steps: [step] })
  expect(parseRevisionReply(JSON.stringify({ note: 7, steps: [] }))).toEqual({ steps: [] })
})

test.each([
  ['Sorry, I cannot help with that.', 'unparseable reply: no JSON object in it'],
  ['{"steps": [ {"id": "b", }', 'unparseable reply: no JSON object in it'],
  ['{"steps": [1, 2,]}', /^unparseable reply: /],
  ['{"plan": []}', 'unparseable reply: it has no "steps" array'],
  [JSON.stringify({ steps: [{ ...step, language: 'cobol' }] }), 'steps[0]: language must be one of: javascript, typescript, python, bash'],
  [JSON.stringify({ steps: [{ ...step, id: 'has space' }] }), /^steps\[0\]: id must match pattern/],
  [JSON.stringify({ steps: [{ ...step, run: 'now' }] }), 'steps[0]: run is not a known field'],
  [JSON.stringify({ steps: [{ id: 'b', language: 'python' }] }), 'steps[0]: code is required'],
])('refused: %s', (reply, problem) => {
  const parsed = parseRevisionReply(reply)
  expect(parsed.steps).toBeUndefined()
  if (typeof problem === 'string') expect(parsed.problem).toBe(problem)
  else expect(parsed.problem).toMatch(problem)
})
