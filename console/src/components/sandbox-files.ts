import { useEffect, useState } from 'preact/hooks'
import type { ApiClient } from '../api'
import { formatBytes } from '../format'
import { html } from '../html'
import { saveBlob } from './download'
import { ErrorMessage, Loading } from './feedback'

/** A file's text is shown up to this many characters. */
const VIEW_CHARS = 64 * 1024

type Viewed = { path: string; text?: string; binary?: boolean; size: number }

/** A workspace path in a URL: each segment encoded, the slashes kept (the route's `*path` may hold folders). */
const filePath = (sandboxId: string, path: string) =>
  `/v1/sandboxes/${encodeURIComponent(sandboxId)}/files/${path.split('/').map(encodeURIComponent).join('/')}`

/** Text when the bytes are UTF-8 without NULs; undefined for anything else. */
async function textOf(blob: Blob): Promise<string | undefined> {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(await blob.arrayBuffer())
    return text.includes('\0') ? undefined : text
  } catch {
    return undefined
  }
}

/**
 * The sandbox's files (GET /v1/sandboxes/:id/files): view one as text, download it, delete it, and upload a file from
 * this computer (PUT with the file's bytes as the body). `version` changing (after an exec) lists them again.
 */
export function SandboxFiles({ api, sandboxId, version }: { api: ApiClient; sandboxId: string; version: number }) {
  const [files, setFiles] = useState<{ path: string; size: number }[]>()
  const [error, setError] = useState<unknown>()
  const [viewed, setViewed] = useState<Viewed>()
  const [upload, setUpload] = useState<File>()
  const [uploadPath, setUploadPath] = useState('')
  const [busy, setBusy] = useState<string>()
  const [ownVersion, setOwnVersion] = useState(0)
  useEffect(() => {
    api
      .get<{ files: { path: string; size: number }[] }>(`/v1/sandboxes/${encodeURIComponent(sandboxId)}/files`)
      .then((answer) => (setFiles(answer.files), setError(undefined)), setError)
  }, [api, sandboxId, version, ownVersion])

  const act = async (label: string, action: () => Promise<void>) => {
    setBusy(label)
    setError(undefined)
    try {
      await action()
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(undefined)
    }
  }
  const view = (path: string, size: number) =>
    act(`view ${path}`, async () => {
      const text = await textOf(await api.bytes(filePath(sandboxId, path)))
      setViewed(text === undefined ? { path, size, binary: true } : { path, size, text })
    })
  const download = (path: string) =>
    act(`download ${path}`, async () => saveBlob(await api.bytes(filePath(sandboxId, path)), path.split('/').pop()!))
  const remove = (path: string) =>
    act(`delete ${path}`, async () => {
      await api.request('DELETE', filePath(sandboxId, path))
      if (viewed?.path === path) setViewed(undefined)
      setOwnVersion((value) => value + 1)
    })
  const send = (event: Event) => {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    const target = uploadPath.trim() || upload?.name
    if (!upload || !target) return setError(new Error('choose a file to upload first'))
    void act('upload', async () => {
      await api.request('PUT', filePath(sandboxId, target), { rawBody: upload })
      form.reset()
      setUpload(undefined)
      setUploadPath('')
      setOwnVersion((value) => value + 1)
    })
  }

  return html`
    <${ErrorMessage} error=${error} />
    ${
      !files
        ? error
          ? null
          : html`<${Loading} what="files" />`
        : files.length === 0
          ? html`<p data-testid="no-files">The workspace is empty.</p>`
          : html`<div class="table-scroll">
            <table class="data" data-testid="file-table">
              <caption class="visually-hidden">Files in the sandbox's workspace</caption>
              <thead><tr><th scope="col">Path</th><th scope="col">Size</th><th scope="col">
                <span class="visually-hidden">Actions</span></th></tr></thead>
              <tbody>
                ${files.map(
                  (file) => html`<tr data-file=${file.path}>
                  <th scope="row"><code>${file.path}</code></th>
                  <td>${formatBytes(file.size)}</td>
                  <td class="row-actions">
                    <button type="button" class="link" onClick=${() => view(file.path, file.size)}
                      aria-label=${`View ${file.path}`}>View</button>
                    <button type="button" class="link" onClick=${() => download(file.path)}
                      aria-label=${`Download ${file.path}`}>Download</button>
                    <button type="button" class="link danger" disabled=${busy === `delete ${file.path}`} onClick=${() => remove(file.path)}
                      aria-label=${`Delete ${file.path}`}>Delete</button>
                  </td>
                </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
    <div class="actions"><button type="button" onClick=${() => setOwnVersion((value) => value + 1)}>Refresh files</button></div>
    ${
      viewed
        ? html`<div class="file-view" data-testid="file-view">
          <h3>${viewed.path} <span class="muted small">${formatBytes(viewed.size)}</span> <button type="button" class="link"
            onClick=${() => setViewed(undefined)}>Close</button></h3>
          ${
            viewed.binary
              ? html`<p class="muted">Not UTF-8 text: download it to look inside.</p>`
              : html`<pre class="output" tabindex="0"
            aria-label=${`Content of ${viewed.path}`}>${viewed.text!.slice(0, VIEW_CHARS)}</pre>
            ${viewed.text!.length > VIEW_CHARS ? html`<p class="hint">Showing the first ${formatBytes(VIEW_CHARS)}.</p>` : null}`
          }
        </div>`
        : null
    }
    <form class="controls upload" onSubmit=${send} aria-label="Upload a file">
      <div class="field">
        <label for="upload-file">File to upload</label>
        <input id="upload-file" type="file" onChange=${(event: Event) => {
          const chosen = (event.currentTarget as HTMLInputElement).files?.[0]
          setUpload(chosen)
          if (chosen && !uploadPath) setUploadPath(chosen.name)
        }} />
      </div>
      <div class="field">
        <label for="upload-path">Save as (workspace path)</label>
        <input id="upload-path" value=${uploadPath} spellcheck=${false} autocomplete="off" placeholder="the file's name"
          onInput=${(event: Event) => setUploadPath((event.currentTarget as HTMLInputElement).value)} />
      </div>
      <button type="submit" disabled=${busy === 'upload'}>${busy === 'upload' ? 'Uploading…' : 'Upload'}</button>
    </form>
  `
}
