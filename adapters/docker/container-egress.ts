import {
  EGRESS_PATHS,
  EGRESS_PROXY_URL,
  PROXY_VARIABLES,
  START_FORWARDER,
  TRUST_VARIABLES,
  type EgressBridgeFiles,
} from '../shared/egress-bridge'

/** What a container needs for its way out through the egress gateway (docs/network.md). */
export interface ContainerEgress {
  /** Host paths bound in read-only: the run's proxy socket (connectable on a read-only mount), the forwarder, the preload. */
  binds: string[]
  env: string[]
  /** The launcher's line that starts the forwarder on the container's 127.0.0.1:3128 before the program. */
  startLine: string
}

/**
 * The container keeps `NetworkMode: none` (only loopback); the run's proxy socket is its one path out, reached
 * through the same forwarder as the process tier's. The image's Node (18) is too old for the undici package, so its
 * fetch is steered through Node's own undici (NODE_CORE_PRELOAD in adapters/shared/egress-bridge.ts).
 */
export function containerEgress(
  files: EgressBridgeFiles,
  endpoint: { socketPath: string; caBundlePath?: string },
  language: 'python' | 'javascript',
): ContainerEgress {
  const { socketPath, caBundlePath } = endpoint
  return {
    binds: [
      // With secrets the gateway may re-terminate TLS: the container trusts its CA (and the system's).
      ...(caBundlePath ? [`${caBundlePath}:${EGRESS_PATHS.caBundle}:ro`] : []),
      `${socketPath}:${EGRESS_PATHS.socket}:ro`,
      `${files.forwarder}:${EGRESS_PATHS.forwarder}:ro`,
      ...(language === 'javascript' ? [`${files.nodeCorePreload}:${EGRESS_PATHS.nodePreload}:ro`] : []),
    ],
    env: containerEgressEnvironment({ trustBundle: !!caBundlePath, nodePreload: language === 'javascript' }),
    startLine: START_FORWARDER,
  }
}

/**
 * The variables a container's program needs to go out through the forwarder (the launcher's START_FORWARDER reads
 * EXECGATE_EGRESS_FORWARDER): the proxy, the trust bundle when the gateway may re-terminate TLS, Node's preload.
 */
export function containerEgressEnvironment(options: { trustBundle: boolean; nodePreload: boolean }): string[] {
  return [
    'EXECGATE_EGRESS_FORWARDER=/usr/bin/python3',
    ...PROXY_VARIABLES.map((name) => `${name}=${EGRESS_PROXY_URL}`),
    'NO_PROXY=',
    ...(options.trustBundle ? TRUST_VARIABLES.map((name) => `${name}=${EGRESS_PATHS.caBundle}`) : []),
    ...(options.nodePreload ? [`NODE_OPTIONS=--require=${EGRESS_PATHS.nodePreload}`] : []),
  ]
}
