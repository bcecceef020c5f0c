# case: arith-int-bool-add
1 + True
# case: arith-bool-bool-add
True + True
# case: arith-int-bool-mul
3 * False
# case: arith-bool-sum
sum([True, False, True, True])
# case: arith-float-bool
2.5 + True
# case: arith-bool-sub-int
print(True - 5)
# case: arith-int-float-mix
print(1 + 2.0, 3 * 0.5, 7 - 0.25)
# case: arith-true-div
print(7 / 2, -7 / 2, 6 / 3)
# case: arith-floor-div-neg
print(-7 // 2, 7 // -2, -7 // -2, 7 // 2)
# case: arith-mod-neg
print(-7 % 3, 7 % -3, -7 % -3, 7 % 3)
# case: arith-float-mod-neg
print(-7.5 % 2, 7.5 % -2)
# case: arith-float-floordiv
print(7.5 // 2, -7.5 // 2)
# case: arith-divmod
print(divmod(17, 5), divmod(-17, 5), divmod(17, -5))
# case: arith-divmod-float
print(divmod(7.5, 2))
# case: arith-pow
print(2 ** 10, 2 ** -1, (-2) ** 3, 2 ** 0.5)
# case: arith-pow-mod
pow(3, 200, 7)
# case: arith-pow-neg-mod
pow(3, -1, 7)
# case: arith-big-int-mul
print(2 ** 100 * 3 ** 50)
# case: arith-big-int-value
2 ** 70
# case: arith-big-int-factorial
r = 1
for i in range(1, 31):
    r *= i
print(r)
# case: arith-big-int-floordiv
print((10 ** 30 + 7) // 13, (10 ** 30 + 7) % 13)
# case: arith-big-int-neg
print(-(2 ** 80) // 3)
# case: arith-big-int-compare
print(2 ** 64 > 2 ** 63, 2 ** 64 == 18446744073709551616)
# case: arith-int-overflow-boundary
print(9223372036854775807 + 1)
# case: arith-int-min-boundary
print(-9223372036854775808 - 1)
# case: arith-big-int-str-len
len(str(2 ** 1000))
# case: arith-zero-div
1 / 0
# case: arith-zero-floordiv
5 // 0
# case: arith-zero-mod
5 % 0
# case: arith-float-zero-div
1.0 / 0
# case: arith-round-half-even
print(round(0.5), round(1.5), round(2.5), round(-0.5), round(-1.5))
# case: arith-round-ndigits
print(round(2.675, 2), round(1.2345, 3), round(123.456, -1))
# case: arith-round-int-ndigits
print(round(1234, -2), round(1250, -2), round(1350, -2))
# case: arith-round-type
print(type(round(2.5)).__name__, type(round(2.5, 1)).__name__)
# case: arith-int-conversions
print(int(3.9), int(-3.9), int("42"), int(" 17 "), int("ff", 16), int("0b101", 0))
# case: arith-int-invalid
int("abc")
# case: arith-float-conversions
print(float("1.5"), float("inf"), float("-inf"), float(" 2 "))
# case: arith-float-repr
print(0.1 + 0.2, 1e16, 1e-5, 1.0, 100.0, 1e22, 123456789.123)
# case: arith-float-repr-small
print(1/3, 2/3, 0.1 * 3)
# case: arith-abs
print(abs(-3), abs(-2.5), abs(True))
# case: arith-min-max
print(min(3, 1, 2), max([4, 9, 2]), min("b", "a"), max([], default=0))
# case: arith-min-max-key
print(max(["apple", "fig", "banana"], key=len), min([(1, 'b'), (1, 'a')]))
# case: arith-bitwise
print(5 & 3, 5 | 3, 5 ^ 3, ~5, 1 << 10, 1024 >> 3, -16 >> 2)
# case: arith-bool-bitwise
print(True & False, True | False, True ^ True)
# case: arith-compare-chain
print(1 < 2 < 3, 1 < 3 < 2, 1 == 1.0, True == 1)
# case: arith-int-is-integer
print((4.0).is_integer(), (4.5).is_integer())
# case: arith-hex-oct-bin
print(hex(255), oct(8), bin(10), hex(-1))
# case: arith-int-bit-length
print((255).bit_length(), (0).bit_length(), (-8).bit_length())
# case: arith-sum-floats
print(sum([0.1] * 10))
# case: arith-sum-start
print(sum([1, 2, 3], 10))
# case: arith-augmented
x = 10
x += 5
x -= 3
x *= 2
x //= 5
x **= 3
x %= 7
print(x)
# case: arith-complex-expr
print((3 + 4) * 2 - 10 / 4 + 7 % 3 ** 2)
# case: arith-unary
print(-(-5), +3, not 0, not 1)
# case: arith-float-int-eq-hash
print({1: 'a', 1.0: 'b', True: 'c'})
# case: arith-int-str-mul
print("ab" * 3, 3 * [0], [1, 2] * 0)
# case: arith-bool-str-mul
print("x" * True, "y" * False)
# case: arith-int-plus-str
1 + "a"
# case: arith-nan
x = float("nan")
print(x == x, x != x)
# case: arith-inf-math
print(float("inf") > 10 ** 100, -float("inf") < 0)
# case: arith-int-float-compare-big
print(2 ** 53 + 1 == float(2 ** 53 + 1), 10 ** 20 < 1e21)
# case: arith-interest
balance = 1000.0
for year in range(5):
    balance *= 1.05
round(balance, 2)
# case: arith-mean
nums = [3, 7, 1, 9, 4]
sum(nums) / len(nums)
# case: arith-int-float-value
7 / 7
# case: arith-truediv-big-int
(10 ** 20) / 4
# case: arith-float-floor-neg-zero
print(-0.0, 0.0 * -1, abs(-0.0))
# case: arith-int-underscore
print(1_000_000 + 0x_ff)
# case: arith-pow-float-neg
(-8) ** (1/3)
# case: arith-bool-index
["no", "yes"][True]
# case: arith-bool-int-type
print(type(True + 1).__name__, isinstance(True, int))
# case: arith-bool-in-range
list(range(True, 4))
# case: arith-float-mixed-sum-bool
sum([1.5, True, 2])
