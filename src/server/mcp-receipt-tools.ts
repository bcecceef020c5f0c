import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { describeError } from '../core'
import type { TaskCaller } from '../fabric/tasks'
import type { Execgate } from '../index'

/**
 * MCP tool for signed receipts (docs/ledger.md#signed-receipts): `get_receipt` gives a run's (or a plan's) receipt,
 * the DSSE envelope `GET /v1/runs/:id/receipt` gives, with the public key it verifies with, so an agent can keep it and
 * anyone can check it offline (`execgate ledger verify-receipt FILE --key PUBKEY`). Only the caller's tenant's runs.
 */
export function registerReceiptTools(server: McpServer, execgate: Execgate, caller: TaskCaller): void {
  server.registerTool(
    'get_receipt',
    {
      title: "A run's or a plan's signed receipt",
      description:
        "The signed receipt of a run (its runId, from execute_code's result) or a plan: an " +
        "in-toto Statement (the run's code, adapter, policy, egress log, outputs by digest) in a " +
        "DSSE envelope signed with the server's Ed25519 key, and that public key. Verify offline " +
        'with `execgate ledger verify-receipt`.',
      inputSchema: {
        runId: z.string().min(1).optional().describe("the run's id (result.runId)"),
        planId: z.string().min(1).optional().describe("a plan's id: its receipt covers its steps' receipts"),
      },
    },
    async (input) => {
      if (!input.runId === !input.planId)
        return { content: [{ type: 'text' as const, text: 'give exactly one of runId or planId' }], isError: true }
      const ledgerCaller = caller.tenant ? { tenant: caller.tenant } : {}
      try {
        const envelope = input.runId
          ? await execgate.ledger.receipt(input.runId, ledgerCaller)
          : await execgate.ledger.planReceipt(input.planId!, ledgerCaller)
        const key = await execgate.ledger.publicKey()
        const what = input.runId ? `run ${input.runId}` : `plan ${input.planId}`
        return {
          content: [
            {
              type: 'text' as const,
              text: `signed receipt of ${what} (DSSE, ${envelope.payloadType}, key ${key.keyid}):\n${JSON.stringify(envelope)}`,
            },
          ],
          structuredContent: { envelope, publicKey: key } as unknown as Record<string, unknown>,
        }
      } catch (error) {
        return { content: [{ type: 'text' as const, text: describeError(error) }], isError: true }
      }
    },
  )
}
