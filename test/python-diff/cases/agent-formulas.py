# case: agent-invoice-total
items = [{"name": "tea", "qty": 3, "price": 3.5}, {"name": "cake", "qty": 2, "price": 4.25}]
subtotal = sum(i["qty"] * i["price"] for i in items)
tax = round(subtotal * 0.08, 2)
{"subtotal": subtotal, "tax": tax, "total": round(subtotal + tax, 2)}
# case: agent-discount-tiers
def discount(total):
    if total >= 100:
        return 0.15
    elif total >= 50:
        return 0.1
    return 0
[round(t * (1 - discount(t)), 2) for t in (30, 60, 120)]
# case: agent-split-bill
total = 187.45
people = 4
each = round(total / people, 2)
remainder = round(total - each * people, 2)
print(f"each pays {each:.2f}, remainder {remainder:.2f}")
# case: agent-tip
bill = 64.3
for pct in (15, 18, 20):
    print(f"{pct}%: {bill * pct / 100:.2f}")
# case: agent-compound-interest
principal = 2500
rate = 0.045
years = 10
round(principal * (1 + rate / 12) ** (12 * years), 2)
# case: agent-loan-payment
p = 250000
r = 0.055 / 12
n = 30 * 12
round(p * r * (1 + r) ** n / ((1 + r) ** n - 1), 2)
# case: agent-average-median
data = [12, 7, 3, 21, 9, 14]
s = sorted(data)
mid = len(s) // 2
median = (s[mid - 1] + s[mid]) / 2 if len(s) % 2 == 0 else s[mid]
{"mean": sum(data) / len(data), "median": median}
# case: agent-stddev
import math
xs = [2, 4, 4, 4, 5, 5, 7, 9]
mean = sum(xs) / len(xs)
math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))
# case: agent-unit-conversion
def c_to_f(c):
    return c * 9 / 5 + 32
[round(c_to_f(c), 1) for c in (-40, 0, 37, 100)]
# case: agent-miles-km
print(f"{26.2 * 1.609344:.3f} km")
# case: agent-percentage-change
old, new = 80, 92
f"{(new - old) / old:.1%}"
# case: agent-days-until
from datetime import date
(date(2024, 12, 25) - date(2024, 11, 23)).days
# case: agent-add-business-days
from datetime import date, timedelta
d = date(2024, 3, 8)
added = 0
while added < 5:
    d += timedelta(days=1)
    if d.weekday() < 5:
        added += 1
d.isoformat()
# case: agent-parse-duration
import re
m = re.match(r"(\d+)h(?:\s*(\d+)m)?", "2h 45m")
int(m.group(1)) * 60 + int(m.group(2) or 0)
# case: agent-word-count
text = "the quick brown fox jumps over the lazy dog the end"
counts = {}
for w in text.split():
    counts[w] = counts.get(w, 0) + 1
sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
# case: agent-validate-config
import json
cfg = json.loads('{"port": 8080, "hosts": ["a", "b"], "debug": false}')
problems = []
if not 1 <= cfg["port"] <= 65535:
    problems.append("port")
if not cfg["hosts"]:
    problems.append("hosts")
{"valid": not problems, "problems": problems}
# case: agent-phone-normalise
import re
re.sub(r"\D", "", "+1 (555) 010-9999")
# case: agent-email-domain
emails = ["a@x.com", "b@y.org", "c@x.com"]
domains = {}
for e in emails:
    d = e.split("@")[1]
    domains[d] = domains.get(d, 0) + 1
domains
# case: agent-fizzbuzz
out = []
for i in range(1, 16):
    out.append("FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else str(i))
" ".join(out)
# case: agent-primes
def primes(n):
    sieve = [True] * (n + 1)
    sieve[0] = sieve[1] = False
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            for j in range(i * i, n + 1, i):
                sieve[j] = False
    return [i for i, p in enumerate(sieve) if p]
primes(50)
# case: agent-gcd-fraction
import math
num, den = 84, 126
g = math.gcd(num, den)
f"{num // g}/{den // g}"
# case: agent-round-money-list
prices = [19.99, 5.01, 3.333, 0.005]
[round(p, 2) for p in prices]
# case: agent-currency-format
amount = 1234567.891
f"${amount:,.2f}"
# case: agent-time-format
seconds = 3725
h, rem = divmod(seconds, 3600)
m, s = divmod(rem, 60)
f"{h:02d}:{m:02d}:{s:02d}"
# case: agent-bmi
w, h = 70, 1.75
round(w / h ** 2, 1)
# case: agent-grade-average
grades = {"ann": [90, 85, 77], "bob": [60, 75, 80]}
{k: round(sum(v) / len(v), 1) for k, v in grades.items()}
# case: agent-inventory-reorder
stock = {"tea": 4, "cake": 12, "milk": 0}
[k for k, v in sorted(stock.items()) if v < 5]
# case: agent-running-total
vals = [5, -2, 7, 3]
acc = 0
out = []
for v in vals:
    acc += v
    out.append(acc)
out
# case: agent-max-drawdown
prices = [100, 120, 90, 130, 70, 110]
peak = prices[0]
dd = 0
for p in prices:
    peak = max(peak, p)
    dd = max(dd, (peak - p) / peak)
round(dd, 4)
# case: agent-binary-search
def bsearch(xs, t):
    lo, hi = 0, len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == t:
            return mid
        if xs[mid] < t:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
[bsearch([1, 3, 5, 7, 9], t) for t in (7, 4)]
# case: agent-roman-numerals
def roman(n):
    table = [
        (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
        (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
    ]
    out = ""
    for v, s in table:
        while n >= v:
            out += s
            n -= v
    return out
[roman(n) for n in (1994, 2024, 3999)]
# case: agent-palindrome
def is_pal(s):
    t = [c.lower() for c in s if c.isalnum()]
    return t == t[::-1]
[is_pal("A man, a plan, a canal: Panama"), is_pal("hello")]
# case: agent-json-report
import json
rows = [("north", 120.5), ("south", 98.25)]
print(json.dumps({"regions": [{"name": n, "sales": s} for n, s in rows], "total": sum(s for _, s in rows)}, indent=1))
# case: agent-count-true-flags
answers = [True, False, True, True]
answers.count(True)
# case: agent-bool-to-int-score
checks = [3 > 1, 2 > 5, "a" in "abc"]
score = 0
for c in checks:
    score += int(c)
score
# case: agent-vowel-count
sum(1 for c in "Programming Language" if c.lower() in "aeiou")
# case: agent-chunk-list
xs = list(range(10))
[xs[i:i + 3] for i in range(0, len(xs), 3)]
# case: agent-dedupe-keep-last
pairs = [("a", 1), ("b", 2), ("a", 3)]
dict(pairs)
# case: agent-weekday-name
from datetime import date
date(2024, 7, 4).strftime("%A")
# case: agent-temperature-stats
temps = [21.5, 23.0, 19.8, 25.1, 22.4]
print(f"min {min(temps)}, max {max(temps)}, avg {sum(temps) / len(temps):.2f}")
