import type { FileReference, RequestFile, WorkspaceFile } from './types'

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** A workspace file's bytes, from its text or its base64 content. */
export function workspaceFileBytes(file: WorkspaceFile): Buffer {
  return Buffer.from(file.content, file.encoding === 'base64' ? 'base64' : 'utf8')
}

/** A workspace file from bytes: as text when they are valid UTF-8, otherwise base64, so nothing is lost. */
export function toWorkspaceFile(path: string, bytes: Uint8Array): WorkspaceFile {
  try {
    return { path, content: strictUtf8.decode(bytes) }
  } catch {
    return { path, content: Buffer.from(bytes).toString('base64'), encoding: 'base64' }
  }
}

/** Whether a request's file names an upload by digest rather than carrying its content. */
export function isFileReference(file: RequestFile): file is FileReference {
  return typeof (file as Partial<FileReference>).sha256 === 'string' && (file as Partial<WorkspaceFile>).content === undefined
}

/** A request's files that carry their content (the service has resolved every reference before an adapter runs). */
export function inlineFiles(files: readonly RequestFile[] | undefined): WorkspaceFile[] {
  return (files ?? []).filter((file): file is WorkspaceFile => !isFileReference(file))
}
