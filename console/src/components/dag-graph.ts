import { html } from '../html'

/**
 * A directed acyclic graph drawn as SVG, laid out by the console itself (no graph library): nodes in columns by their
 * depth (the longest path from a node with no incoming edge), left to right, ordered within a column to keep edges
 * short (a few barycentre sweeps), edges as curves with an arrow. Used for a plan's steps and an artifact's lineage.
 *
 * The SVG is a picture (`role="img"` with a title and a description); every page that shows one also shows the same
 * nodes as a table with links and buttons, which is the way in for screen readers and the keyboard. A click on a node
 * is a shortcut for the mouse.
 */

export interface GraphNode {
  id: string
  /** First line: a step id, a file name, a run's short id. */
  label: string
  /** Second line: a state, a kind. */
  detail?: string
  /** Colour: good, bad, warn, busy, plain; the words carry the meaning too. */
  tone: string
  /** A shape per kind: `box` (steps, runs) or `pill` (artifacts). */
  shape?: 'box' | 'pill'
  /** Drawn emphasised (the artifact a lineage is about, the selected step). */
  emphasis?: boolean
  /** For tests and styling: the node's state or kind. */
  state?: string
}

export interface GraphEdge {
  from: string
  to: string
  /** Shown as a dashed line (e.g. PROV's `used`, against `wasGeneratedBy`). */
  dashed?: boolean
}

export const NODE_WIDTH = 176
export const NODE_HEIGHT = 46
const GAP_X = 64
const GAP_Y = 18
const PAD = 12

export interface Layout {
  columns: string[][]
  at: Map<string, { x: number; y: number }>
  width: number
  height: number
}

/** Depth of every node: 0 for sources, else one more than its deepest predecessor. A cycle's back edge is ignored. */
function depths(nodes: readonly GraphNode[], edges: readonly GraphEdge[]): Map<string, number> {
  const incoming = new Map<string, string[]>(nodes.map((node) => [node.id, []]))
  for (const edge of edges) if (incoming.has(edge.to) && incoming.has(edge.from)) incoming.get(edge.to)!.push(edge.from)
  const depth = new Map<string, number>()
  const visiting = new Set<string>()
  const visit = (id: string): number => {
    const known = depth.get(id)
    if (known !== undefined) return known
    if (visiting.has(id)) return -1 // a back edge: it does not push the node deeper
    visiting.add(id)
    const value = Math.max(0, ...incoming.get(id)!.map((from) => visit(from) + 1))
    visiting.delete(id)
    depth.set(id, value)
    return value
  }
  for (const node of nodes) visit(node.id)
  return depth
}

/** Columns by depth, rows ordered by the mean row of each node's neighbours in the column before (then after). */
export function layoutDag(nodes: readonly GraphNode[], edges: readonly GraphEdge[]): Layout {
  const depth = depths(nodes, edges)
  const columns: string[][] = []
  for (const node of nodes) (columns[depth.get(node.id)!] ??= []).push(node.id)
  for (let index = 0; index < columns.length; index++) columns[index] ??= []
  const neighbours = (id: string, direction: 'in' | 'out') =>
    edges
      .filter((edge) => (direction === 'in' ? edge.to === id : edge.from === id))
      .map((edge) => (direction === 'in' ? edge.from : edge.to))
  const row = new Map<string, number>()
  const place = () => columns.forEach((column) => column.forEach((id, index) => row.set(id, index)))
  place()
  for (let sweep = 0; sweep < 4; sweep++) {
    const order = sweep % 2 === 0 ? columns.slice(1) : columns.slice(0, -1).reverse()
    for (const column of order) {
      const score = new Map(
        column.map((id) => {
          const near = neighbours(id, sweep % 2 === 0 ? 'in' : 'out').filter((other) => row.has(other))
          return [id, near.length ? near.reduce((sum, other) => sum + row.get(other)!, 0) / near.length : row.get(id)!] as const
        }),
      )
      column.sort((a, b) => score.get(a)! - score.get(b)!)
      column.forEach((id, index) => row.set(id, index))
    }
  }
  const tallest = Math.max(1, ...columns.map((column) => column.length))
  const height = PAD * 2 + tallest * NODE_HEIGHT + (tallest - 1) * GAP_Y
  const at = new Map<string, { x: number; y: number }>()
  columns.forEach((column, index) => {
    const used = column.length * NODE_HEIGHT + (column.length - 1) * GAP_Y
    const top = PAD + (height - PAD * 2 - used) / 2
    column.forEach((id, place) => at.set(id, { x: PAD + index * (NODE_WIDTH + GAP_X), y: top + place * (NODE_HEIGHT + GAP_Y) }))
  })
  return { columns, at, width: PAD * 2 + columns.length * NODE_WIDTH + Math.max(0, columns.length - 1) * GAP_X, height }
}

/** Cuts a text to what fits a node: about 7.2 px a character for a label, 6.2 px for a detail's smaller font. */
function fit(text: string, charWidth: number): string {
  const most = Math.floor((NODE_WIDTH - 16) / charWidth)
  return text.length > most ? `${text.slice(0, most - 1)}…` : text
}

function edgePath(from: { x: number; y: number }, to: { x: number; y: number }): string {
  const x1 = from.x + NODE_WIDTH
  const y1 = from.y + NODE_HEIGHT / 2
  const x2 = to.x - 4
  const y2 = to.y + NODE_HEIGHT / 2
  const bend = Math.max(30, Math.abs(x2 - x1) / 2)
  return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`
}

export interface DagGraphProps {
  id: string
  title: string
  description: string
  nodes: readonly GraphNode[]
  edges: readonly GraphEdge[]
  onSelect?: (id: string) => void
}

export function DagGraph({ id, title, description, nodes, edges, onSelect }: DagGraphProps) {
  const layout = layoutDag(nodes, edges)
  return html`
    <div class="graph-scroll">
      <svg class="dag" data-testid=${id} width=${layout.width} height=${layout.height} viewBox=${`0 0 ${layout.width} ${layout.height}`}
        role="img" aria-labelledby=${`${id}-title ${id}-desc`}>
        <title id=${`${id}-title`}>${title}</title>
        <desc id=${`${id}-desc`}>${description}</desc>
        <defs>
          <marker id=${`${id}-arrow`} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class="arrow" /></marker>
        </defs>
        ${edges.map((edge) => {
          const from = layout.at.get(edge.from)
          const to = layout.at.get(edge.to)
          return from && to
            ? html`<path class=${`edge${edge.dashed ? ' dashed' : ''}`} d=${edgePath(from, to)} marker-end=${`url(#${id}-arrow)`}
              data-from=${edge.from} data-to=${edge.to} />`
            : null
        })}
        ${nodes.map((node) => {
          const place = layout.at.get(node.id)!
          const radius = node.shape === 'pill' ? NODE_HEIGHT / 2 : 6
          return html`<g class=${`node tone-${node.tone}${node.emphasis ? ' emphasis' : ''}${onSelect ? ' clickable' : ''}`}
            data-node=${node.id} data-state=${node.state} transform=${`translate(${place.x},${place.y})`}
            onClick=${onSelect ? () => onSelect(node.id) : undefined}>
            <title>${node.label}${node.detail ? ` (${node.detail})` : ''}</title>
            <rect width=${NODE_WIDTH} height=${NODE_HEIGHT} rx=${radius} ry=${radius} />
            <text class="node-label" x=${NODE_WIDTH / 2} y="19" text-anchor="middle">${fit(node.label, 7.2)}</text>
            ${
              node.detail
                ? html`<text class="node-detail" x=${NODE_WIDTH / 2} y="36" text-anchor="middle">
              ${fit(node.detail, 6.2)}</text>`
                : null
            }
          </g>`
        })}
      </svg>
    </div>
  `
}
