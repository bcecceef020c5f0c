import type { RefObject } from 'preact'
import { useRef, useState } from 'preact/hooks'
import { html } from '../html'

/** A finding to mark at its line (and column), from POST /v1/validate. */
export interface EditorFinding {
  line: number
  column?: number
  message: string
  severity: 'error' | 'warning'
}

export interface CodeEditorProps {
  id: string
  label: string
  value: string
  onChange: (value: string) => void
  /** What one Tab inserts: four spaces for Python, two otherwise. */
  indent: string
  findings?: readonly EditorFinding[]
  /** Ctrl+Enter (⌘+Enter on a Mac). */
  onRun?: () => void
  /** What Ctrl+Enter does, for the hint. @default 'runs' */
  runVerb?: string
  textareaRef?: RefObject<HTMLTextAreaElement>
}

/** Inserts text where the selection is, through the browser's editing so that undo (Ctrl+Z) still works. */
function insertText(textarea: HTMLTextAreaElement, text: string): void {
  textarea.focus()
  if (document.execCommand?.('insertText', false, text)) return
  textarea.setRangeText(text, textarea.selectionStart, textarea.selectionEnd, 'end')
  textarea.dispatchEvent(new Event('input', { bubbles: true }))
}

/** Tab / Shift+Tab over the selected lines: indents or outdents each of them, keeping them selected. */
function indentLines(textarea: HTMLTextAreaElement, indent: string, outdent: boolean): void {
  const { value, selectionStart, selectionEnd } = textarea
  if (!outdent && !value.slice(selectionStart, selectionEnd).includes('\n')) return insertText(textarea, indent)
  const start = value.lastIndexOf('\n', selectionStart - 1) + 1
  const endBreak = value.indexOf('\n', selectionEnd - (selectionEnd > selectionStart && value[selectionEnd - 1] === '\n' ? 1 : 0))
  const end = endBreak === -1 ? value.length : endBreak
  const lines = value.slice(start, end).split('\n')
  const changed = lines.map((line) => (outdent ? line.replace(new RegExp(`^( {1,${indent.length}}|\\t)`), '') : indent + line)).join('\n')
  textarea.setSelectionRange(start, end)
  insertText(textarea, changed)
  textarea.setSelectionRange(start, start + changed.length)
}

/** Puts the caret at a 1-based line and column and scrolls it into view. */
export function focusAt(textarea: HTMLTextAreaElement, line: number, column = 1): void {
  const lines = textarea.value.split('\n')
  const row = Math.min(Math.max(line, 1), lines.length)
  const offset =
    lines.slice(0, row - 1).reduce((sum, text) => sum + text.length + 1, 0) + Math.min(Math.max(column - 1, 0), lines[row - 1]!.length)
  textarea.focus()
  textarea.setSelectionRange(offset, offset)
  const lineHeight = parseFloat(getComputedStyle(textarea).lineHeight) || 20
  textarea.scrollTop = Math.max(0, (row - 3) * lineHeight)
}

/**
 * A code editor that is a textarea (no editor library: the whole console stays small), with line numbers, findings
 * marked at their line, Tab indenting and Enter keeping the indentation. Keyboard users are never trapped: Escape,
 * then Tab, leaves the editor, as the hint under it says.
 */
export function CodeEditor({ id, label, value, onChange, indent, findings = [], onRun, runVerb = 'runs', textareaRef }: CodeEditorProps) {
  const [scrollTop, setScrollTop] = useState(0)
  const escaped = useRef(false)
  const ownRef = useRef<HTMLTextAreaElement>(null)
  const ref = textareaRef ?? ownRef
  const lineCount = value.split('\n').length
  const byLine = new Map<number, EditorFinding[]>()
  for (const finding of findings) byLine.set(finding.line, [...(byLine.get(finding.line) ?? []), finding])

  const onKeyDown = (event: KeyboardEvent) => {
    const textarea = event.currentTarget as HTMLTextAreaElement
    if (['Shift', 'Control', 'Alt', 'Meta'].includes(event.key)) return
    const wasEscaped = escaped.current
    escaped.current = event.key === 'Escape'
    if ((event.ctrlKey || event.metaKey) && event.key === 'Enter') {
      event.preventDefault()
      onRun?.()
    } else if (event.key === 'Tab' && !wasEscaped && !event.ctrlKey && !event.altKey && !event.metaKey) {
      event.preventDefault()
      indentLines(textarea, indent, event.shiftKey)
    } else if (event.key === 'Enter' && !event.shiftKey && !event.altKey && textarea.selectionStart === textarea.selectionEnd) {
      const before = textarea.value.slice(0, textarea.selectionStart)
      const line = before.slice(before.lastIndexOf('\n') + 1)
      const leading = /^[ \t]*/.exec(line)![0]
      event.preventDefault()
      insertText(textarea, `\n${leading}${/[:{[(]\s*$/.test(line) ? indent : ''}`)
    }
  }

  return html`
    <div class="editor-field">
      <label for=${id}>${label}</label>
      <div class="editor">
        <div class="editor-gutter" aria-hidden="true">
          <div style=${{ transform: `translateY(${-scrollTop}px)` }}>
            ${Array.from({ length: lineCount }, (_, index) => {
              const marks = byLine.get(index + 1)
              const severity = marks?.some((mark) => mark.severity === 'error') ? 'error' : 'warning'
              return html`<div class=${marks ? `gutter-line has-finding finding-${severity}` : 'gutter-line'} data-line=${index + 1}
                title=${marks?.map((mark) => mark.message).join('\n')}>${index + 1}</div>`
            })}
          </div>
        </div>
        <div class="editor-body">
          <div class="editor-marks" aria-hidden="true" style=${{ transform: `translateY(${-scrollTop}px)` }}>
            ${[...byLine.keys()].map(
              (line) => html`<div class="line-mark"
              style=${{ top: `calc(${line - 1} * var(--code-line) + var(--code-pad))` }}></div>`,
            )}
          </div>
          <textarea
            id=${id}
            ref=${ref}
            value=${value}
            rows="12"
            wrap="off"
            spellcheck=${false}
            autocapitalize="off"
            autocomplete="off"
            aria-describedby=${`${id}-help`}
            aria-invalid=${findings.some((finding) => finding.severity === 'error') ? 'true' : undefined}
            onInput=${(event: Event) => onChange((event.currentTarget as HTMLTextAreaElement).value)}
            onKeyDown=${onKeyDown}
            onBlur=${() => (escaped.current = false)}
            onScroll=${(event: Event) => setScrollTop((event.currentTarget as HTMLTextAreaElement).scrollTop)}
          ></textarea>
        </div>
      </div>
      <p class="hint" id=${`${id}-help`}>Tab indents, Shift+Tab outdents; Escape then Tab leaves the editor. Ctrl+Enter ${runVerb}.</p>
    </div>
  `
}
