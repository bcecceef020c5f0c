// "Apply our pricing formula to this quote": volume discount tiers, then a minimum margin check.
interface Quote {
  units: number
  unitCost: number
}

const tiers: [minUnits: number, discount: number][] = [
  [1000, 0.15],
  [500, 0.1],
  [100, 0.05],
  [0, 0],
]

function price(quote: Quote, listPrice: number): { unitPrice: number; total: number; marginOk: boolean } {
  const discount = tiers.find(([min]) => quote.units >= min)![1]
  const unitPrice = Math.round(listPrice * (1 - discount) * 100) / 100
  const marginOk = (unitPrice - quote.unitCost) / unitPrice >= 0.2
  return { unitPrice, total: Math.round(unitPrice * quote.units * 100) / 100, marginOk }
}

price({ units: 640, unitCost: 7.1 }, 11.99)
