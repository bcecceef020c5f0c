// Allocates without bound: execgate stops it at the policy's memory limit and answers `memory_limit`.
const keep = []
while (true) keep.push(new Uint8Array(1 << 20))
