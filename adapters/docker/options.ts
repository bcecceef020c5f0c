import type Docker from 'dockerode'
import type { OptionSchema } from '../shared/option-schema'

/** The `adapters.docker` config section. */
export interface DockerOptions {
  /**
   * The Docker Engine API's unix socket (Docker, or podman's `podman system service`). Empty: `DOCKER_HOST`
   * (`unix://…`), else /var/run/docker.sock. */
  socketPath: string
  /** Image for Python; needs /usr/bin/python3. */
  pythonImage: string
  /** Image for JavaScript; needs /usr/bin/node. */
  nodeImage: string
  /** Image for persistent sandboxes (docs/sandboxes.md); needs /bin/sh, bash, find, and python3 and node for those languages. */
  sandboxImage: string
  /**
   * Data packages the Python image carries, by import name, comma-separated (routing sends code importing them here;
   * src/core/packages.ts). The image scripts/setup/podman.sh builds has the whole data stack; empty for an image without it.
   */
  pythonPackages: string
  /** The unprivileged user the code runs as, `uid:gid`. */
  user: string
  /** Size of the tmpfs workspace (the working directory), in MiB. */
  workspaceMb: number
  /**
   * How long a container may take from its create call to the code's first line (the engine's create and start,
   * then the interpreter's); past it the container is killed and the run is `unavailable`. It is not the code's time:
   * the policy's limit starts where this ends.
   */
  startupTimeoutMs: number
}

/** What `new DockerAdapter()` takes: any config option (the rest default) and, for tests, an engine client. */
export type DockerAdapterOptions = Partial<DockerOptions> & { client?: Docker }

export const DOCKER_OPTIONS_SCHEMA: OptionSchema<DockerOptions> = {
  socketPath: {
    doc: 'Docker Engine API socket (empty: DOCKER_HOST or /var/run/docker.sock)',
    format: String,
    default: '',
    env: 'EXECGATE_ADAPTERS_DOCKER_SOCKET_PATH',
  },
  pythonImage: {
    doc: 'Image for Python runs',
    format: String,
    default: 'execgate-sandbox:bookworm',
    env: 'EXECGATE_ADAPTERS_DOCKER_PYTHON_IMAGE',
  },
  nodeImage: {
    doc: 'Image for JavaScript runs',
    format: String,
    default: 'execgate-sandbox:bookworm',
    env: 'EXECGATE_ADAPTERS_DOCKER_NODE_IMAGE',
  },
  sandboxImage: {
    doc: 'Image for persistent sandboxes',
    format: String,
    default: 'execgate-sandbox:bookworm',
    env: 'EXECGATE_ADAPTERS_DOCKER_SANDBOX_IMAGE',
  },
  pythonPackages: {
    doc: 'Data packages the Python image carries (comma-separated import names; empty: none)',
    format: String,
    default: 'numpy,pandas,scipy,matplotlib,sklearn,openpyxl',
    env: 'EXECGATE_ADAPTERS_DOCKER_PYTHON_PACKAGES',
  },
  user: {
    doc: 'uid:gid the code runs as',
    format: (value: unknown) => {
      if (typeof value !== 'string' || !/^\d+:\d+$/.test(value) || value.startsWith('0:'))
        throw new Error('must be "uid:gid" with a uid other than 0')
    },
    default: '65534:65534',
    env: 'EXECGATE_ADAPTERS_DOCKER_USER',
  },
  workspaceMb: { doc: 'tmpfs workspace size (MiB)', format: 'positive-int', default: 64, env: 'EXECGATE_ADAPTERS_DOCKER_WORKSPACE_MB' },
  startupTimeoutMs: {
    doc: "ms from a container's create call to the code's first line before it is killed (unavailable)",
    format: 'positive-int',
    default: 20_000,
    env: 'EXECGATE_ADAPTERS_DOCKER_STARTUP_TIMEOUT_MS',
  },
}
