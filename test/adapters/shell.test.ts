import { ShellAdapter } from '../../adapters/shell'
import { describeAdapterContract, contractContext, runChecked } from '../contract/adapter-contract'

describeAdapterContract('shell', () => new ShellAdapter())
