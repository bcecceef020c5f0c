import { EGRESS_PATHS, EGRESS_PROXY_URL, PROXY_VARIABLES, TRUST_VARIABLES, type EgressBridgeFiles } from '../shared/egress-bridge'

export { START_FORWARDER, writeEgressBridgeFiles, type EgressBridgeFiles } from '../shared/egress-bridge'

/** bwrap arguments that give a run its way out through the gateway: the socket, the forwarder, the variables. */
export function egressBridgeArgs(
  files: EgressBridgeFiles,
  socketPath: string,
  python: string,
  language: string,
  caBundlePath?: string,
): string[] {
  // With secrets the gateway may re-terminate TLS: the sandbox trusts its CA (and the system's) through these.
  const trust = caBundlePath
    ? ['--ro-bind', caBundlePath, EGRESS_PATHS.caBundle, ...TRUST_VARIABLES.flatMap((name) => ['--setenv', name, EGRESS_PATHS.caBundle])]
    : []
  const proxyVariables = PROXY_VARIABLES.flatMap((name) => ['--setenv', name, EGRESS_PROXY_URL])
  const node =
    language === 'javascript' && files.undici
      ? [
          '--ro-bind',
          files.undici,
          EGRESS_PATHS.undici,
          '--ro-bind',
          files.nodePreload,
          EGRESS_PATHS.nodePreload,
          '--setenv',
          'NODE_OPTIONS',
          `--require=${EGRESS_PATHS.nodePreload}`,
        ]
      : []
  return [
    '--ro-bind',
    socketPath,
    EGRESS_PATHS.socket,
    '--ro-bind',
    files.forwarder,
    EGRESS_PATHS.forwarder,
    '--setenv',
    'EXECGATE_EGRESS_FORWARDER',
    python,
    ...proxyVariables,
    '--setenv',
    'NO_PROXY',
    '',
    ...node,
    ...trust,
  ]
}
