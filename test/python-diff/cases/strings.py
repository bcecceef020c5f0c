# case: str-upper-lower
print("Hello".upper(), "Hello".lower(), "hello world".title(), "hELLO".swapcase(), "hello".capitalize())
# case: str-strip
print(repr("  x  ".strip()), repr("xxhixx".strip("x")), repr("  a".lstrip()), repr("a  ".rstrip()))
# case: str-split
print("a,b,,c".split(","), "a b  c".split(), "a-b-c".split("-", 1), "a-b-c".rsplit("-", 1))
# case: str-splitlines
print("a\nb\r\nc".splitlines(), "a\nb\n".splitlines(True))
# case: str-join
print("-".join(["a", "b", "c"]), "".join(reversed("abc")))
# case: str-join-non-str
",".join([1, 2])
# case: str-find
print("hello".find("l"), "hello".rfind("l"), "hello".find("z"), "hello".index("e"))
# case: str-index-missing
"hello".index("z")
# case: str-count
print("banana".count("a"), "banana".count("an"), "aaaa".count("aa"))
# case: str-replace
print("aaa".replace("a", "b", 2), "hello".replace("l", ""))
# case: str-startswith
print("hello".startswith("he"), "hello".endswith(("lo", "x")), "hello".startswith("l", 2))
# case: str-is-methods
print("123".isdigit(), "abc".isalpha(), "a1".isalnum(), "   ".isspace(), "Ab".isupper(), "ab".islower())
# case: str-center-ljust
print(repr("ab".center(6, "*")), repr("ab".ljust(5)), repr("ab".rjust(5, "0")), "42".zfill(5), "-42".zfill(5))
# case: str-partition
print("k=v=w".partition("="), "k=v=w".rpartition("="), "abc".partition("x"))
# case: str-removeprefix
print("prefix_name".removeprefix("prefix_"), "file.txt".removesuffix(".txt"))
# case: str-in
print("ell" in "hello", "z" not in "hello")
# case: str-ord-chr
print(ord("A"), chr(97), ord("é"), chr(8364))
# case: str-unicode-len
print(len("héllo"), len("日本語"), "日本語"[1])
# case: str-compare
print("apple" < "banana", "Z" < "a", "abc" == "abc")
# case: str-multiply-join
print("=" * 10)
# case: str-escape
print("tab\there", "new\\nline", 'quote"s', "it's")
# case: str-repr
print(repr("a'b"), repr('a"b'), repr("a\nb"), repr("\t"))
# case: str-repr-both-quotes
print(repr("a'b\"c"))
# case: str-raw
print(r"\d+\n")
# case: str-triple
s = """line1
line2"""
print(s.split("\n"))
# case: str-expandtabs
print(repr("a\tb".expandtabs(4)))
# case: str-casefold
print("Straße".casefold(), "ǅ".lower())
# case: str-title-apostrophe
"they're bill's".title()
# case: str-translate
print("hello".translate(str.maketrans("el", "ip")))
# case: str-encode
print("héllo".encode("utf-8"), len("héllo".encode()))
# case: str-bytes-decode
print(b"abc".decode(), bytes([104, 105]).decode())
# case: str-format-method
print("{} + {} = {}".format(1, 2, 3), "{1}{0}".format("a", "b"), "{name}!".format(name="hi"))
# case: str-format-spec-width
print("[{:>8}]".format("r"), "[{:<8}]".format("l"), "[{:^8}]".format("c"), "[{:*^9}]".format("x"))
# case: str-format-spec-float
print("{:.2f}".format(3.14159), "{:.0f}".format(2.5), "{:.3e}".format(12345.678), "{:g}".format(0.0001))
# case: str-format-spec-comma
print("{:,}".format(1234567), "{:_}".format(1234567), "{:,.2f}".format(1234567.891))
# case: str-format-spec-percent
print("{:.1%}".format(0.256), "{:%}".format(0.5))
# case: str-format-spec-int-bases
print("{:b} {:o} {:x} {:X} {:#x} {:#b}".format(10, 10, 255, 255, 255, 5))
# case: str-format-spec-sign
print("{:+d} {:+d} {: d} {:=+6d}".format(5, -5, 5, 5))
# case: str-format-spec-zero-pad
print("{:05d} {:08.3f} {:>05}".format(42, 3.14159, 7))
# case: str-format-spec-g
print("{:g} {:g} {:g} {:.3g}".format(1e20, 123456789.0, 0.5, 3.14159))
# case: str-format-index
print("{0[1]} {1[k]}".format([1, 2], {"k": "v"}))
# case: str-format-attr
print("{0.real}".format(5))
# case: fstring-basic
name = "Ada"
n = 3
print(f"{name} has {n} items, {n * 2} doubled")
# case: fstring-format-spec
x = 1234.5678
print(f"{x:.2f} {x:,.1f} {x:>12.3f} {x:e}")
# case: fstring-nested-spec
width = 10
prec = 3
print(f"[{3.14159:{width}.{prec}f}]")
# case: fstring-debug
a = 5
print(f"{a=}", f"{a + 1 = }")
# case: fstring-conversion
s = "hi"
print(f"{s!r} {s!s} {'é'!a}")
# case: fstring-expr
items = [1, 2, 3]
print(f"{len(items)} {sum(items) / len(items):.1f} {items[-1]} {'yes' if items else 'no'}")
# case: fstring-dict
d = {"k": 1}
print(f"{d['k']} {d}")
# case: fstring-braces
print(f"{{literal}} {1 + 1}")
# case: fstring-int-spec
n = 255
print(f"{n:08b} {n:#o} {n:x} {n:>6} {n:<6}| {n:^7}|")
# case: fstring-percent
print(f"{0.125:.1%}")
# case: fstring-date-like
d, m, y = 5, 3, 2024
print(f"{y:04d}-{m:02d}-{d:02d}")
# case: fstring-bool
print(f"{True} {False:>6} {True:d}")
# case: fstring-none
print(f"{None}")
# case: fstring-nested-quotes
print(f"{'a' + 'b'}")
# case: fstring-multiline
v = 2
s = (f"a{v}"
     f"b{v * 2}")
s
# case: percent-format
print("%s is %d years" % ("Bob", 30), "%.2f" % 3.14159, "%5s|%-5s|" % ("a", "b"))
# case: percent-format-misc
print("%x %o %e %g %%" % (255, 8, 12345.678, 0.0001))
# case: percent-format-dict
print("%(a)s-%(b)03d" % {"a": "x", "b": 7})
# case: percent-format-repr
print("%r" % "q")
# case: percent-format-zero-pad
print("%05.1f|%+d|% d" % (3.14159, 4, 4))
# case: percent-format-error
"%d" % "x"
# case: str-slicing
s = "abcdefgh"
print(s[2:5], s[:3], s[-3:], s[::2], s[::-1], s[1:-1:3])
# case: str-index-error
"abc"[10]
# case: str-immutable
s = "abc"
s[0] = "x"
# case: str-sorted
print(sorted("hello"), "".join(sorted("hello", reverse=True)))
# case: str-iteration
print([c.upper() for c in "abc"])
# case: str-to-list
list("abc")
# case: str-concat-loop
out = ""
for i in range(5):
    out += str(i)
out
# case: str-isnumeric-decimal
print("½".isnumeric(), "½".isdigit(), "١٢".isdecimal())
# case: str-split-maxsplit-none
"  a  b  c  ".split(None, 1)
# case: str-str-of-float
print(str(1.0), str(1e100), str(-0.5), str(float(10**16)))
# case: str-str-of-containers
print(str([1, "a", None, True, 2.5]), str((1,)), str({"a": (1, 2)}))
# case: str-repr-float
print(repr(0.1), repr(1/3), [0.1, 1e-7])
# case: str-format-int-rounding
print(f"{2.5:.0f} {3.5:.0f} {0.125:.2f} {0.375:.2f}")
# case: str-format-nested-container
print("{}".format([1, {"a": 2}]))
# case: str-zfill-sign
print("+3".zfill(4))
# case: str-ljust-fill-unicode
print("ab".ljust(4, "é") + "|")
# case: str-count-empty
print("abc".count(""), "".count(""))
# case: str-split-empty-sep
"abc".split("")
# case: str-istitle
print("Hello World".istitle(), "Hello world".istitle())
# case: str-find-start-end
print("abcabc".find("b", 2), "abcabc".find("b", 2, 4), "abcabc".rindex("c"))
# case: str-format-center-odd
print("[{:^4}]".format("abc"), "[{:^6}]".format("abc"))
