import type { Datasets, Sale } from './datasets'

/** Plain-TypeScript statistics for the corpus's answers: nothing here shares code with pandas or numpy. */

export const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0)
export const mean = (values: readonly number[]) => sum(values) / values.length
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}
/** Sample standard deviation (n - 1), as pandas' `std()`. */
export function sampleStd(values: readonly number[]): number {
  const average = mean(values)
  return Math.sqrt(sum(values.map((value) => (value - average) ** 2)) / (values.length - 1))
}
export function pearson(xs: readonly number[], ys: readonly number[]): number {
  const mx = mean(xs)
  const my = mean(ys)
  let sxy = 0
  let sxx = 0
  let syy = 0
  for (let i = 0; i < xs.length; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my)
    sxx += (xs[i]! - mx) ** 2
    syy += (ys[i]! - my) ** 2
  }
  return sxy / Math.sqrt(sxx * syy)
}
/** Ordinary least squares y = slope·x + intercept, with R². */
export function leastSquares(xs: readonly number[], ys: readonly number[]): { slope: number; intercept: number; r2: number } {
  const mx = mean(xs)
  const my = mean(ys)
  let sxy = 0
  let sxx = 0
  for (let i = 0; i < xs.length; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my)
    sxx += (xs[i]! - mx) ** 2
  }
  const slope = sxy / sxx
  const intercept = my - slope * mx
  const residual = sum(ys.map((y, i) => (y - (slope * xs[i]! + intercept)) ** 2))
  const total = sum(ys.map((y) => (y - my) ** 2))
  return { slope, intercept, r2: 1 - residual / total }
}

export const revenue = (sale: Sale) => sale.units * sale.unitPrice * (1 - sale.discount)
export function groupSum<T>(rows: readonly T[], key: (row: T) => string, value: (row: T) => number): Record<string, number> {
  const totals: Record<string, number> = {}
  for (const row of rows) totals[key(row)] = (totals[key(row)] ?? 0) + value(row)
  return totals
}
export function groupCount<T>(rows: readonly T[], key: (row: T) => string): Record<string, number> {
  return groupSum(rows, key, () => 1)
}
/** The key with the largest value (the first such key in sorted order on a tie, as the questions' code breaks ties). */
export function argMax(totals: Record<string, number>): string {
  return Object.keys(totals)
    .sort()
    .reduce((best, key) => (totals[key]! > totals[best]! ? key : best))
}
export function argMin(totals: Record<string, number>): string {
  return Object.keys(totals)
    .sort()
    .reduce((best, key) => (totals[key]! < totals[best]! ? key : best))
}
export const month = (sale: Sale) => Number(sale.date.slice(5, 7))
export const weekday = (sale: Sale) => new Date(`${sale.date}T00:00:00Z`).getUTCDay()
export const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']
export const days = (date: string) => Date.parse(`${date}T00:00:00Z`) / 86_400_000

export function productOf(data: Datasets) {
  const byId = new Map(data.products.map((product) => [product.productId, product]))
  return (sale: Sale) => byId.get(sale.productId)!
}
