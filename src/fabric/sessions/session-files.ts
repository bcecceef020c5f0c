/**
 * A session's workspace files as the session registry keeps them beside its state (a monty session's, so the node
 * that takes it over has its files too): one JSON document of paths and base64 contents. Only a workspace up to
 * `SESSION_FILES_MAX_BYTES` is kept: a larger one is written after every call for nothing most of the time, and a
 * session taken over without it says its files were not kept.
 */
export interface SessionFile {
  path: string
  content: Buffer
}

export const SESSION_FILES_MAX_BYTES = 8 * 1024 * 1024

/** The files as bytes, or undefined when their contents pass `SESSION_FILES_MAX_BYTES`. */
export function encodeSessionFiles(files: readonly SessionFile[]): Uint8Array | undefined {
  const total = files.reduce((sum, file) => sum + file.content.byteLength, 0)
  if (total > SESSION_FILES_MAX_BYTES) return undefined
  return Buffer.from(JSON.stringify(files.map((file) => ({ path: file.path, data: file.content.toString('base64') }))))
}

export function decodeSessionFiles(bytes: Uint8Array): SessionFile[] {
  const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as { path: string; data: string }[]
  return parsed.map((file) => ({ path: file.path, content: Buffer.from(file.data, 'base64') }))
}
