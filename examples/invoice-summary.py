# "Summarise last month's invoices by customer." Uses a class, which monty does not run: execgate escalates it to
# pyodide (full CPython) before running, and the result's route says so.
import json


class Invoice:
    def __init__(self, customer, amount, paid):
        self.customer = customer
        self.amount = amount
        self.paid = paid


invoices = [
    Invoice("Acme", 1200.00, True),
    Invoice("Globex", 450.50, False),
    Invoice("Acme", 300.25, False),
    Invoice("Initech", 980.00, True),
]

totals = {}
outstanding = {}
for invoice in invoices:
    totals[invoice.customer] = totals.get(invoice.customer, 0) + invoice.amount
    if not invoice.paid:
        outstanding[invoice.customer] = outstanding.get(invoice.customer, 0) + invoice.amount

top = max(totals, key=totals.get)
print(f"{len(invoices)} invoices, top customer {top} with ${totals[top]:,.2f}")
json.loads(json.dumps({"totals": totals, "outstanding": outstanding}))
