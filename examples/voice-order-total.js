// "What's the total with 8% tax on a $12.50 burger, two $3.25 sodas and a $6 salad?"
// The kind of computation a voice agent hands to execgate: exact cents, a spoken-friendly answer.
const items = [
  { name: 'burger', price: 12.5, quantity: 1 },
  { name: 'soda', price: 3.25, quantity: 2 },
  { name: 'salad', price: 6, quantity: 1 },
]
const taxRate = 0.08

const subtotalCents = items.reduce((sum, item) => sum + Math.round(item.price * 100) * item.quantity, 0)
const taxCents = Math.round(subtotalCents * taxRate)
const totalCents = subtotalCents + taxCents

const dollars = (cents) => `$${(cents / 100).toFixed(2)}`
console.log(`Subtotal ${dollars(subtotalCents)}, tax ${dollars(taxCents)}, total ${dollars(totalCents)}`)

;({ subtotal: subtotalCents / 100, tax: taxCents / 100, total: totalCents / 100 })
