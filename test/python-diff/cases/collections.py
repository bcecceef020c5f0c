# case: slice-basic
a = list(range(10))
print(a[2:5], a[:3], a[7:], a[-3:], a[:-7], a[::3], a[::-1], a[8:2:-2])
# case: slice-out-of-range
a = [1, 2, 3]
print(a[5:10], a[-10:2], a[1:100])
# case: slice-assign-simple
a = [1, 2, 3, 4, 5]
a[1:3] = ["x", "y", "z"]
a
# case: slice-assign-shrink
a = [1, 2, 3, 4, 5]
a[1:4] = []
a
# case: slice-assign-extended
a = list(range(6))
a[::2] = [10, 20, 30]
a
# case: slice-assign-extended-reverse
a = list(range(5))
a[::-1] = "abcde"
a
# case: slice-assign-extended-wrong-size
a = list(range(6))
a[::2] = [1, 2]
# case: slice-assign-insert
a = [1, 4]
a[1:1] = [2, 3]
a
# case: slice-assign-whole
a = [1, 2, 3]
b = a
a[:] = [9]
print(a, b, a is b)
# case: slice-object
s = slice(1, 5, 2)
print(list(range(10))[s], s.start, s.stop, s.step)
# case: slice-tuple
t = (1, 2, 3, 4)
print(t[1:3], t[::-1])
# case: slice-negative-step-defaults
print("hello"[::-2], [1, 2, 3, 4][3::-2])
# case: slice-copy
a = [[1], [2]]
b = a[:]
b.append([3])
b[0].append(9)
print(a, b)
# case: list-methods
a = [3, 1, 2]
a.append(4)
a.extend([5, 6])
a.insert(0, 0)
a.remove(3)
x = a.pop()
y = a.pop(0)
print(a, x, y, a.index(2), a.count(1))
# case: list-sort-reverse
a = [3, 1, 2]
a.sort()
b = sorted(a, reverse=True)
a.reverse()
print(a, b)
# case: list-remove-missing
[1, 2].remove(3)
# case: list-pop-empty
[].pop()
# case: list-index-error
[1, 2, 3][3]
# case: list-negative-index
a = [1, 2, 3]
print(a[-1], a[-3])
# case: list-equality-nested
print([1, [2, 3]] == [1, [2, 3]], [1, 2] < [1, 3], [1, 2] < [1, 2, 0])
# case: list-mult-aliasing
grid = [[0] * 2] * 2
grid[0][0] = 1
grid
# case: list-clear-copy
a = [1, 2]
b = a.copy()
a.clear()
print(a, b)
# case: list-in-not-in
print(3 in [1, 2, 3], 4 not in [1, 2, 3])
# case: list-enumerate-zip
for i, (a, b) in enumerate(zip("ab", [1, 2]), start=1):
    print(i, a, b)
# case: list-zip-uneven
list(zip([1, 2, 3], "ab"))
# case: list-unpacking-star
first, *rest = [1, 2, 3, 4]
*init, last = [1, 2, 3, 4]
a, (b, c) = 1, (2, 3)
print(first, rest, init, last, a, b, c)
# case: list-unpack-error
a, b = [1, 2, 3]
# case: list-map-filter
print(list(map(str, [1, 2])), list(filter(None, [0, 1, "", "a"])), list(map(lambda x, y: x + y, [1, 2], [3, 4])))
# case: list-reversed-range
print(list(reversed(range(5))), list(range(10, 0, -3)), list(range(0)))
# case: list-range-props
r = range(2, 20, 3)
print(len(r), r[2], r[-1], 11 in r, list(r[1:3]))
# case: list-any-all
print(any([0, "", None]), all([]), any(x > 2 for x in [1, 3]), all(x for x in [1, 0]))
# case: comp-list
[x * x for x in range(6) if x % 2 == 0]
# case: comp-nested
[(i, j) for i in range(3) for j in range(i)]
# case: comp-matrix-transpose
m = [[1, 2, 3], [4, 5, 6]]
[[row[i] for row in m] for i in range(3)]
# case: comp-dict
{k: v for k, v in zip("abc", range(3)) if v != 1}
# case: comp-set
sorted({x % 3 for x in range(10)})
# case: comp-generator-sum
sum(x * x for x in range(100))
# case: comp-scope
x = 10
y = [x for x in range(3)]
print(x, y)
# case: comp-walrus
data = [1, 5, 12, 7, 30]
[y for x in data if (y := x * 2) > 10]
# case: comp-conditional-expr
["even" if n % 2 == 0 else "odd" for n in range(4)]
# case: comp-flatten
nested = [[1, 2], [3], [], [4, 5]]
[x for sub in nested for x in sub]
# case: dict-basic
d = {"b": 2, "a": 1}
d["c"] = 3
print(d, list(d), list(d.keys()), list(d.values()), list(d.items()))
# case: dict-ordering-after-update
d = {"a": 1, "b": 2}
d["a"] = 10
d["z"] = 0
d.pop("b")
d["b"] = 5
d
# case: dict-get-setdefault
d = {}
print(d.get("x"), d.get("x", 0), d.setdefault("k", []), d)
d["k"].append(1)
d
# case: dict-keyerror
{"a": 1}["b"]
# case: dict-update-merge
a = {"x": 1, "y": 2}
b = {"y": 3, "z": 4}
c = a | b
a.update(z=9)
print(c, a, {**a, **b})
# case: dict-pop-popitem
d = {"a": 1, "b": 2, "c": 3}
print(d.pop("a"), d.pop("q", None), d.popitem(), d)
# case: dict-fromkeys
dict.fromkeys("abc", 0)
# case: dict-comprehension-count
words = "the cat and the hat and the bat".split()
counts = {}
for w in words:
    counts[w] = counts.get(w, 0) + 1
counts
# case: dict-iteration-sorted-items
d = {"b": 2, "a": 3, "c": 1}
print(sorted(d), sorted(d.items(), key=lambda kv: kv[1]), max(d, key=d.get))
# case: dict-in-len
d = {1: "a", 2: "b"}
print(1 in d, "a" in d, len(d))
# case: dict-equality
print({"a": 1, "b": 2} == {"b": 2, "a": 1})
# case: dict-tuple-keys
d = {(1, 2): "p", (3, 4): "q"}
print(d[(1, 2)], d[3, 4])
# case: dict-unhashable-key
{[1]: 2}
# case: dict-value-json
{"n": 1, "f": 1.5, "s": "x", "l": [1, 2], "none": None, "t": True}
# case: dict-int-keys-value
{1: "a", 2: "b"}
# case: dict-modify-during-iteration
d = {"a": 1}
for k in d:
    d["b"] = 2
# case: dict-copy
a = {"l": [1]}
b = a.copy()
b["l"].append(2)
b["n"] = 1
print(a, b)
# case: dict-nested-access
cfg = {"db": {"hosts": ["a", "b"], "port": 5432}}
print(cfg["db"]["hosts"][-1], cfg.get("cache", {}).get("ttl", 60))
# case: set-ops
a = {1, 2, 3}
b = {2, 3, 4}
print(sorted(a | b), sorted(a & b), sorted(a - b), sorted(a ^ b))
# case: set-methods
s = set()
s.add(1)
s.update([2, 3])
s.discard(5)
s.remove(1)
print(sorted(s), len(s), 2 in s)
# case: set-remove-missing
s = {1}
s.remove(2)
# case: set-subset
print({1, 2} <= {1, 2, 3}, {1, 2} < {1, 2}, {1, 2, 3} >= {3}, {1}.isdisjoint({2}))
# case: set-dedupe-order
items = [3, 1, 3, 2, 1]
seen = set()
out = []
for x in items:
    if x not in seen:
        seen.add(x)
        out.append(x)
out
# case: set-frozenset
f = frozenset([1, 2])
print(sorted(f | {3}), f == {1, 2})
# case: set-int-order
list({3, 1, 2})
# case: set-str-sorted
sorted({"b", "a", "c"})
# case: set-value
{1, 2, 3}
# case: tuple-basics
t = (1, 2, 3)
print(t.count(2), t.index(3), t + (4,), t * 2, len(t), (1,) == (1,))
# case: tuple-immutable
t = (1, 2)
t[0] = 5
# case: tuple-compare
print((1, 2) < (1, 3), (2,) > (1, 9), (1, 2) == (1, 2))
# case: tuple-value
(1, "a", None)
# case: tuple-swap
a, b = 1, 2
a, b = b, a
print(a, b)
# case: sort-key-len
sorted(["ccc", "a", "bb", "dd"], key=len)
# case: sort-stable
records = [("b", 2), ("a", 2), ("c", 1), ("d", 1)]
sorted(records, key=lambda r: r[1])
# case: sort-multi-key
people = [("ann", 30), ("bob", 25), ("cat", 30), ("dan", 25)]
sorted(people, key=lambda p: (-p[1], p[0]))
# case: sort-reverse-stable
sorted([("a", 1), ("b", 1), ("c", 2)], key=lambda x: x[1], reverse=True)
# case: sort-mixed-types
sorted([1, "a"])
# case: sort-bools-ints
sorted([True, 0, 2, False, 1])
# case: sort-floats-ints
sorted([2.5, 1, 3, 0.5, -1])
# case: sort-str-lower
sorted(["banana", "Apple", "cherry"], key=str.lower)
# case: sort-dicts-by-field
rows = [{"n": "x", "v": 3}, {"n": "y", "v": 1}, {"n": "z", "v": 2}]
[r["n"] for r in sorted(rows, key=lambda r: r["v"])]
# case: sort-list-sort-key
a = ["b", "A", "c"]
a.sort(key=lambda s: s.lower(), reverse=True)
a
# case: sort-tuples-default
sorted([(2, "b"), (1, "z"), (2, "a")])
# case: list-value-nested
[[1, 2], [3, [4, 5]], []]
# case: list-value-floats
[0.1, 1.0, 2.5e10, -0.0]
# case: list-of-none
[None] * 3
# case: len-builtin-types
print(len([1]), len("ab"), len({1: 2}), len({1, 2, 3}), len(range(5)), len((1, 2)))
# case: iter-next
it = iter([1, 2])
print(next(it), next(it), next(it, "done"))
# case: iter-stopiteration
it = iter([])
next(it)
# case: enumerate-list
list(enumerate("abc"))
# case: isinstance-checks
print(isinstance(1, (int, float)), isinstance("a", str), isinstance([], list), isinstance({}, dict), isinstance(1.0, int))
# case: type-names
print(type(1).__name__, type("a").__name__, type([]).__name__, type({}).__name__, type(None).__name__, type(1.5).__name__)
# case: bool-truthiness
print(bool([]), bool([0]), bool(""), bool("0"), bool(0.0), bool(None), bool({}))
# case: none-compare
print(None is None, None == 0, [] == None)
# case: identity-small
a = [1]
b = a
print(a is b, a is [1], a == [1])
# case: hash-equal
print(hash(1) == hash(1.0), hash("a") == hash("a"))
# case: chained-dict-list
inv = {"apples": [3, 5], "pears": [2]}
{k: sum(v) for k, v in inv.items()}
# case: stack-queue
stack = []
for c in "([]{})":
    if c in "([{":
        stack.append(c)
    else:
        stack.pop()
print(len(stack) == 0)
# case: matrix-mult
A = [[1, 2], [3, 4]]
B = [[5, 6], [7, 8]]
[[sum(A[i][k] * B[k][j] for k in range(2)) for j in range(2)] for i in range(2)]
