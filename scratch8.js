const Docker = require('dockerode')
const docker = new Docker({ socketPath: '/run/execgate-podman/podman.sock' })
async function main() {
  const t0 = Date.now()
  const c = await docker.createContainer({
    Image: 'execgate-sandbox:bookworm', Cmd: ['python3', '-c', 'import os,sys; print("hi", os.getuid(), os.environ.get("X")); print("err", file=sys.stderr); print(open("/proc/self/status").read().split("CapEff:")[1][:20])'],
    Env: ['X=1'], User: '65534:65534', WorkingDir: '/workspace', NetworkDisabled: true, Tty: false, AttachStdout: true, AttachStderr: true,
    HostConfig: { NetworkMode: 'none', Memory: 64 << 20, MemorySwap: 64 << 20, PidsLimit: 32, ReadonlyRootfs: true, Tmpfs: { '/workspace': 'rw,size=64m,mode=1777', '/tmp': 'rw,size=16m,mode=1777' }, CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'], Ulimits: [{ Name: 'nofile', Soft: 256, Hard: 256 }, { Name: 'nproc', Soft: 64, Hard: 64 }] },
  })
  const t1 = Date.now()
  const stream = await c.attach({ stream: true, stdout: true, stderr: true, hijack: true })
  let out = '', err = ''
  const { PassThrough } = require('stream'); const o = new PassThrough(), e = new PassThrough()
  o.on('data', d => out += d); e.on('data', d => err += d)
  c.modem.demuxStream(stream, o, e)
  const t2 = Date.now()
  await c.start()
  const t3 = Date.now()
  const res = await c.wait()
  const t4 = Date.now()
  await new Promise(r => setTimeout(r, 50))
  await c.remove({ force: true })
  console.log({ res, out, err, create: t1 - t0, attach: t2 - t1, start: t3 - t2, wait: t4 - t3, remove: Date.now() - t4 })
}
main().catch(e => console.error('ERR', e.message, e.json))
