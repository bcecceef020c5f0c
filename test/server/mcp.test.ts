import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'

const KEY = 'acme-key-0123456789abcdef'

async function exercise(client: Client): Promise<void> {
  // The version is package.json's, not one written again in the server.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- package.json read where it is compared
  expect(client.getServerVersion()).toMatchObject({ name: 'execgate', version: require('../../package.json').version })
  const tools = await client.listTools()
  expect(tools.tools.map((tool) => tool.name).sort()).toEqual([
    'execute_code',
    'get_plan',
    'get_receipt',
    'get_task',
    'list_languages',
    'sandbox_exec',
    'sandbox_snapshot',
    'sandbox_start',
    'sandbox_stop',
    'submit_plan',
    'submit_task',
    'validate_code',
  ])
  const execute = tools.tools.find((tool) => tool.name === 'execute_code')!
  expect(execute.inputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['language', 'code']) })

  const ran = await client.callTool({ name: 'execute_code', arguments: { language: 'javascript', code: "console.log('hi'); 6 * 7" } })
  expect(ran.isError).toBe(false)
  expect(ran.structuredContent).toMatchObject({ status: 'ok', value: 42, stdout: 'hi\n', admission: { lane: 'interactive' } })
  expect((ran.content as Array<{ text: string }>)[0]!.text).toMatch(/^ok on quickjs in \d+ ms\. value: 42 stdout: hi$/)

  const failed = await client.callTool({ name: 'execute_code', arguments: { language: 'python', code: "raise ValueError('boom')" } })
  expect(failed.isError).toBe(true)
  expect(failed.structuredContent).toMatchObject({ status: 'error', error: { type: 'ValueError' } })

  const checked = await client.callTool({ name: 'validate_code', arguments: { language: 'javascript', code: "require('child_process')" } })
  expect(checked.structuredContent).toMatchObject({ valid: false })

  const languages = await client.callTool({ name: 'list_languages', arguments: {} })
  expect(languages.structuredContent).toEqual({ languages: ['javascript', 'typescript', 'python'] })

  // A bad argument is the protocol's error, naming the field.
  const bad = await client.callTool({ name: 'execute_code', arguments: { language: 'cobol', code: 'x' } })
  expect(bad.isError).toBe(true)
  expect(JSON.stringify(bad.content)).toMatch(/language/)
}

describe('MCP server, exercised by the SDK client', () => {
  test('over stdio (the built CLI: execgate mcp)', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(__dirname, '../../bin/execgate.js'), 'mcp'],
      env: {
        PATH: process.env.PATH ?? '',
        EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR!,
        EXECGATE_EXECUTION_ENABLED: 'quickjs,monty',
        EXECGATE_READINESS_ENABLED: 'false',
        EXECGATE_LOG_LEVEL: 'silent',
      },
      stderr: 'pipe',
    })
    const client = new Client({ name: 'execgate-test', version: '1.0.0' })
    await client.connect(transport)
    try {
      await exercise(client)
    } finally {
      await client.close()
    }
  }, 60_000)

  describe('over streamable HTTP at /mcp, behind the API keys', () => {
    let execgate: Execgate
    let server: RunningServer
    beforeAll(async () => {
      execgate = await createExecgate({
        overrides: {
          execution: { enabled: ['quickjs', 'monty'] },
          readiness: { enabled: false },
          log: { level: 'silent' },
          server: { apiKeys: [`acme=${KEY}`] },
        },
      })
      server = await serve(execgate, { port: 0 }, false)
    }, 60_000)
    afterAll(() => server.shutdown())

    test('with a key, every tool works', async () => {
      const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${KEY}` } },
      })
      const client = new Client({ name: 'execgate-test', version: '1.0.0' })
      await client.connect(transport)
      try {
        await exercise(client)
      } finally {
        await client.close()
      }
    }, 60_000)

    test('without a key the client cannot connect', async () => {
      const client = new Client({ name: 'execgate-test', version: '1.0.0' })
      await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))).rejects.toThrow(
        /401|EXECGATE_UNAUTHORIZED|API key/,
      )
    }, 30_000)
  })
})
