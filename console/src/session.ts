/**
 * The API key, kept for this browser tab's session only: sessionStorage is cleared when the tab closes and is never
 * sent to the server by itself (unlike a cookie), and unlike localStorage it does not outlive the session.
 */
const KEY = 'execgate.apiKey'

export function storedKey(): string | undefined {
  try {
    return sessionStorage.getItem(KEY) ?? undefined
  } catch {
    return undefined
  }
}

export function storeKey(key: string | undefined): void {
  try {
    if (key) sessionStorage.setItem(KEY, key)
    else sessionStorage.removeItem(KEY)
  } catch {
    // Storage refused (a private mode): the key then lives in memory only, for this page.
  }
}
