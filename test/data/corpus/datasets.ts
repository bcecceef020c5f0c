/**
 * The data-task corpus's CSV files, generated from a fixed seed (the same bytes on every machine), and the same data
 * as plain rows for computing the answers in TypeScript, independently of pandas.
 */

/** mulberry32: a small seeded generator, so the data is the same on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface Sale {
  orderId: number
  date: string
  region: string
  productId: string
  units: number
  unitPrice: number
  discount: number
}
export interface Product {
  productId: string
  name: string
  category: string
  cost: number
}
export interface Target {
  region: string
  target: number
}
export interface Measurement {
  x: number
  y: number
  group: string
}

export interface Datasets {
  sales: Sale[]
  products: Product[]
  targets: Target[]
  measurements: Measurement[]
  /** File name → CSV text. */
  csv: Record<string, string>
}

export const REGIONS = ['north', 'south', 'east', 'west']
const CATEGORIES = ['hardware', 'software', 'services']
const DISCOUNTS = [0, 0.05, 0.1, 0.15]
const round2 = (value: number) => Math.round(value * 100) / 100

export function generateDatasets(seed = 25): Datasets {
  const random = seeded(seed)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
  const products: Product[] = Array.from({ length: 12 }, (_, index) => ({
    productId: `P${String(index + 1).padStart(2, '0')}`,
    name: `product-${String.fromCharCode(97 + index)}`,
    category: CATEGORIES[index % CATEGORIES.length]!,
    cost: round2(5 + random() * 60),
  }))
  const listPrice = new Map(products.map((product) => [product.productId, round2(product.cost * (1.3 + random() * 0.6))]))
  const start = Date.UTC(2025, 0, 1)
  const sales: Sale[] = Array.from({ length: 1500 }, (_, index) => {
    const productId = pick(products).productId
    return {
      orderId: index + 1,
      date: new Date(start + Math.floor(random() * 365) * 86_400_000).toISOString().slice(0, 10),
      region: pick(REGIONS),
      productId,
      units: 1 + Math.floor(random() * 20),
      unitPrice: round2(listPrice.get(productId)! * (0.9 + random() * 0.2)),
      discount: pick(DISCOUNTS),
    }
  })
  const targets: Target[] = REGIONS.map((region) => ({ region, target: 150_000 + Math.floor(random() * 100) * 1000 }))
  const measurements: Measurement[] = Array.from({ length: 200 }, (_, index) => {
    const x = round2(index * 0.5 + random())
    return { x, y: round2(3.5 * x + 12 + (random() - 0.5) * 8), group: index % 3 === 0 ? 'B' : 'A' }
  })
  const table = (header: string[], rows: unknown[][]) => [header.join(','), ...rows.map((row) => row.join(','))].join('\n') + '\n'
  return {
    sales,
    products,
    targets,
    measurements,
    csv: {
      'sales.csv': table(
        ['order_id', 'date', 'region', 'product_id', 'units', 'unit_price', 'discount'],
        sales.map((sale) => [sale.orderId, sale.date, sale.region, sale.productId, sale.units, sale.unitPrice, sale.discount]),
      ),
      'products.csv': table(
        ['product_id', 'name', 'category', 'cost'],
        products.map((product) => [product.productId, product.name, product.category, product.cost]),
      ),
      'targets.csv': table(
        ['region', 'target'],
        targets.map((target) => [target.region, target.target]),
      ),
      'measurements.csv': table(
        ['x', 'y', 'group'],
        measurements.map((row) => [row.x, row.y, row.group]),
      ),
    },
  }
}

/** What every question's run starts with: the files read as an analyst would, and each order's revenue. */
export const PRELUDE = [
  'import pandas as pd, numpy as np',
  'from sklearn.linear_model import LinearRegression',
  "sales = pd.read_csv('sales.csv', parse_dates=['date'])",
  "products = pd.read_csv('products.csv')",
  "targets = pd.read_csv('targets.csv')",
  "m = pd.read_csv('measurements.csv')",
  "sales['revenue'] = sales.units * sales.unit_price * (1 - sales.discount)",
].join('\n')

/** One question of the corpus: the pandas code a good answer runs (one expression after PRELUDE) and its answer. */
export interface DataQuestion {
  id: string
  kind: 'aggregate' | 'groupby' | 'join' | 'date' | 'statistics'
  question: string
  code: string
  answer: (data: Datasets) => unknown
}
