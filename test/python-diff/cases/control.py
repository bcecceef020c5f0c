# case: exc-try-except
try:
    1 / 0
except ZeroDivisionError as e:
    print("caught", e)
# case: exc-finally-order
def f():
    try:
        print("try")
        return "r"
    finally:
        print("finally")
print(f())
# case: exc-finally-overrides
def f():
    try:
        return 1
    finally:
        return 2
f()
# case: exc-else
try:
    x = 1
except ValueError:
    print("no")
else:
    print("else", x)
finally:
    print("done")
# case: exc-raise-from
try:
    try:
        int("x")
    except ValueError as e:
        raise RuntimeError("bad input") from e
except RuntimeError as e:
    print(type(e).__name__, e, type(e.__cause__).__name__)
# case: exc-raise-uncaught
raise ValueError("boom")
# case: exc-raise-from-uncaught
try:
    {}["k"]
except KeyError as e:
    raise LookupError("missing") from e
# case: exc-multiple-types
for v in ["1", "x", None]:
    try:
        print(int(v))
    except (ValueError, TypeError) as e:
        print(type(e).__name__)
# case: exc-args
try:
    raise ValueError("a", 2)
except ValueError as e:
    print(e.args, str(e))
# case: exc-keyerror-str
try:
    {}["missing"]
except KeyError as e:
    print(str(e), repr(e))
# case: exc-str-messages
msgs = []
for fn in [lambda: 1 / 0, lambda: [][1], lambda: {}["a"], lambda: int("z"), lambda: None + 1]:
    try:
        fn()
    except Exception as e:
        msgs.append(type(e).__name__)
msgs
# case: exc-zero-div-message
try:
    1 / 0
except ZeroDivisionError as e:
    print(e)
# case: exc-hierarchy
print(issubclass(ZeroDivisionError, ArithmeticError), issubclass(KeyError, LookupError), issubclass(ValueError, Exception))
# case: exc-bare-raise
try:
    try:
        raise TypeError("t")
    except TypeError:
        print("inner")
        raise
except TypeError as e:
    print("outer", e)
# case: exc-nested-finally
out = []
try:
    try:
        out.append(1)
        raise ValueError
    finally:
        out.append(2)
except ValueError:
    out.append(3)
out
# case: exc-assert
assert 1 == 2, "math is broken"
# case: exc-assert-pass
assert True
"ok"
# case: exc-name-error
undefined_name + 1
# case: exc-attribute-error
(1).nope
# case: exc-recursion
def f(n):
    return f(n + 1)
f(0)
# case: exc-exception-as-value
e = ValueError("v")
print(isinstance(e, Exception), e.args)
# case: exc-loop-continue
total = 0
for x in ["1", "a", "3"]:
    try:
        total += int(x)
    except ValueError:
        continue
total
# case: control-while-else
n = 5
while n > 0:
    n -= 2
else:
    print("done", n)
# case: control-for-break-else
for i in range(5):
    if i == 3:
        break
else:
    print("no break")
print(i)
# case: control-nested-loops
pairs = []
for i in range(3):
    for j in range(3):
        if j == i:
            continue
        if j > 1:
            break
        pairs.append((i, j))
pairs
# case: control-ternary-chain
def grade(s):
    return "A" if s >= 90 else "B" if s >= 80 else "C"
[grade(s) for s in (95, 85, 50)]
# case: control-walrus-while
data = [1, 2, 3, 0, 4]
i = 0
while (v := data[i]) != 0:
    i += 1
i
# case: control-pass
if True:
    pass
"ok"
# case: control-global
count = 0
def inc():
    global count
    count += 1
inc(); inc()
count
# case: fn-defaults
def f(a, b=2, *args, c=3, **kw):
    return (a, b, args, c, sorted(kw.items()))
print(f(1), f(1, 5, 6, 7, c=0, z=1))
# case: fn-mutable-default
def f(x, acc=[]):
    acc.append(x)
    return acc
f(1)
f(2)
# case: fn-kwargs-unpack
def f(a, b):
    return a - b
print(f(*[5, 3]), f(**{"b": 1, "a": 10}))
# case: fn-missing-arg
def f(a, b):
    return a
f(1)
# case: fn-keyword-only
def f(*, k):
    return k
f(k=3)
# case: fn-positional-only
def f(a, /, b):
    return a + b
f(1, b=2)
# case: fn-recursion-fib
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(20)
# case: fn-memo-dict
memo = {}
def fib(n):
    if n in memo:
        return memo[n]
    r = n if n < 2 else fib(n - 1) + fib(n - 2)
    memo[n] = r
    return r
fib(90)
# case: fn-docstring
def f():
    """doc"""
    return 1
f.__doc__
# case: fn-name
def my_func():
    pass
my_func.__name__
# case: fn-return-none
def f():
    pass
print(f())
# case: fn-multiple-return
def stats(xs):
    return min(xs), max(xs), sum(xs) / len(xs)
lo, hi, avg = stats([4, 8, 6])
print(lo, hi, avg)
# case: closure-counter
def make_counter():
    n = 0
    def inc():
        nonlocal n
        n += 1
        return n
    return inc
c = make_counter()
c(); c()
c()
# case: closure-late-binding
fs = [lambda: i for i in range(3)]
[f() for f in fs]
# case: closure-default-binding
fs = [lambda i=i: i for i in range(3)]
[f() for f in fs]
# case: closure-adder
def adder(n):
    return lambda x: x + n
add5 = adder(5)
[add5(1), adder(10)(1)]
# case: closure-compose
def compose(f, g):
    return lambda x: f(g(x))
inc = lambda x: x + 1
dbl = lambda x: x * 2
[compose(inc, dbl)(5), compose(dbl, inc)(5)]
# case: closure-decorator
def twice(fn):
    def wrapper(*a):
        return fn(fn(*a))
    return wrapper
@twice
def inc(x):
    return x + 1
inc(1)
# case: closure-unbound-local
x = 1
def f():
    x += 1
    return x
f()
# case: lambda-sort-map
pts = [(1, 2), (3, 1), (0, 5)]
print(sorted(pts, key=lambda p: p[0] ** 2 + p[1] ** 2), list(map(lambda p: p[0] + p[1], pts)))
# case: lambda-immediate
(lambda x, y=2: x * y)(3)
# case: lambda-reduce-manual
acc = 1
for f in [lambda v: v + 1, lambda v: v * 10]:
    acc = f(acc)
acc
# case: fn-recursive-closure
def outer():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)
    return fact(10)
outer()
# case: fn-star-args-sum
def total(*nums):
    return sum(nums)
total(1, 2, 3.5)
# case: fn-kwargs-order
def f(**kw):
    return list(kw)
f(z=1, a=2, m=3)
# case: fn-callable
print(callable(len), callable(1), callable(lambda: 0))
# case: builtins-misc
print(abs(-2), divmod(9, 4), pow(2, 5), round(3.7), len("x"), sorted([2, 1]), reversed([1]) is not None)
# case: builtins-chr-range
"".join(chr(ord("a") + i) for i in range(5))
# case: builtins-zip-dict
dict(zip(["a", "b"], [1, 2]))
# case: builtins-dict-kwargs
dict(a=1, b=2)
# case: builtins-list-of-tuples-dict
dict([("x", 1), ("y", 2)])
# case: builtins-str-int-roundtrip
int(str(12345)[::-1])
# case: builtins-print-sep-end
print(1, 2, 3, sep="-", end="!\n")
print("a", "b", sep="")
# case: builtins-print-empty
print()
print("x")
# case: builtins-print-no-newline
print("a", end="")
print("b", end="")
# case: builtins-print-objects
print([1, 'a'], (1,), {1: 'x'}, None, True, 1.0, -0.0)
# case: builtins-repr-nested-strings
print(repr(["a", 'b"c', "d'e"]))
# case: builtins-sum-empty
sum([])
# case: builtins-max-empty
max([])
# case: builtins-min-multiple-key
min("apple", "fig", "kiwi", key=len)
# case: builtins-round-none
round(7.6)
# case: builtins-id-unique
a = []
b = []
id(a) != id(b)
# case: builtins-sorted-generator
sorted(x % 5 for x in range(12))
# case: builtins-float-int-division-value
10 / 4
# case: value-none
None
# case: value-bool
3 > 2
# case: value-str
"hello"
# case: value-float
2.5 * 4
# case: value-big-float
1e300 * 10
# case: value-negative-int
-17
# case: value-last-statement-assignment
x = 5
# case: value-after-print
print("out")
42
# case: value-nested-dict-list
{"a": [1, {"b": (2, 3)}], "c": {"d": None}}
