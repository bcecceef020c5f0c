import type { Language } from '../../core'

/**
 * Media types the ledger records for artifacts, guessed from the file name: the ledger never sniffs content, so a
 * name it does not know is `application/octet-stream` and the bytes are served as such.
 */
const BY_EXTENSION: Readonly<Record<string, string>> = {
  txt: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  json: 'application/json',
  tar: 'application/x-tar',
  jsonl: 'application/x-ndjson',
  ndjson: 'application/x-ndjson',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  js: 'text/javascript',
  mjs: 'text/javascript',
  ts: 'text/typescript',
  py: 'text/x-python',
  sh: 'text/x-shellscript',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  parquet: 'application/vnd.apache.parquet',
}

export const TEXT_PLAIN = 'text/plain; charset=utf-8'
export const JSON_MEDIA_TYPE = 'application/json'

export function mediaTypeOf(path: string): string {
  const dot = path.lastIndexOf('.')
  const extension = dot > path.lastIndexOf('/') ? path.slice(dot + 1).toLowerCase() : ''
  return BY_EXTENSION[extension] ?? 'application/octet-stream'
}

const CODE_MEDIA_TYPES: Readonly<Record<Language, string>> = {
  javascript: 'text/javascript',
  typescript: 'text/typescript',
  python: 'text/x-python',
  bash: 'text/x-shellscript',
}

export function codeMediaType(language: Language | undefined): string {
  return (language && CODE_MEDIA_TYPES[language]) || 'text/plain'
}
