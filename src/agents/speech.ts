import { spokenTable, type Output } from '../core'

/**
 * Results in words a text-to-speech engine says well: numbers as a person would say them, money with its currency,
 * dates as dates, long results summarised, no markdown and no code.
 */

const CURRENCY_WORDS: Record<string, [string, string]> = { $: ['dollars', 'cents'], '€': ['euros', 'cents'], '£': ['pounds', 'pence'] }

/** 1234.5 → "1,234.5"; 3.14159 → "3.14"; keeps what TTS engines read naturally. */
export function speakNumber(value: number): string {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? 'not a number' : value > 0 ? 'infinity' : 'minus infinity'
  const rounded = Math.abs(value) >= 100 ? Math.round(value * 100) / 100 : Math.round(value * 1000) / 1000
  const text = rounded.toLocaleString('en-US', { maximumFractionDigits: 3 })
  return text.startsWith('-') ? `minus ${text.slice(1)}` : text
}

/** "$27.54" → "27 dollars and 54 cents". */
export function speakMoney(amount: number, symbol = '$'): string {
  const [major, minor] = CURRENCY_WORDS[symbol] ?? ['units', 'hundredths']
  const cents = Math.round(Math.abs(amount) * 100)
  const whole = Math.floor(cents / 100)
  const rest = cents % 100
  const sign = amount < 0 ? 'minus ' : ''
  const wholeText = `${whole.toLocaleString('en-US')} ${whole === 1 ? major.replace(/s$/, '') : major}`
  return rest === 0 ? `${sign}${wholeText}` : `${sign}${wholeText} and ${rest} ${rest === 1 ? minor.replace(/s$/, '') : minor}`
}

/** "2026-11-23" → "November 23, 2026". */
export function speakDate(iso: string): string | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?/.exec(iso)
  if (!match) return undefined
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])))
  if (Number.isNaN(date.getTime())) return undefined
  const day = date.toLocaleDateString('en-US', { month: 'long', day: 'numeric', year: 'numeric', timeZone: 'UTC' })
  return match[4] ? `${day} at ${Number(match[4])}:${match[5]}` : day
}

/** Replaces money, ISO dates and long decimals inside free text, and strips markdown. */
export function speakText(text: string): string {
  return text
    .replace(/```[\s\S]*?```/g, '')
    .replace(/[*_`#>|]/g, '')
    .replace(/([$€£])\s?(-?\d[\d,]*(?:\.\d+)?)/g, (_, symbol: string, amount: string) =>
      speakMoney(Number(amount.replace(/,/g, '')), symbol),
    )
    .replace(/\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?)?\b/g, (iso) => speakDate(iso) ?? iso)
    .replace(/-?\d+\.\d{4,}/g, (number) => speakNumber(Number(number)))
    .replace(/\s+/g, ' ')
    .trim()
}

/** A value as a short spoken phrase; lists and objects longer than a few items are summarised. */
export function speakValue(value: unknown, depth = 0): string {
  if (value === null || value === undefined) return 'nothing'
  if (typeof value === 'number') return speakNumber(value)
  if (typeof value === 'boolean') return value ? 'yes' : 'no'
  if (typeof value === 'string') return speakText(value.length > 200 ? `${value.slice(0, 200)}, and more` : value)
  if (Array.isArray(value)) {
    if (value.length === 0) return 'an empty list'
    const shown = value.slice(0, 3).map((item) => speakValue(item, depth + 1))
    return value.length > 3
      ? `${value.length} items, starting with ${shown.join(', ')}`
      : shown.length === 1
        ? shown[0]!
        : `${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}`
  }
  if (typeof value === 'object' && depth < 2) {
    const entries = Object.entries(value as Record<string, unknown>)
    const shown = entries.slice(0, 3).map(([key, item]) => `${key.replace(/[_-]+/g, ' ')} ${speakValue(item, depth + 1)}`)
    return entries.length > 3 ? `${shown.join(', ')}, and ${entries.length - 3} more` : shown.join(', ')
  }
  return 'a result'
}

function counted(count: number, one: string, many: string): string {
  return count === 1 ? one : `${count} ${many}`
}

/**
 * What a run made besides its value, said aloud: "I made a chart and a table. revenue: north 15, south 20, east
 * 7.25." The first table's numbers are spoken (its label column with its first number column, a few rows); empty when
 * the run made no outputs.
 */
export function speakOutputs(outputs: readonly Output[] | undefined): string {
  if (!outputs?.length) return ''
  const charts = outputs.filter((output) => output.kind === 'image').length
  const tables = outputs.filter((output) => output.kind === 'table')
  const others = outputs.length - charts - tables.length
  const made = [
    charts ? counted(charts, 'a chart', 'charts') : '',
    tables.length ? counted(tables.length, 'a table', 'tables') : '',
    others ? counted(others, 'one more item', 'more items') : '',
  ].filter(Boolean)
  const list = made.length > 1 ? `${made.slice(0, -1).join(', ')} and ${made.at(-1)}` : made[0]!
  const table = tables[0]
  const numbers = table?.kind === 'table' ? spokenTable(table, 5, speakNumber) : undefined
  return `I made ${list}.${numbers ? ` ${speakText(numbers.replace(/[_-]+/g, ' '))}.` : ''}`
}
