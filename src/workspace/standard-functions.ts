import { ExecgateError } from '../core/errors'
import type { LlmProvider } from '../core/llm'
import { globMatcher } from './glob'
import type { HostFunctionDefinition } from './host-functions'
import { normalizeWorkspacePath } from './paths'

const MAX_MATCHES = 1000
const MAX_MATCH_TEXT = 500
const MAX_PROMPT = 20_000

const path = { type: 'string', minLength: 1, maxLength: 1024 }
const glob = { type: 'string', maxLength: 256 }

/**
 * The argument schemas, made once: the definitions are built per run, and a validator found by its schema object
 * (host-functions.ts) costs no serialising of the schema to find the one compiled for an equal schema.
 */
const PARAMETERS = {
  read_file: { type: 'array', items: [path], minItems: 1, maxItems: 1 },
  write_file: { type: 'array', items: [path, { type: 'string' }], minItems: 2, maxItems: 2 },
  list_files: { type: 'array', items: [glob], maxItems: 1 },
  search_content: { type: 'array', items: [{ type: 'string', minLength: 1, maxLength: 1000 }, glob], minItems: 1, maxItems: 2 },
  ask_llm: { type: 'array', items: [{ type: 'string', minLength: 1, maxLength: MAX_PROMPT }], minItems: 1, maxItems: 1 },
  submit_result: { type: 'array', minItems: 1, maxItems: 1 },
}

/** The standard host functions: the workspace, a language model and the result. */
export function standardHostFunctions(options: { llm?: LlmProvider } = {}): HostFunctionDefinition[] {
  return [
    {
      name: 'read_file',
      description: 'read_file(path) -> str: a workspace file as UTF-8 text',
      parameters: PARAMETERS.read_file,
      access: 'read',
      async handler([file], call) {
        const normalised = normalizeWorkspacePath(file)
        const content = await call.workspace.read(normalised)
        if (!content) throw new ExecgateError('EXECGATE_WORKSPACE_NOT_FOUND', { path: normalised })
        return content.toString('utf8')
      },
    },
    {
      name: 'write_file',
      description: 'write_file(path, text) -> int: writes a workspace file (UTF-8), returns the bytes written',
      parameters: PARAMETERS.write_file,
      access: 'write',
      async handler([file, text], call) {
        const normalised = normalizeWorkspacePath(file)
        const content = Buffer.from(text as string, 'utf8')
        await call.workspace.write(normalised, content)
        call.wrote(normalised)
        return content.length
      },
    },
    {
      name: 'list_files',
      description: 'list_files(glob="**") -> list[str]: workspace paths matching a glob (*, **, ?, [abc], {a,b})',
      parameters: PARAMETERS.list_files,
      access: 'read',
      async handler([pattern], call) {
        const matches = globMatcher(pattern as string | undefined)
        return (await call.workspace.list())
          .map((entry) => entry.path)
          .filter(matches)
          .sort()
      },
    },
    {
      name: 'search_content',
      description:
        `search_content(text, glob="**") -> list[{path, line, text}]: lines containing the text ` + `(not a regex), at most ${MAX_MATCHES}`,
      parameters: PARAMETERS.search_content,
      access: 'read',
      async handler([needle, pattern], call) {
        // A literal search, not a RegExp: the pattern comes from sandboxed code, and a catastrophic regex run on
        // the host would stall every other run.
        const matches = globMatcher(pattern as string | undefined)
        const found: { path: string; line: number; text: string }[] = []
        for (const entry of (await call.workspace.list()).sort((a, b) => a.path.localeCompare(b.path))) {
          if (!matches(entry.path) || call.signal.aborted) continue
          const content = (await call.workspace.read(entry.path))?.toString('utf8') ?? ''
          if (!content.includes(needle as string)) continue
          const lines = content.split('\n')
          for (let index = 0; index < lines.length; index++) {
            if (!lines[index]!.includes(needle as string)) continue
            found.push({ path: entry.path, line: index + 1, text: lines[index]!.slice(0, MAX_MATCH_TEXT) })
            if (found.length >= MAX_MATCHES) return found
          }
        }
        return found
      },
    },
    {
      name: 'ask_llm',
      description: 'ask_llm(prompt) -> str: asks the configured language model; counts against the host-call time budget',
      parameters: PARAMETERS.ask_llm,
      async handler([prompt], call) {
        if (!options.llm)
          throw new ExecgateError('EXECGATE_HOST_CALL_FAILED', { name: 'ask_llm', detail: 'no language model is configured for this run' })
        return options.llm.complete({
          system: 'Answer briefly and plainly.',
          messages: [{ role: 'user', text: prompt as string }],
          maxTokens: 512,
          signal: call.signal,
        })
      },
    },
    {
      name: 'submit_result',
      description: 'submit_result(value) -> None: sets the result of the run (JSON values); the last call wins',
      parameters: PARAMETERS.submit_result,
      handler([value], call) {
        call.submit(value ?? null)
        return null
      },
    },
  ]
}

/** The standard functions' names, to tell without building them per run whether code may call any. */
export const STANDARD_HOST_FUNCTION_NAMES: readonly string[] = standardHostFunctions().map((definition) => definition.name)
