import { useLayoutEffect, useRef, useState } from 'preact/hooks'
import { formatTime } from '../format'
import { html } from '../html'

/**
 * Small SVG charts drawn here (no chart library: a few hundred bytes of code instead of tens of kilobytes). Colours
 * come from CSS classes, so the light and dark schemes each have their own; every chart has a title and a text
 * description, and the page beside it gives the same figures as a table.
 */

const MARGIN = { left: 58, right: 14, top: 12, bottom: 26 }

export interface LineSeries {
  name: string
  /** Picks the colour class `series-<n>` (0–7). */
  colour: number
  dashed?: boolean
  points: { x: number; y: number }[]
}

interface Frame {
  width: number
  height: number
  x: (value: number) => number
  y: (value: number) => number
  yTicks: number[]
  xTicks: number[]
}

/** 0, a round step, … up to at least `max`. */
function linearTicks(max: number): number[] {
  const top = max > 0 ? max : 1
  const rough = top / 4
  const power = 10 ** Math.floor(Math.log10(rough))
  const step = [1, 2, 2.5, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= rough)!
  return Array.from({ length: Math.ceil(top / step) + 1 }, (_, index) => index * step)
}

/** Powers of ten around the data: latency spans 1 ms to seconds, which a linear axis would flatten. */
function logTicks(min: number, max: number): number[] {
  const low = Math.floor(Math.log10(Math.max(min, 0.01)))
  const high = Math.max(low + 1, Math.ceil(Math.log10(Math.max(max, 0.01))))
  return Array.from({ length: high - low + 1 }, (_, index) => 10 ** (low + index))
}

/**
 * The chart's width in CSS pixels, followed as its container resizes: the SVG is drawn at that size, so its text
 * stays the page's size instead of scaling with the chart.
 */
function useWidth() {
  const ref = useRef<HTMLDivElement>(null)
  const [width, setWidth] = useState(640)
  useLayoutEffect(() => {
    const element = ref.current
    if (!element) return
    const observer = new ResizeObserver(() => setWidth(Math.max(240, Math.floor(element.clientWidth))))
    observer.observe(element)
    return () => observer.disconnect()
  }, [])
  return { ref, width }
}

function frame(xDomain: [number, number], values: number[], scale: 'linear' | 'log', width: number, height: number): Frame {
  const [from, to] = xDomain
  const plotWidth = width - MARGIN.left - MARGIN.right
  const plotHeight = height - MARGIN.top - MARGIN.bottom
  const x = (value: number) => MARGIN.left + ((value - from) / Math.max(1, to - from)) * plotWidth
  const yTicks = scale === 'log' ? logTicks(Math.min(...values, 1), Math.max(...values, 1)) : linearTicks(Math.max(0, ...values))
  const [low, high] = [yTicks[0]!, yTicks[yTicks.length - 1]!]
  const y =
    scale === 'log'
      ? (value: number) =>
          MARGIN.top +
          plotHeight -
          ((Math.log10(Math.max(value, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))) * plotHeight
      : (value: number) => MARGIN.top + plotHeight - (value / high) * plotHeight
  const xTicks = Array.from({ length: 5 }, (_, index) => from + ((to - from) * index) / 4)
  return { width, height, x, y, yTicks, xTicks }
}

function Axes({ frame: f, formatY }: { frame: Frame; formatY: (value: number) => string }) {
  return html`
    <g class="axis" aria-hidden="true">
      ${f.yTicks.map(
        (tick) => html`<g><line class="grid" x1=${MARGIN.left} x2=${f.width - MARGIN.right} y1=${f.y(tick)} y2=${f.y(tick)} />
        <text x=${MARGIN.left - 6} y=${f.y(tick) + 4} text-anchor="end">${formatY(tick)}</text></g>`,
      )}
      ${f.xTicks.map(
        (tick, index) => html`<text x=${f.x(tick)} y=${f.height - 8}
        text-anchor=${index === 0 ? 'start' : index === 4 ? 'end' : 'middle'}>${formatTime(tick)}</text>`,
      )}
    </g>
  `
}

function Chart({
  id,
  title,
  description,
  size,
  children,
}: {
  id: string
  title: string
  description: string
  size: ReturnType<typeof useWidth> & { height: number }
  children: unknown
}) {
  return html`
    <div class="chart-box" ref=${size.ref}>
      <svg class="chart" width=${size.width} height=${size.height} viewBox=${`0 0 ${size.width} ${size.height}`} role="img"
        aria-labelledby=${`${id}-title ${id}-desc`} data-testid=${id}>
        <title id=${`${id}-title`}>${title}</title>
        <desc id=${`${id}-desc`}>${description}</desc>
        ${children}
      </svg>
    </div>
  `
}

/** Runs of points one bucket apart: a line joins a run, and a gap (no data in a bucket) breaks it. */
function runsOf(points: readonly { x: number; y: number }[], step: number): { x: number; y: number }[][] {
  const runs: { x: number; y: number }[][] = []
  for (const point of points) {
    const run = runs[runs.length - 1]
    if (run && point.x - run[run.length - 1]!.x <= step) run.push(point)
    else runs.push([point])
  }
  return runs
}

export interface LineChartProps {
  id: string
  title: string
  description: string
  series: LineSeries[]
  xDomain: [number, number]
  /** The bucket size: points further apart than this are not joined. */
  step: number
  scale?: 'linear' | 'log'
  formatY: (value: number) => string
  height?: number
}

/** Lines over time, broken where a bucket had no data; a point with no neighbour is drawn as a dot. */
export function LineChart({ id, title, description, series, xDomain, step, scale = 'linear', formatY, height = 200 }: LineChartProps) {
  const size = useWidth()
  const f = frame(
    xDomain,
    series.flatMap((item) => item.points.map((point) => point.y)),
    scale,
    size.width,
    height,
  )
  const at = (point: { x: number; y: number }) => `${f.x(point.x).toFixed(1)},${f.y(point.y).toFixed(1)}`
  return html`<${Chart} id=${id} title=${title} description=${description} size=${{ ...size, height }}>
    <${Axes} frame=${f} formatY=${formatY} />
    ${series.map(
      (item) => html`<g class=${`series series-${item.colour % 8}${item.dashed ? ' dashed' : ''}`} data-series=${item.name}>
      ${runsOf(item.points, step).map((run) =>
        run.length > 1
          ? html`<polyline points=${run.map(at).join(' ')}
        />`
          : html`<circle cx=${f.x(run[0]!.x).toFixed(1)} cy=${f.y(run[0]!.y).toFixed(1)} r="3" />`,
      )}
    </g>`,
    )}
  <//>`
}

export interface StackedBarsProps {
  id: string
  title: string
  description: string
  xDomain: [number, number]
  bucketMs: number
  buckets: { x: number; parts: { key: string; value: number }[] }[]
  height?: number
}

/** A bar per bucket, stacked by key; the colour class is `fill-<key>`. */
export function StackedBars({ id, title, description, xDomain, bucketMs, buckets, height = 200 }: StackedBarsProps) {
  const size = useWidth()
  const f = frame(
    xDomain,
    buckets.map((bucket) => bucket.parts.reduce((sum, part) => sum + part.value, 0)),
    'linear',
    size.width,
    height,
  )
  const barWidth = Math.max(1, f.x(xDomain[0] + bucketMs) - f.x(xDomain[0]) - 1)
  return html`<${Chart} id=${id} title=${title} description=${description} size=${{ ...size, height }}>
    <${Axes} frame=${f} formatY=${(value: number) => String(value)} />
    ${buckets.map((bucket) => {
      let base = 0
      return bucket.parts
        .filter((part) => part.value > 0)
        .map((part) => {
          const top = f.y(base + part.value)
          const bottom = f.y(base)
          base += part.value
          return html`<rect class=${`bar fill-${part.key}`} x=${f.x(bucket.x).toFixed(1)} y=${top.toFixed(1)} width=${barWidth.toFixed(1)}
            height=${Math.max(0, bottom - top).toFixed(1)} />`
        })
    })}
  <//>`
}
