import { ProcessAdapter } from '../../adapters/process'
import { DATA_PACKAGE_NAMES } from '../../src/core'
import { createExecgate, type Execgate } from '../../src'

const INSTALL =
  'bash scripts/setup/data-python.sh (Debian: apt-get install python3-numpy python3-pandas ' +
  'python3-scipy python3-matplotlib python3-sklearn python3-openpyxl)'
const env = (enabled: string) => ({
  EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR,
  EXECGATE_LOG_LEVEL: 'silent',
  EXECGATE_EXECUTION_ENABLED: enabled,
})
const SUM = "import pandas as pd\npd.DataFrame({'a': [1, 2, 3]}).a.sum()"

describe('the data Python: packages as a capability, routing by what the code imports', () => {
  test('the process adapter declares every data package the setup script installs', async () => {
    const adapter = new ProcessAdapter()
    try {
      const missing = DATA_PACKAGE_NAMES.filter((name) => !adapter.capabilities.packages?.includes(name))
      if (missing.length > 0) throw new Error(`the data Python lacks ${missing.join(', ')}: run ${INSTALL}`)
    } finally {
      await adapter.dispose()
    }
  })

  describe('with the process tier enabled', () => {
    let execgate: Execgate
    beforeAll(async () => {
      execgate = await createExecgate({ env: env('placeholder,quickjs,monty,pyodide,process') })
    })
    afterAll(() => execgate.dispose())

    test('pandas code under the shipped data profile goes to the cheapest tier that has pandas, decided before the run', async () => {
      const result = await execgate.execute({ language: 'python', code: SUM }, { profile: 'data' })
      expect(result).toMatchObject({ status: 'ok', adapter: 'process', value: 6 })
      expect(result.route?.reason).toContain('pandas')
    })

    test('the defaults stay tight: a refused import names every refused module, the profile and the adapter that allow it', async () => {
      const result = await execgate.execute({
        language: 'python',
        code: 'import pandas as pd\nimport math\nimport numpy as np\npd.Series([1]).sum()',
      })
      expect(result.status).toBe('policy_violation')
      expect(result.message).toContain('pandas (line 1), numpy (line 3)')
      expect(result.message).toContain('the policy profile "data" allows them')
      expect(result.message).toContain('adapters with pandas, numpy: process')
    })

    test('code with no data package still goes to the in-process tier', async () => {
      const result = await execgate.execute({ language: 'python', code: 'sum([1, 2, 3])' }, { profile: 'data' })
      expect(result).toMatchObject({ status: 'ok', adapter: 'monty', value: 6 })
    })

    test('numpy, scipy, scikit-learn, matplotlib and openpyxl import and work on the process tier', async () => {
      const code = [
        'import numpy as np, scipy.stats, openpyxl',
        'from sklearn.linear_model import LinearRegression',
        'import matplotlib.pyplot as plt',
        'x = np.arange(10).reshape(-1, 1); y = 3 * x.ravel() + 2',
        'model = LinearRegression().fit(x, y)',
        'fig = plt.figure(); plt.plot(x.ravel(), y)',
        'r = scipy.stats.pearsonr(x.ravel(), y)[0]',
        '[round(float(model.coef_[0]), 6), round(float(model.intercept_), 6), round(float(r), 6), openpyxl.Workbook().active.title]',
      ].join('\n')
      const result = await execgate.execute({ language: 'python', code }, { profile: 'data' })
      expect(result.stderr).toBe('')
      expect(result).toMatchObject({ status: 'ok', adapter: 'process', value: [3, 2, 1, 'Sheet'] })
    })
  })

  test('where no enabled adapter has the package, the answer names it and what would provide it', async () => {
    const execgate = await createExecgate({ env: env('placeholder,quickjs,monty') })
    try {
      const result = await execgate.execute({ language: 'python', code: SUM }, { profile: 'data' })
      expect(result.status).toBe('unavailable')
      expect(result.message).toContain('python3-pandas')
      expect(result.message).toContain('scripts/setup/data-python.sh')
      expect(result.message).not.toMatch(/ModuleNotFoundError/)
    } finally {
      await execgate.dispose()
    }
  })
})
