/**
 * Where a JSON text stops being JSON, as an offset: a small recursive-descent reader of the grammar (RFC 8259). The
 * browser's JSON.parse says what is wrong but, in Chromium, not always where ("Unexpected token '}', … is not valid
 * JSON"), and a plan document is long enough that the line matters. Undefined when the text is valid JSON.
 */
export function jsonErrorOffset(text: string): number | undefined {
  let at = 0
  const fail = (): never => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the offset itself is what the caller catches
    throw at
  }
  const space = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at]!)) at++
  }
  const expect = (literal: string) => {
    for (const char of literal) if (text[at++] !== char) (at--, fail())
  }
  const string = () => {
    expect('"')
    for (;;) {
      if (at >= text.length) fail()
      const char = text[at]!
      if (char === '"') return void at++
      if (char < ' ') fail()
      if (char === '\\') {
        at++
        if (text[at] === 'u') {
          at++
          for (let digit = 0; digit < 4; digit++, at++) if (!/[0-9a-fA-F]/.test(text[at] ?? '')) fail()
          continue
        }
        if (!'"\\/bfnrt'.includes(text[at] ?? 'x')) fail()
      }
      at++
    }
  }
  const number = () => {
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(at))
    if (!match) fail()
    at += match![0].length
  }
  const value = (): void => {
    space()
    const char = text[at]
    if (char === '{') {
      at++
      space()
      if (text[at] === '}') return void at++
      for (;;) {
        space()
        string()
        space()
        expect(':')
        value()
        space()
        if (text[at] === ',') at++
        else return expect('}')
      }
    }
    if (char === '[') {
      at++
      space()
      if (text[at] === ']') return void at++
      for (;;) {
        value()
        space()
        if (text[at] === ',') at++
        else return expect(']')
      }
    }
    if (char === '"') return string()
    if (char === 't') return expect('true')
    if (char === 'f') return expect('false')
    if (char === 'n') return expect('null')
    return number()
  }
  try {
    value()
    space()
    if (at < text.length) fail()
    return undefined
  } catch (offset) {
    return offset as number
  }
}
