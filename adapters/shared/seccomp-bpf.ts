/**
 * A classic-BPF assembler for seccomp filters: just the instructions a syscall filter needs (load a word of
 * `struct seccomp_data`, compare, test bits, return), with named jump targets resolved to the 8-bit forward offsets
 * the kernel wants. Encoded as `struct sock_filter` (u16 code, u8 jt, u8 jf, u32 k), little-endian: x86_64 and
 * aarch64, the only architectures the filter is built for, are both little-endian.
 */

// linux/bpf_common.h
const BPF_LD = 0x00
const BPF_JMP = 0x05
const BPF_RET = 0x06
const BPF_W = 0x00
const BPF_ABS = 0x20
const BPF_JA = 0x00
const BPF_JEQ = 0x10
const BPF_JGE = 0x30
const BPF_JSET = 0x40
const BPF_K = 0x00

/** Offsets in `struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }`. */
export const SECCOMP_DATA = {
  nr: 0,
  arch: 4,
  /** The low 32 bits of argument `index` (little-endian). */
  argLow: (index: number) => 16 + 8 * index,
} as const

// linux/seccomp.h
export const SECCOMP_RET_KILL_PROCESS = 0x80000000
export const SECCOMP_RET_ERRNO = 0x00050000
export const SECCOMP_RET_ALLOW = 0x7fff0000

export type Target = string | 'next'

type Instruction =
  | { op: 'load'; offset: number; label?: string }
  | { op: 'jeq' | 'jge' | 'jset'; k: number; then: Target; otherwise: Target; label?: string }
  | { op: 'jump'; to: string; label?: string }
  | { op: 'ret'; k: number; label?: string }

/** Builds a program top to bottom; every jump goes forward to a label or to the next instruction. */
export class BpfProgram {
  private readonly instructions: Instruction[] = []

  load(offset: number, label?: string): this {
    this.instructions.push({ op: 'load', offset, ...(label ? { label } : {}) })
    return this
  }

  /** `if (A == k) goto then else goto otherwise`; likewise `jge` (A >= k, unsigned) and `jset` (A & k != 0). */
  branch(op: 'jeq' | 'jge' | 'jset', k: number, then: Target, otherwise: Target = 'next', label?: string): this {
    this.instructions.push({ op, k: k >>> 0, then, otherwise, ...(label ? { label } : {}) })
    return this
  }

  jump(to: string, label?: string): this {
    this.instructions.push({ op: 'jump', to, ...(label ? { label } : {}) })
    return this
  }

  ret(k: number, label?: string): this {
    this.instructions.push({ op: 'ret', k: k >>> 0, ...(label ? { label } : {}) })
    return this
  }

  get length(): number {
    return this.instructions.length
  }

  /** The program as the kernel reads it (an array of `struct sock_filter`, 8 bytes each). */
  encode(): Buffer {
    const labels = new Map<string, number>()
    this.instructions.forEach((instruction, index) => {
      if (!instruction.label) return
      if (labels.has(instruction.label)) throw new Error(`seccomp program: label ${instruction.label} is defined twice`)
      labels.set(instruction.label, index)
    })
    const offset = (from: number, target: Target, limit: number): number => {
      if (target === 'next') return 0
      const at = labels.get(target)
      if (at === undefined) throw new Error(`seccomp program: no label ${target}`)
      const distance = at - from - 1
      if (distance < 0 || distance > limit)
        throw new Error(`seccomp program: jump from ${from} to ${target} is ${distance} instructions (0..${limit} allowed)`)
      return distance
    }
    const out = Buffer.alloc(this.instructions.length * 8)
    this.instructions.forEach((instruction, index) => {
      let code: number
      let jt = 0
      let jf = 0
      let k: number
      switch (instruction.op) {
        case 'load':
          code = BPF_LD | BPF_W | BPF_ABS
          k = instruction.offset
          break
        case 'jump':
          code = BPF_JMP | BPF_JA
          k = offset(index, instruction.to, 0xffffffff)
          break
        case 'ret':
          code = BPF_RET | BPF_K
          k = instruction.k
          break
        default:
          code = BPF_JMP | { jeq: BPF_JEQ, jge: BPF_JGE, jset: BPF_JSET }[instruction.op] | BPF_K
          jt = offset(index, instruction.then, 0xff)
          jf = offset(index, instruction.otherwise, 0xff)
          k = instruction.k
      }
      out.writeUInt16LE(code, index * 8)
      out.writeUInt8(jt, index * 8 + 2)
      out.writeUInt8(jf, index * 8 + 3)
      out.writeUInt32LE(k >>> 0, index * 8 + 4)
    })
    return out
  }
}
