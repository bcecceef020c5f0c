import { PlaceholderAdapter } from '../../adapters/placeholder'
import { describeAdapterContract, contractContext } from '../contract/adapter-contract'

describeAdapterContract('placeholder', () => new PlaceholderAdapter())

describe('placeholder adapter', () => {
  test('answers not_implemented with the fallback action for every language', async () => {
    const adapter = new PlaceholderAdapter({ message: 'Code execution coming soon' })
    for (const language of adapter.supportedLanguages()) {
      const result = await adapter.execute({ language, code: 'anything' }, contractContext())
      expect(result.status).toBe('not_implemented')
      expect(result.fallbackAction).toBe('describe_computation_only')
      expect(result.message).toContain('Code execution coming soon')
    }
  })

  test('says validation is not implemented', async () => {
    const report = await new PlaceholderAdapter().validate('x', 'python')
    expect(report.implemented).toBe(false)
    expect(report.issues[0]?.message).toMatch(/not implemented/)
  })
})
