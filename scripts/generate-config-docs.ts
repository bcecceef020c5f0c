import fs from 'node:fs'
import path from 'node:path'
import { configurationMarkdown } from '../src/config/describe-config'

fs.writeFileSync(path.join(__dirname, '..', 'docs', 'configuration.md'), configurationMarkdown())
