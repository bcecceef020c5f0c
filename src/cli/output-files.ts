import fs from 'node:fs'
import path from 'node:path'
import { outputFile, type Output } from '../core'

/**
 * `execgate run … --out DIR`: each rich output as a file (src/core/output-file.ts), numbered in the order the code
 * made it: `output-1.png`, `output-2.csv`, … Existing files of the same name are replaced.
 */
export function writeOutputFiles(directory: string, outputs: readonly Output[]): string[] {
  fs.mkdirSync(directory, { recursive: true })
  return outputs.map((output, index) => {
    const file = outputFile(output, index)
    const target = path.join(directory, file.name)
    fs.writeFileSync(target, Buffer.from(file.content, file.encoding))
    return target
  })
}
