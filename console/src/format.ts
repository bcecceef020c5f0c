/** Numbers and times as the console writes them: short, with their unit. */

export function formatMs(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '—'
  if (ms < 1) return `${ms.toFixed(2)} ms`
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`
}

export function formatTime(at: string | number | undefined): string {
  if (at === undefined) return '—'
  const date = new Date(at)
  return Number.isNaN(date.getTime()) ? String(at) : date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })
}

export function formatDateTime(at: string | undefined): string {
  if (!at) return '—'
  const date = new Date(at)
  return Number.isNaN(date.getTime()) ? at : date.toLocaleString([], { dateStyle: 'medium', timeStyle: 'medium' })
}

/** Seconds or minutes ago, for a timeline. */
export function formatAgo(at: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - new Date(at).getTime()) / 1000))
  if (seconds < 60) return `${seconds} s ago`
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`
  return `${Math.round(seconds / 3600)} h ago`
}

export function formatJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? 'undefined'
  } catch {
    return String(value)
  }
}

/** Bytes as people read them. */
export function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined) return '—'
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

/** A long id or digest cut for a table cell; the whole one goes in a title. */
export function shortId(id: string, keep = 8): string {
  return id.length > keep + 4 ? `${id.slice(0, keep)}…` : id
}
