// The version lives in src/config (layer 2) so the artifact ledger, below the server, records it too.
export { EXECGATE_VERSION } from '../config/version'
