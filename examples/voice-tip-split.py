# "Split a $184.60 dinner bill four ways with an 18% tip, rounded up to the cent."
# Runs on monty, the embedded default for Python.
import math

bill = 184.60
tip_rate = 0.18
people = 4

tip = round(bill * tip_rate, 2)
total = bill + tip
per_person = math.ceil(total * 100 / people) / 100

print(f"Tip ${tip:.2f}, total ${total:.2f}, ${per_person:.2f} each")
{"tip": tip, "total": round(total, 2), "per_person": per_person}
