# case: math-basic
import math
print(math.sqrt(16), math.floor(2.7), math.ceil(2.1), math.pi, math.e)
# case: math-hypot
import math
math.hypot(3, 4)
# case: math-hypot-multi
import math
math.hypot(1, 2, 2)
# case: math-trig
import math
print(round(math.sin(math.pi / 2), 10), round(math.cos(0), 10), round(math.atan2(1, 1), 10), math.degrees(math.pi))
# case: math-log
import math
print(math.log(math.e), math.log10(1000), math.log2(8), math.log(8, 2), math.exp(0))
# case: math-log-domain
import math
math.log(-1)
# case: math-sqrt-domain
import math
math.sqrt(-1)
# case: math-isqrt
import math
print(math.isqrt(17), math.isqrt(10 ** 20))
# case: math-gcd-lcm
import math
print(math.gcd(12, 18), math.gcd(0, 5), math.lcm(4, 6))
# case: math-factorial
import math
math.factorial(25)
# case: math-comb-perm
import math
print(math.comb(10, 3), math.perm(5, 2))
# case: math-fsum
import math
print(math.fsum([0.1] * 10), sum([0.1] * 10))
# case: math-prod
import math
math.prod([1, 2, 3, 4])
# case: math-isclose
import math
print(math.isclose(0.1 + 0.2, 0.3), math.isclose(1, 1.1, rel_tol=0.2))
# case: math-inf-nan
import math
print(math.inf, -math.inf, math.isnan(math.nan), math.isinf(math.inf), math.isfinite(1.0))
# case: math-trunc-copysign
import math
print(math.trunc(-2.7), math.copysign(3, -0.0), math.fabs(-4))
# case: math-floor-big
import math
math.floor(1e20)
# case: math-modf-frexp
import math
print(math.modf(3.5), math.frexp(8.0), math.ldexp(1, 4))
# case: math-radians
import math
round(math.radians(180), 12)
# case: math-pow-vs-builtin
import math
print(math.pow(2, 3), 2 ** 3)
# case: math-ceil-returns-int
import math
type(math.ceil(2.5)).__name__
# case: math-dist
import math
math.dist((0, 0), (3, 4))
# case: math-tau
import math
math.tau
# case: math-from-import
from math import sqrt, pi
round(sqrt(2) * pi, 6)
# case: math-remainder-fmod
import math
print(math.fmod(-7, 3), math.remainder(7, 3))
# case: json-dumps-basic
import json
json.dumps({"a": 1, "b": [1, 2, None], "c": True, "d": "x"})
# case: json-dumps-indent
import json
print(json.dumps({"a": [1, 2], "b": {"c": 1}}, indent=2))
# case: json-dumps-sort-keys
import json
json.dumps({"b": 1, "a": 2}, sort_keys=True)
# case: json-dumps-separators
import json
json.dumps([1, {"a": 2}], separators=(",", ":"))
# case: json-dumps-unicode
import json
print(json.dumps("é日"), json.dumps("é", ensure_ascii=False))
# case: json-dumps-float
import json
json.dumps([1.0, 0.1, 1e100, 2.5])
# case: json-dumps-tuple
import json
json.dumps((1, 2))
# case: json-dumps-int-keys
import json
json.dumps({1: "a", 2.5: "b", True: "c"})
# case: json-loads
import json
d = json.loads('{"a": [1, 2.5, null, true], "b": {"c": "x"}}')
print(d, type(d["a"][1]).__name__)
# case: json-loads-invalid
import json
json.loads("{bad json}")
# case: json-roundtrip
import json
data = {"name": "x", "tags": ["a", "b"], "n": 3}
json.loads(json.dumps(data)) == data
# case: json-dumps-nonserializable
import json
json.dumps({1, 2})
# case: json-loads-big-int
import json
json.loads("12345678901234567890123")
# case: json-dumps-nan
import json
json.dumps(float("nan"))
# case: json-dumps-escape
import json
print(json.dumps('quote " backslash \\ newline \n tab \t'))
# case: json-loads-nested-value
import json
json.loads('[{"k": [1, {"z": false}]}]')
# case: re-match
import re
m = re.match(r"(\d+)-(\d+)", "12-34 rest")
print(m.group(0), m.group(1), m.groups(), m.start(), m.end())
# case: re-search-none
import re
print(re.search(r"z+", "abc"))
# case: re-findall
import re
re.findall(r"\d+", "a1b22c333")
# case: re-findall-groups
import re
re.findall(r"(\w)=(\d)", "a=1, b=2")
# case: re-sub
import re
print(re.sub(r"\s+", " ", "a   b \t c"), re.sub(r"(\w+)@(\w+)", r"\2 at \1", "me@host"))
# case: re-sub-func
import re
re.sub(r"\d+", lambda m: str(int(m.group()) * 2), "a1b10")
# case: re-split
import re
print(re.split(r"[,;]\s*", "a, b;c"), re.split(r"(-)", "a-b"))
# case: re-compile-flags
import re
p = re.compile(r"^hello", re.IGNORECASE | re.MULTILINE)
p.findall("Hello\nhello\nbye")
# case: re-named-groups
import re
m = re.search(r"(?P<year>\d{4})-(?P<month>\d{2})", "on 2024-03-05")
print(m.group("year"), m.groupdict())
# case: re-fullmatch
import re
print(bool(re.fullmatch(r"[a-z]+", "abc")), bool(re.fullmatch(r"[a-z]+", "abc1")))
# case: re-finditer
import re
[m.span() for m in re.finditer(r"a", "banana")]
# case: re-escape
import re
re.escape("a.b*c")
# case: re-subn
import re
re.subn(r"a", "x", "banana")
# case: re-lookahead
import re
re.findall(r"\d(?=px)", "1px 2em 3px")
# case: re-email
import re
bool(re.match(r"^[\w.+-]+@[\w-]+\.[\w.]+$", "a.b+c@example.co.uk"))
# case: re-invalid
import re
re.compile("(")
# case: re-greedy
import re
print(re.findall(r"<.*>", "<a><b>"), re.findall(r"<.*?>", "<a><b>"))
# case: datetime-date
from datetime import date
d = date(2024, 2, 28)
print(d, d.year, d.month, d.day, d.weekday(), d.isoformat())
# case: datetime-timedelta
from datetime import date, timedelta
d = date(2024, 2, 28) + timedelta(days=2)
print(d, (date(2024, 12, 25) - date(2024, 1, 1)).days)
# case: datetime-datetime
from datetime import datetime
dt = datetime(2024, 3, 5, 14, 30, 15)
print(dt, dt.isoformat(), dt.hour, dt.minute, dt.second)
# case: datetime-strftime
from datetime import datetime
datetime(2024, 3, 5, 9, 7).strftime("%Y-%m-%d %H:%M %A %B %j")
# case: datetime-strptime
from datetime import datetime
datetime.strptime("2024-03-05 10:20", "%Y-%m-%d %H:%M").isoformat()
# case: datetime-fromisoformat
from datetime import date, datetime
print(date.fromisoformat("2024-01-31"), datetime.fromisoformat("2024-01-31T10:00:00"))
# case: datetime-timedelta-fields
from datetime import timedelta
td = timedelta(days=1, hours=2, minutes=3, seconds=4)
print(td, td.total_seconds(), td.days, td.seconds)
# case: datetime-timedelta-negative
from datetime import timedelta
print(timedelta(hours=-1), timedelta(days=-1, seconds=5))
# case: datetime-compare
from datetime import date
print(date(2024, 1, 1) < date(2024, 1, 2), max(date(2023, 5, 1), date(2024, 1, 1)))
# case: datetime-invalid
from datetime import date
date(2023, 2, 29)
# case: datetime-replace
from datetime import date
date(2024, 1, 31).replace(month=2, day=29).isoformat()
# case: datetime-isoweekday
from datetime import date
print(date(2024, 3, 5).isoweekday(), date(2024, 3, 5).isocalendar()[1])
# case: datetime-timezone
from datetime import datetime, timezone, timedelta
dt = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
print(dt.isoformat(), dt.astimezone(timezone(timedelta(hours=2))).isoformat())
# case: datetime-ordinal
from datetime import date
date(2024, 3, 1).toordinal() - date(2024, 2, 1).toordinal()
# case: datetime-repr
from datetime import date, timedelta
print(repr(date(2024, 1, 2)), repr(timedelta(days=3)))
# case: datetime-module-import
import datetime
(datetime.date(2024, 12, 31) - datetime.date(2024, 1, 1)).days
# case: datetime-age
from datetime import date
born = date(1990, 6, 15)
today = date(2024, 3, 5)
today.year - born.year - ((today.month, today.day) < (born.month, born.day))
# case: sys-version-info
import sys
sys.version_info[0]
# case: sys-maxsize
import sys
sys.maxsize
# case: typing-annotations
from typing import List, Dict, Optional
def f(xs: List[int], d: Optional[Dict[str, int]] = None) -> int:
    return sum(xs) + len(d or {})
f([1, 2], {"a": 1})
# case: typing-annotated-var
x: int = 5
y: list[str] = ["a"]
print(x, y)
# case: asyncio-gather
import asyncio
async def work(n):
    await asyncio.sleep(0)
    return n * 2
async def main():
    return await asyncio.gather(work(1), work(2), work(3))
asyncio.run(main())
# case: asyncio-await-chain
import asyncio
async def a():
    return 1
async def b():
    return await a() + 1
asyncio.run(b())
# case: escalated-class
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def norm2(self):
        return self.x ** 2 + self.y ** 2
Point(3, 4).norm2()
# case: escalated-generator
def gen(n):
    for i in range(n):
        yield i * i
list(gen(5))
# case: escalated-collections
from collections import Counter
Counter("abracadabra").most_common(2)
# case: escalated-itertools
import itertools
list(itertools.permutations([1, 2, 3], 2))
# case: escalated-del
a = [1, 2, 3]
del a[0]
a
# case: escalated-match
match (1, 2):
    case (1, y):
        print("y", y)
# case: escalated-statistics
import statistics
statistics.median([3, 1, 2, 5])
# case: escalated-functools
from functools import reduce
reduce(lambda a, b: a * b, [1, 2, 3, 4])
