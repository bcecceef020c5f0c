/**
 * The warm data interpreter's program (Python), run by bubblewrap as docs/data.md describes: it imports the data
 * stack once, then forks one child per run. Each child is made a sandbox as strong as a cold process-tier run before
 * the code is read:
 *
 *   zygote (bwrap: own pid/net/ipc/uts/mount namespaces, read-only /usr, no host files, empty environment)
 *     └ C: setsid; as root, the run's own host uid (setresuid drops every capability); then a fresh user, mount, pid,
 *          net, ipc and uts namespace; tmpfs /workspace and /tmp of its own, the run's files copied in from its
 *          per-run folder, /runs and /proc covered, so no other run's folder or process is visible
 *       └ G: pid 1 of the run's pid namespace (when it exits the kernel ends everything left in it, threads and
 * daemons included); rlimits set, every capability and the bounding set dropped, no_new_privs, the cold runs' seccomp
 * filter, then the
 *            shared runner (adapters/shared/interpreter-runners.ts) runs the code with the policy's import guard.
 *
 * Nothing a run does reaches another: a monkeypatched pandas or a thread left running lives in G's copy of memory,
 * which ends with G. The host talks to the zygote over stdin (one JSON request a line: prepare, go or kill) and reads
 * JSON lines on fd 3 (ready, output chunks, closed, exits).
 *
 * Pre-forked: \`prepare\` makes C and G for a run before its code is known (its id, folder and uid are chosen then),
 * and G waits on a pipe of its own; \`go\` hands G the run's request (limits, imports, seccomp) through that pipe, and
 * G reads its code and files from its folder, applies the limits and runs. The forks, namespaces and mounts are thus
 * paid while the host is idle, not while a caller waits. G starts from the zygote's memory whether it waited or not.
 * G closes its streams when the runner is done: the host learns that (\`closed\`) before the kernel has torn G and C
 * down, and the exit follows.
 */
export function zygoteSource(runner: string): string {
  return String.raw`
import os, sys, json, base64, selectors, signal, ctypes, resource, tarfile, builtins
PROTO = 3
os.dup2(os.open('/dev/null', os.O_RDWR), 1)  # a stray print of a library never corrupts the protocol
preloaded = []
for name in ('numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot', 'scipy', 'scipy.stats', 'sklearn', 'sklearn.linear_model', 'openpyxl'):
    try:
        __import__(name)
        preloaded.append(name)
    except Exception as error:
        sys.stderr.write('execgate warm python: %s did not import: %r\n' % (name, error))
if 'matplotlib' in preloaded:
    import matplotlib
    matplotlib.use('Agg')
RUNNER = compile(${JSON.stringify(runner)}, '<execgate-runner>', 'exec')
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
NEW_NAMESPACES = 0x10000000 | 0x00020000 | 0x20000000 | 0x40000000 | 0x08000000 | 0x04000000  # user mnt pid net ipc uts
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_RDONLY, MS_REC, MS_PRIVATE, MS_BIND, MS_REMOUNT = 2, 4, 8, 1, 0x4000, 1 << 18, 0x1000, 0x20
MNT_DETACH = 2
UPLOADS = '/tmp/.execgate-uploads'
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38

def check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, '%s: %s' % (what, os.strerror(errno)))

def mount(source, target, fstype, flags, data):
    check(libc.mount(source, target, fstype, flags, data), 'mount %s' % target.decode())

def drop_capabilities():
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    check(libc.capset(header, data), 'capset')
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 'no_new_privs')

class SockFprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]

def install_seccomp(program):
    # The cold runs' filter (adapters/shared/seccomp-filter.ts), after no_new_privs: the same system calls refused.
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    check(libc.prctl(22, 2, ctypes.addressof(fprog), 0, 0), 'seccomp')  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER

def unpack(archive, into):
    # The host's own tar of the request's files: regular files and folders only, paths kept inside the workspace.
    with tarfile.open(fileobj=archive) as tar:
        for member in tar:
            name = os.path.normpath(member.name)
            if name.startswith(('/', '..')) or not (member.isfile() or member.isdir()):
                continue
            target = os.path.join(into, name)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with tar.extractfile(member) as source, open(target, 'wb') as sink:
                while True:
                    chunk = source.read(1 << 20)
                    if not chunk:
                        break
                    sink.write(chunk)

def bind_upload(source, relative):
    # An upload by digest, bound (not copied) over an empty file of the workspace. The bind is a clone of the /runs
    # mount, which bwrap made read-only; remounted read-only again if not, and the run refused if it still is not.
    name = os.path.normpath(relative)
    if name.startswith(('/', '..')):
        raise OSError('upload path outside the workspace: %s' % relative)
    target = os.path.join('/workspace', name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    open(target, 'wb').close()
    mount(source.encode(), target.encode(), None, MS_BIND, None)
    if not os.statvfs(target).f_flag & os.ST_RDONLY:
        mount(None, target.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    if not os.statvfs(target).f_flag & os.ST_RDONLY:
        raise OSError('upload %s is not read-only' % relative)

def set_limits(limits):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_DATA, (limits['dataBytes'], limits['dataBytes']))
    resource.setrlimit(resource.RLIMIT_CPU, (limits['cpuSeconds'], limits['cpuSeconds'] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits['fileBytes'], limits['fileBytes']))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits['openFiles'], limits['openFiles']))
    if limits.get('processes') is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits['processes'], limits['processes']))

def run_child(request, ends, control):
    """C, then G (which waits for its go on \`control\`): never returns."""
    os.setsid()
    uid = request.get('uid')
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # setresuid cleared it; /proc/self/uid_map needs it
    outer_uid, outer_gid = os.getuid(), os.getgid()
    check(libc.unshare(NEW_NAMESPACES), 'unshare')
    with open('/proc/self/setgroups', 'w') as f:
        f.write('deny')
    with open('/proc/self/uid_map', 'w') as f:
        f.write('%d %d 1' % (outer_uid, outer_uid))
    with open('/proc/self/gid_map', 'w') as f:
        f.write('%d %d 1' % (outer_gid, outer_gid))
    mount(None, b'/', None, MS_REC | MS_PRIVATE, None)
    mount(b'tmpfs', b'/workspace', b'tmpfs', MS_NOSUID | MS_NODEV, ('size=%dm,mode=0755' % request['workspaceMb']).encode())
    mount(b'tmpfs', b'/tmp', b'tmpfs', MS_NOSUID | MS_NODEV, b'size=16m,mode=1777')
    # The run's own folder stays reachable through this descriptor only (the host writes its code there at go); G
    # closes it before the code runs. Uploads are bound now, while /runs is still in sight.
    folder = os.open('/runs/' + request['prepare'], os.O_RDONLY | os.O_DIRECTORY)
    for upload in request.get('mounts', []):
        bind_upload('/runs/' + request['prepare'] + '/' + upload['file'], upload['path'])
    # The folder's up/ stays in sight at UPLOADS until G's go: the uploads of a run that takes this spare are linked
    # there by the host then, G binds them, and unmounts UPLOADS before the code runs.
    os.mkdir(UPLOADS, 0o700)
    mount(('/runs/' + request['prepare'] + '/up').encode(), UPLOADS.encode(), None, MS_BIND, None)
    # Other runs' folders and processes: out of sight.
    mount(b'tmpfs', b'/runs', b'tmpfs', MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, b'size=4k')
    mount(b'tmpfs', b'/proc', b'tmpfs', MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, b'size=4k')
    libc.sethostname(b'sandbox', 7)
    pid = os.fork()
    if pid == 0:
        run_code(folder, control, ends)
    for fd in ends.values():
        os.close(fd)
    os.close(folder)
    os.close(control)
    _, status = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))

def read_go(control):
    data = b''
    while True:
        chunk = os.read(control, 1 << 16)
        if not chunk:
            break
        data += chunk
    if not data:
        os._exit(0)  # the spare was dropped: nothing ran
    return json.loads(data)

def in_folder(folder, name):
    try:
        return os.open(name, os.O_RDONLY, dir_fd=folder)
    except FileNotFoundError:
        return None

def run_code(folder, control, ends):
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    request = read_go(control)
    for upload in request.get('mounts', []):
        bind_upload(UPLOADS + '/' + upload['file'], upload['path'])
    check(libc.umount2(UPLOADS.encode(), MNT_DETACH), 'umount %s' % UPLOADS)
    os.rmdir(UPLOADS)
    with os.fdopen(in_folder(folder, 'code'), encoding='utf-8') as f:
        code = f.read()
    archive = in_folder(folder, 'in.tar')
    if archive is not None:
        with os.fdopen(archive, 'rb') as f:
            unpack(f, '/workspace')
    stdin = in_folder(folder, 'stdin')
    if stdin is None:
        stdin = os.open('/dev/null', os.O_RDONLY)
    os.dup2(stdin, 0)
    os.dup2(ends['o'], 1)
    os.dup2(ends['e'], 2)
    os.dup2(ends['r'], 5)
    os.closerange(3, 5)
    os.closerange(6, 1 << 16)
    set_limits(request['limits'])
    drop_capabilities()
    if request.get('seccomp'):
        install_seccomp(base64.b64decode(request['seccomp']))
    os.chdir('/workspace')
    os.environ.clear()
    os.environ.update({
        'PATH': '/usr/bin:/bin', 'HOME': '/workspace', 'TMPDIR': '/tmp', 'LANG': 'C.UTF-8', 'MPLBACKEND': 'Agg',
        'MPLCONFIGDIR': '/tmp/matplotlib',
    })
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sys.argv = ['execgate', 'run', ','.join(request['allowedImports']), request.get('outputs', '')]
    try:
        exec(RUNNER, {'__name__': '__execgate_runner__', '__builtins__': builtins, '_CODE': code})
        sys.stdout.flush()
        sys.stderr.flush()
        # Closed before the exit, so the host hears the run is over without waiting for the kernel to tear G down.
        for fd in (1, 2, 5):
            try:
                os.close(fd)
            except OSError:
                pass
    finally:
        os._exit(0)

def send(doc):
    data = (json.dumps(doc) + '\n').encode()
    while data:
        data = data[os.write(PROTO, data):]

runs = {}
fd_owner = {}
selector = selectors.DefaultSelector()

def finish_if_done(run_id):
    run = runs.get(run_id)
    if not run or run['fds']:
        return
    if run['status'] is not None:
        send({'id': run_id, 'exit': run['status']})
        del runs[run_id]
    elif not run['closed']:
        run['closed'] = True
        send({'id': run_id, 'closed': True})

def prepare(request):
    ends, reads = {}, {}
    for stream in ('o', 'e', 'r'):
        read_end, write_end = os.pipe()
        ends[stream], reads[stream] = write_end, read_end
    control_read, control_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            selector.close()
            for fd in reads.values():
                os.close(fd)
            os.close(control_write)
            # Other spares' go pipes: never held by this run's processes.
            for other in runs.values():
                if other['control'] is not None:
                    os.close(other['control'])
            run_child(request, ends, control_read)
        except BaseException as error:
            os.write(ends['e'], ('[execgate] [process] the warm sandbox could not be set up: %r\n' % (error,)).encode())
        os._exit(125)
    os.close(control_read)
    runs[request['prepare']] = {'pid': pid, 'status': None, 'fds': set(reads.values()), 'control': control_write, 'closed': False}
    for stream, fd in reads.items():
        os.close(ends[stream])
        os.set_blocking(fd, False)
        fd_owner[fd] = (request['prepare'], stream)
        selector.register(fd, selectors.EVENT_READ)

def go(request):
    run = runs.get(request['go'])
    if not run or run['control'] is None:
        send({'id': request['go'], 'exit': 125})
        return
    control, run['control'] = run['control'], None
    data = json.dumps(request).encode()
    try:
        while data:
            data = data[os.write(control, data):]
    except OSError:
        pass  # G is gone; its exit says so
    os.close(control)

def kill(run_id):
    run = runs.get(run_id)
    if run and run['status'] is None:
        for target in (lambda: os.killpg(run['pid'], signal.SIGKILL), lambda: os.kill(run['pid'], signal.SIGKILL)):
            try:
                target()
            except OSError:
                pass

def reap():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        for run_id, run in list(runs.items()):
            if run['pid'] == pid:
                run['status'] = os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
                finish_if_done(run_id)

wake_read, wake_write = os.pipe()
os.set_blocking(wake_read, False)
os.set_blocking(wake_write, False)
signal.set_wakeup_fd(wake_write)
signal.signal(signal.SIGCHLD, lambda *_: None)
selector.register(0, selectors.EVENT_READ)
selector.register(wake_read, selectors.EVENT_READ)
status = open('/proc/self/status').read()
data_kib = int([line.split()[1] for line in status.splitlines() if line.startswith('VmData:')][0])
send({'ready': True, 'preloaded': preloaded, 'dataKiB': data_kib})
pending = b''
while True:
    for key, _ in selector.select():
        fd = key.fd
        if fd == 0:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                for run_id in list(runs):
                    kill(run_id)
                os._exit(0)
            pending += chunk
            while b'\n' in pending:
                line, pending = pending.split(b'\n', 1)
                message = json.loads(line)
                if 'kill' in message:
                    kill(message['kill'])
                elif 'go' in message:
                    go(message)
                else:
                    prepare(message)
        elif fd == wake_read:
            try:
                os.read(wake_read, 4096)
            except BlockingIOError:
                pass
            reap()
        else:
            run_id, stream = fd_owner[fd]
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if chunk:
                send({'id': run_id, 's': stream, 'd': base64.b64encode(chunk).decode()})
                continue
            selector.unregister(fd)
            os.close(fd)
            del fd_owner[fd]
            runs[run_id]['fds'].discard(fd)
            finish_if_done(run_id)
`
}
