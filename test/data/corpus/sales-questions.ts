import { argMax, argMin, groupCount, groupSum, mean, median, revenue, sampleStd, sum } from './answers'
import { REGIONS, type DataQuestion } from './datasets'

/** The corpus's aggregate and group-by questions over sales.csv (see questions.ts for the format). */

const floatDict = (expression: string) => `{str(k): float(v) for k, v in (${expression}).items()}`
const intDict = (expression: string) => `{str(k): int(v) for k, v in (${expression}).items()}`

export const SALES_QUESTIONS: DataQuestion[] = [
  // aggregates
  { id: 'orders', kind: 'aggregate', question: 'How many orders are there?', code: 'int(len(sales))', answer: (d) => d.sales.length },
  {
    id: 'units',
    kind: 'aggregate',
    question: 'How many units were sold in all?',
    code: 'int(sales.units.sum())',
    answer: (d) => sum(d.sales.map((s) => s.units)),
  },
  {
    id: 'revenue',
    kind: 'aggregate',
    question: 'What is the total revenue after discounts?',
    code: 'float(sales.revenue.sum())',
    answer: (d) => sum(d.sales.map(revenue)),
  },
  {
    id: 'mean-price',
    kind: 'aggregate',
    question: 'What is the average unit price?',
    code: 'float(sales.unit_price.mean())',
    answer: (d) => mean(d.sales.map((s) => s.unitPrice)),
  },
  {
    id: 'max-units',
    kind: 'aggregate',
    question: 'What is the largest order, in units?',
    code: 'int(sales.units.max())',
    answer: (d) => Math.max(...d.sales.map((s) => s.units)),
  },
  {
    id: 'median-units',
    kind: 'aggregate',
    question: 'What is the median order size in units?',
    code: 'float(sales.units.median())',
    answer: (d) => median(d.sales.map((s) => s.units)),
  },
  {
    id: 'std-price',
    kind: 'aggregate',
    question: 'What is the standard deviation of the unit price?',
    code: 'float(sales.unit_price.std())',
    answer: (d) => sampleStd(d.sales.map((s) => s.unitPrice)),
  },
  {
    id: 'distinct-products',
    kind: 'aggregate',
    question: 'How many different products were sold?',
    code: 'int(sales.product_id.nunique())',
    answer: (d) => new Set(d.sales.map((s) => s.productId)).size,
  },
  {
    id: 'discounted-share',
    kind: 'aggregate',
    question: 'What share of orders had a discount?',
    code: 'float((sales.discount > 0).mean())',
    answer: (d) => d.sales.filter((s) => s.discount > 0).length / d.sales.length,
  },
  {
    id: 'mean-order',
    kind: 'aggregate',
    question: 'What is the average revenue per order?',
    code: 'float(sales.revenue.mean())',
    answer: (d) => mean(d.sales.map(revenue)),
  },
  // groupby
  {
    id: 'top-region',
    kind: 'groupby',
    question: 'Which region has the highest revenue?',
    code: 'str(sales.groupby("region").revenue.sum().idxmax())',
    answer: (d) => argMax(groupSum(d.sales, (s) => s.region, revenue)),
  },
  {
    id: 'north-revenue',
    kind: 'groupby',
    question: 'What is the revenue of the north region?',
    code: 'float(sales[sales.region == "north"].revenue.sum())',
    answer: (d) => groupSum(d.sales, (s) => s.region, revenue).north,
  },
  {
    id: 'units-by-region',
    kind: 'groupby',
    question: 'How many units did each region sell?',
    code: intDict('sales.groupby("region").units.sum()'),
    answer: (d) =>
      groupSum(
        d.sales,
        (s) => s.region,
        (s) => s.units,
      ),
  },
  {
    id: 'orders-by-region',
    kind: 'groupby',
    question: 'How many orders came from each region?',
    code: intDict('sales.region.value_counts()'),
    answer: (d) => groupCount(d.sales, (s) => s.region),
  },
  {
    id: 'top-product-units',
    kind: 'groupby',
    question: 'Which product sold the most units?',
    code: 'str(sales.groupby("product_id").units.sum().idxmax())',
    answer: (d) =>
      argMax(
        groupSum(
          d.sales,
          (s) => s.productId,
          (s) => s.units,
        ),
      ),
  },
  {
    id: 'discount-by-region',
    kind: 'groupby',
    question: 'What is the average discount in each region?',
    code: floatDict('sales.groupby("region").discount.mean()'),
    answer: (d) => Object.fromEntries(REGIONS.map((r) => [r, mean(d.sales.filter((s) => s.region === r).map((s) => s.discount))])),
  },
  {
    id: 'deepest-discounts',
    kind: 'groupby',
    question: 'Which region gave the 15% discount most often?',
    code: 'str(sales[sales.discount == 0.15].region.value_counts().sort_index().idxmax())',
    answer: (d) =>
      argMax(
        groupCount(
          d.sales.filter((s) => s.discount === 0.15),
          (s) => s.region,
        ),
      ),
  },
  {
    id: 'top3-products',
    kind: 'groupby',
    question: 'Which three products bring the most revenue, best first?',
    code: 'list(sales.groupby("product_id").revenue.sum().sort_values(ascending=False).index[:3])',
    answer: (d) =>
      Object.entries(groupSum(d.sales, (s) => s.productId, revenue))
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([id]) => id),
  },
  {
    id: 'smallest-orders-region',
    kind: 'groupby',
    question: 'Which region has the smallest average order in units?',
    code: 'str(sales.groupby("region").units.mean().idxmin())',
    answer: (d) => argMin(Object.fromEntries(REGIONS.map((r) => [r, mean(d.sales.filter((s) => s.region === r).map((s) => s.units))]))),
  },
  {
    id: 'products-over-800',
    kind: 'groupby',
    question: 'How many products sold more than 800 units?',
    code: 'int((sales.groupby("product_id").units.sum() > 800).sum())',
    answer: (d) =>
      Object.values(
        groupSum(
          d.sales,
          (s) => s.productId,
          (s) => s.units,
        ),
      ).filter((u) => u > 800).length,
  },
]
