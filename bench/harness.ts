import { performance } from 'node:perf_hooks'

/** One measured series: per-iteration latency percentiles and throughput. */
export interface Measurement {
  name: string
  iterations: number
  p50Ms: number
  p95Ms: number
  meanMs: number
  opsPerSec: number
}

export interface BenchSection {
  title: string
  measurements: Measurement[]
  /** Lines such as `service/raw p50 = 1.08×`. */
  ratios: string[]
  notes?: string[]
}

/** The p-th percentile of ascending samples; NaN (printed as such) when there are none. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[index]!
}

/** Times `fn` for `iterations` runs after `warmup` runs; one call at a time. */
export async function measure(
  name: string,
  fn: () => unknown,
  options: { iterations?: number; warmup?: number } = {},
): Promise<Measurement> {
  const iterations = options.iterations ?? 1000
  const warmup = options.warmup ?? Math.min(100, Math.ceil(iterations / 10))
  for (let i = 0; i < warmup; i++) await fn()
  const samples: number[] = new Array(iterations)
  const started = performance.now()
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now()
    await fn()
    samples[i] = performance.now() - t0
  }
  const total = performance.now() - started
  samples.sort((a, b) => a - b)
  return {
    name,
    iterations,
    p50Ms: percentile(samples, 50),
    p95Ms: percentile(samples, 95),
    meanMs: total / iterations,
    opsPerSec: (iterations / total) * 1000,
  }
}

/**
 * Measures several series in alternating batches, so that noise from a shared machine (other processes, CPU
 * frequency) falls on all of them alike: the fair way to compute a ratio between them.
 */
export async function measureInterleaved(
  series: { name: string; fn: () => unknown }[],
  options: { iterations?: number; batch?: number; warmup?: number; pauseMs?: number } = {},
): Promise<Measurement[]> {
  const iterations = options.iterations ?? 1000
  const batch = options.batch ?? 50
  for (const { fn } of series) for (let i = 0; i < (options.warmup ?? 100); i++) await fn()
  const samples = series.map(() => [] as number[])
  const totals = series.map(() => 0)
  for (let done = 0; done < iterations; done += batch) {
    for (let s = 0; s < series.length; s++) {
      const fn = series[s]!.fn
      const batchStart = performance.now()
      for (let i = 0; i < Math.min(batch, iterations - done); i++) {
        // Requests spaced apart (untimed), as an agent's arrive, rather than back to back.
        if (options.pauseMs) await new Promise((resolve) => setTimeout(resolve, options.pauseMs))
        const t0 = performance.now()
        await fn()
        samples[s]!.push(performance.now() - t0)
      }
      totals[s]! += performance.now() - batchStart
    }
  }
  return series.map(({ name }, s) => {
    const sorted = samples[s]!.sort((a, b) => a - b)
    return {
      name,
      iterations: sorted.length,
      p50Ms: percentile(sorted, 50),
      p95Ms: percentile(sorted, 95),
      meanMs: totals[s]! / sorted.length,
      opsPerSec: (sorted.length / totals[s]!) * 1000,
    }
  })
}

/** `label = 1.08× (target ≤ 1.25×)`: how many times slower `subject` is than `baseline` at p50. */
export function ratio(label: string, subject: Measurement, baseline: Measurement, target?: string): string {
  const value = subject.p50Ms / baseline.p50Ms
  return `${label} p50 = ${value.toFixed(2)}×${target ? ` (target ${target})` : ''}`
}

export function formatSection(section: BenchSection): string {
  const lines = [`\n## ${section.title}`, '', '| series | iterations | p50 ms | p95 ms | runs/s |', '|---|---:|---:|---:|---:|']
  // A series with no per-run times (a throughput's: only its whole) shows a dash where they would be, not NaN.
  const ms = (value: number) => (Number.isNaN(value) ? '–' : value.toFixed(3))
  for (const m of section.measurements) {
    lines.push(`| ${m.name} | ${m.iterations} | ${ms(m.p50Ms)} | ${ms(m.p95Ms)} | ${m.opsPerSec.toFixed(0)} |`)
  }
  if (section.ratios.length) lines.push('', ...section.ratios.map((line) => `- ${line}`))
  if (section.notes?.length) lines.push('', ...section.notes.map((line) => `- ${line}`))
  return lines.join('\n')
}
