import { useEffect, useState } from 'preact/hooks'
import type { ApiClient } from '../api'
import type { LineageEntity } from '../api-types-fabric'
import { formatBytes } from '../format'
import { html } from '../html'
import { saveBlob } from './download'
import { ErrorMessage, Loading } from './feedback'

/** Text is shown up to this many characters; longer text is cut, with the download for the rest. */
export const TEXT_PREVIEW_CHARS = 64 * 1024
/** Text artifacts larger than this are not fetched for a preview at all. */
const TEXT_FETCH_BYTES = 1024 * 1024
/** Images larger than this are not fetched for a preview. */
const IMAGE_FETCH_BYTES = 5 * 1024 * 1024

const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|x-sh|x-python|x-yaml|yaml|toml|sql|csv|x-ndjson|ld\+json)|[^;]*\+(json|xml))/

type Preview = { kind: 'text'; text: string; cut: boolean } | { kind: 'image'; dataUrl: string } | { kind: 'none'; why: string }

const artifactPath = (sha256: string) => `/v1/artifacts/${sha256}`

/** A file name for the download: the artifact's last path, else its digest. */
function fileName(entity: LineageEntity): string {
  const named = entity.paths.find((path) => !['code', 'value', 'stdout', 'stderr'].includes(path))
  return named ? named.split('/').pop()! : `${entity.sha256.slice(0, 16)}${entity.paths.includes('value') ? '.json' : ''}`
}

function readAsDataUrl(blob: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result))
    reader.onerror = () => reject(reader.error ?? new Error('the file could not be read'))
    reader.readAsDataURL(blob)
  })
}

/**
 * An artifact's content: text up to a cap, an image if its media type is one, otherwise its size and media type; a
 * download in every case. Images are shown from a data: URL (the console's Content-Security-Policy allows data:
 * images, and the route needs the key, which an <img src> could not send).
 */
export function ArtifactPreview({ api, entity }: { api: ApiClient; entity: LineageEntity }) {
  const [preview, setPreview] = useState<Preview>()
  const [error, setError] = useState<unknown>()
  useEffect(() => {
    setPreview(undefined)
    setError(undefined)
    const isText = TEXT_TYPES.test(entity.mediaType)
    const isImage = entity.mediaType.startsWith('image/')
    if (!isText && !isImage) return setPreview({ kind: 'none', why: `no preview for ${entity.mediaType}` })
    if (entity.size > (isText ? TEXT_FETCH_BYTES : IMAGE_FETCH_BYTES))
      return setPreview({ kind: 'none', why: `too large to preview (${formatBytes(entity.size)})` })
    let current = true
    api.bytes(artifactPath(entity.sha256)).then(
      async (blob) => {
        if (isImage) return current && setPreview({ kind: 'image', dataUrl: await readAsDataUrl(blob) })
        const text = await blob.text()
        if (current) setPreview({ kind: 'text', text: text.slice(0, TEXT_PREVIEW_CHARS), cut: text.length > TEXT_PREVIEW_CHARS })
      },
      (failure) => current && setError(failure),
    )
    return () => void (current = false)
  }, [api, entity.sha256])

  const [downloadError, setDownloadError] = useState<unknown>()
  const download = () => api.bytes(artifactPath(entity.sha256)).then((blob) => saveBlob(blob, fileName(entity)), setDownloadError)

  return html`
    <div class="artifact-preview" data-testid="artifact-preview">
      <dl class="facts">
        <div><dt>Media type</dt><dd data-testid="artifact-type">${entity.mediaType}</dd></div>
        <div><dt>Size</dt><dd>${formatBytes(entity.size)} (${entity.size.toLocaleString()} bytes)</dd></div>
        <div><dt>Named</dt><dd>${entity.paths.join(', ') || '—'}</dd></div>
      </dl>
      <${ErrorMessage} error=${error} context="Could not load the content" />
      ${!preview && !error ? html`<${Loading} what="the content" />` : null}
      ${
        preview?.kind === 'text'
          ? html`<pre class="output preview-text" data-testid="artifact-text" tabindex="0" aria-label="Content">
        ${preview.text}</pre>${
          preview.cut
            ? html`<p class="hint">
        Showing the first ${formatBytes(TEXT_PREVIEW_CHARS)}; download for all of it.</p>`
            : null
        }`
          : null
      }
      ${
        preview?.kind === 'image'
          ? html`<img class="preview-image" data-testid="artifact-image" src=${preview.dataUrl}
        alt=${`The image ${entity.paths[0] ?? entity.sha256}`} />`
          : null
      }
      ${
        preview?.kind === 'none'
          ? html`<p class="muted">${preview.why[0]!.toUpperCase()}
        ${preview.why.slice(1)}: download it to look inside.</p>`
          : null
      }
      <div class="actions"><button type="button" onClick=${download}>Download ${fileName(entity)}</button></div>
      <${ErrorMessage} error=${downloadError} context="Download failed" />
    </div>
  `
}
