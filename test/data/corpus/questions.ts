import {
  argMax,
  days,
  groupCount,
  groupSum,
  leastSquares,
  mean,
  month,
  pearson,
  productOf,
  revenue,
  sum,
  weekday,
  WEEKDAYS,
} from './answers'
import type { DataQuestion } from './datasets'
import { SALES_QUESTIONS } from './sales-questions'

export type { DataQuestion } from './datasets'

/**
 * The data-task corpus: questions an agent is asked about the generated CSV files, each with the pandas code a good
 * answer runs (one expression, evaluated after PRELUDE) and the answer computed in TypeScript from the same rows.
 * Numbers compare within a relative 1e-6 (float sums in another order); everything else exactly.
 */

const roundTo = (places: number) => (value: number) => Math.round(value * 10 ** places) / 10 ** places
const floatDict = (expression: string) => `{str(k): float(v) for k, v in (${expression}).items()}`
const intDict = (expression: string) => `{str(k): int(v) for k, v in (${expression}).items()}`

export const QUESTIONS: DataQuestion[] = [
  ...SALES_QUESTIONS,
  // joins
  {
    id: 'revenue-by-category',
    kind: 'join',
    question: 'What is the revenue of each product category?',
    code: floatDict('sales.merge(products, on="product_id").groupby("category").revenue.sum()'),
    answer: (d) => groupSum(d.sales, (s) => productOf(d)(s).category, revenue),
  },
  {
    id: 'top-category-units',
    kind: 'join',
    question: 'Which category sold the most units?',
    code: 'str(sales.merge(products, on="product_id").groupby("category").units.sum().idxmax())',
    answer: (d) =>
      argMax(
        groupSum(
          d.sales,
          (s) => productOf(d)(s).category,
          (s) => s.units,
        ),
      ),
  },
  {
    id: 'margin',
    kind: 'join',
    question: 'What is the total gross margin (revenue minus cost of the units)?',
    code: 'float((lambda j: (j.revenue - j.units * j.cost).sum())(sales.merge(products, on="product_id")))',
    answer: (d) => sum(d.sales.map((s) => revenue(s) - s.units * productOf(d)(s).cost)),
  },
  {
    id: 'best-margin-product',
    kind: 'join',
    question: 'Which product (by name) earns the most gross margin?',
    code:
      'str((lambda j: j.assign(margin=j.revenue - j.units * ' +
      'j.cost).groupby("name").margin.sum().idxmax())(sales.merge(products, on="product_id")))',
    answer: (d) =>
      argMax(
        groupSum(
          d.sales,
          (s) => productOf(d)(s).name,
          (s) => revenue(s) - s.units * productOf(d)(s).cost,
        ),
      ),
  },
  {
    id: 'services-orders',
    kind: 'join',
    question: 'How many orders were for services?',
    code: 'int((sales.merge(products, on="product_id").category == "services").sum())',
    answer: (d) => d.sales.filter((s) => productOf(d)(s).category === 'services').length,
  },
  {
    id: 'hardware-price',
    kind: 'join',
    question: 'What is the average unit price of hardware?',
    code: 'float(sales.merge(products, on="product_id").query("category == \'hardware\'").unit_price.mean())',
    answer: (d) => mean(d.sales.filter((s) => productOf(d)(s).category === 'hardware').map((s) => s.unitPrice)),
  },
  {
    id: 'targets-met',
    kind: 'join',
    question: 'Which regions met their annual revenue target?',
    code:
      'sorted(str(r) for r in (lambda j: j[j.revenue >= ' +
      'j.target].region)(sales.groupby("region", as_index=False).revenue.sum().merge(targets, ' +
      'on="region")))',
    answer: (d) => {
      const totals = groupSum(d.sales, (s) => s.region, revenue)
      return d.targets
        .filter((t) => totals[t.region]! >= t.target)
        .map((t) => t.region)
        .sort()
    },
  },
  {
    id: 'target-ratio',
    kind: 'join',
    question: 'What fraction of its target did each region reach?',
    code: floatDict(
      '(lambda j: j.set_index("region").revenue / ' +
        'j.set_index("region").target)(sales.groupby("region", ' +
        'as_index=False).revenue.sum().merge(targets, on="region"))',
    ),
    answer: (d) => {
      const totals = groupSum(d.sales, (s) => s.region, revenue)
      return Object.fromEntries(d.targets.map((t) => [t.region, totals[t.region]! / t.target]))
    },
  },
  // dates
  {
    id: 'best-month',
    kind: 'date',
    question: 'Which month (1–12) had the highest revenue?',
    code: 'int(sales.groupby(sales.date.dt.month).revenue.sum().idxmax())',
    answer: (d) => Number(argMax(groupSum(d.sales, (s) => String(month(s)).padStart(2, '0'), revenue))),
  },
  {
    id: 'q3-revenue',
    kind: 'date',
    question: 'What was the revenue in the third quarter?',
    code: 'float(sales[sales.date.dt.quarter == 3].revenue.sum())',
    answer: (d) => sum(d.sales.filter((s) => month(s) >= 7 && month(s) <= 9).map(revenue)),
  },
  {
    id: 'weekend-orders',
    kind: 'date',
    question: 'How many orders were placed on a weekend?',
    code: 'int((sales.date.dt.dayofweek >= 5).sum())',
    answer: (d) => d.sales.filter((s) => weekday(s) === 0 || weekday(s) === 6).length,
  },
  {
    id: 'busiest-weekday',
    kind: 'date',
    question: 'On which day of the week were the most orders placed?',
    code: 'str(sales.date.dt.day_name().value_counts().sort_index().idxmax())',
    answer: (d) => argMax(groupCount(d.sales, (s) => WEEKDAYS[weekday(s)]!)),
  },
  {
    id: 'first-east',
    kind: 'date',
    question: 'When was the first order from the east region?',
    code: 'str(sales[sales.region == "east"].date.min().date())',
    answer: (d) =>
      d.sales
        .filter((s) => s.region === 'east')
        .map((s) => s.date)
        .sort()[0],
  },
  {
    id: 'active-days',
    kind: 'date',
    question: 'On how many different days was at least one order placed?',
    code: 'int(sales.date.nunique())',
    answer: (d) => new Set(d.sales.map((s) => s.date)).size,
  },
  {
    id: 'june-july-growth',
    kind: 'date',
    question: 'By what factor did revenue change from June to July?',
    code: '(lambda by: float(by[7] / by[6]))(sales.groupby(sales.date.dt.month).revenue.sum())',
    answer: (d) => {
      const by = groupSum(d.sales, (s) => String(month(s)), revenue)
      return by['7']! / by['6']!
    },
  },
  {
    id: 'span-days',
    kind: 'date',
    question: 'How many days lie between the first and the last order?',
    code: 'int((sales.date.max() - sales.date.min()).days)',
    answer: (d) => {
      const all = d.sales.map((s) => days(s.date))
      return Math.max(...all) - Math.min(...all)
    },
  },
  {
    id: 'h2-minus-h1',
    kind: 'date',
    question: 'How much more revenue did the second half of the year bring than the first?',
    code: 'float(sales[sales.date.dt.month > 6].revenue.sum() - sales[sales.date.dt.month <= 6].revenue.sum())',
    answer: (d) => sum(d.sales.filter((s) => month(s) > 6).map(revenue)) - sum(d.sales.filter((s) => month(s) <= 6).map(revenue)),
  },
  {
    id: 'monthly-orders',
    kind: 'date',
    question: 'How many orders were placed in each month?',
    code: intDict('sales.groupby(sales.date.dt.month).size()'),
    answer: (d) => groupCount(d.sales, (s) => String(month(s))),
  },
  // correlations and a fitted regression
  {
    id: 'pearson-xy',
    kind: 'statistics',
    question: 'How strongly are x and y correlated (Pearson)?',
    code: 'float(m.x.corr(m.y))',
    answer: (d) =>
      pearson(
        d.measurements.map((r) => r.x),
        d.measurements.map((r) => r.y),
      ),
  },
  {
    id: 'slope',
    kind: 'statistics',
    question: 'What slope does a linear fit of y on x give?',
    code: 'float(np.polyfit(m.x, m.y, 1)[0])',
    answer: (d) =>
      leastSquares(
        d.measurements.map((r) => r.x),
        d.measurements.map((r) => r.y),
      ).slope,
  },
  {
    id: 'intercept',
    kind: 'statistics',
    question: 'And its intercept?',
    code: 'float(np.polyfit(m.x, m.y, 1)[1])',
    answer: (d) =>
      leastSquares(
        d.measurements.map((r) => r.x),
        d.measurements.map((r) => r.y),
      ).intercept,
  },
  {
    id: 'r-squared',
    kind: 'statistics',
    question: 'What is the R² of a linear regression of y on x (scikit-learn)?',
    code: 'float(LinearRegression().fit(m[["x"]], m.y).score(m[["x"]], m.y))',
    answer: (d) =>
      leastSquares(
        d.measurements.map((r) => r.x),
        d.measurements.map((r) => r.y),
      ).r2,
  },
  {
    id: 'predict-50',
    kind: 'statistics',
    question: 'What y does the fitted line predict at x = 50?',
    code: 'float(np.polyval(np.polyfit(m.x, m.y, 1), 50))',
    answer: (d) => {
      const fit = leastSquares(
        d.measurements.map((r) => r.x),
        d.measurements.map((r) => r.y),
      )
      return fit.slope * 50 + fit.intercept
    },
  },
  {
    id: 'group-b-mean',
    kind: 'statistics',
    question: 'What is the mean y of group B?',
    code: 'float(m[m.group == "B"].y.mean())',
    answer: (d) => mean(d.measurements.filter((r) => r.group === 'B').map((r) => r.y)),
  },
  {
    id: 'units-discount-corr',
    kind: 'statistics',
    question: 'Are order size and discount correlated (Pearson)?',
    code: 'float(sales.units.corr(sales.discount))',
    answer: (d) =>
      pearson(
        d.sales.map((s) => s.units),
        d.sales.map((s) => s.discount),
      ),
  },
  {
    id: 'rounded-slope',
    kind: 'statistics',
    question: 'The fitted slope, to two decimals?',
    code: 'round(float(np.polyfit(m.x, m.y, 1)[0]), 2)',
    answer: (d) =>
      roundTo(2)(
        leastSquares(
          d.measurements.map((r) => r.x),
          d.measurements.map((r) => r.y),
        ).slope,
      ),
  },
]

/** Numbers within a relative 1e-6 (and 1e-9 absolute), dicts and lists item by item, everything else exactly. */
export function sameAnswer(actual: unknown, expected: unknown): boolean {
  if (typeof expected === 'number') return typeof actual === 'number' && Math.abs(actual - expected) <= 1e-9 + 1e-6 * Math.abs(expected)
  if (Array.isArray(expected))
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, i) => sameAnswer(actual[i], item))
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null) return false
    const keys = Object.keys(expected).sort()
    return (
      JSON.stringify(Object.keys(actual).sort()) === JSON.stringify(keys) &&
      keys.every((key) => sameAnswer((actual as Record<string, unknown>)[key], (expected as Record<string, unknown>)[key]))
    )
  }
  return actual === expected
}
