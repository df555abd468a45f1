/*
 * The probe program: Python run inside the sandbox through the real runner.
 * It only observes and reports (one JSON object on stdout); judging happens
 * on the host in eval.c, which treats this output as untrusted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"

/* The program header carries the expectations (printf format). */
#define PROBE_PY_HEAD \
"import errno, json, os, resource, signal, socket, stat, subprocess, sys, time\n" \
"NPROC = %lld\n" \
"MARKER = %s\n" \
"PROXY = %s\n"

/* The body, one literal per line (ISO C caps a single literal). */
static const char *const probe_py_body[] = {
	"r = {'errors': []}\n",
	"def obs(name, fn):\n",
	"    try:\n",
	"        r[name] = fn()\n",
	"    except Exception as e:\n",
	"        r[name] = None\n",
	"        r['errors'].append('%s: %s' % (name, e))\n",
	"def mounts():\n",
	"    return [l.split()[1:4] for l in open('/proc/mounts')]\n",
	"def status():\n",
	"    d = {'NoNewPrivs': None}\n",
	"    for l in open('/proc/self/status'):\n",
	"        k, _, v = l.partition(':')\n",
	"        if k in ('CapEff', 'CapPrm', 'CapBnd', 'CapInh', 'NoNewPrivs'):\n",
	"            d[k] = v.strip()\n",
	"    return d\n",
	"def tmp_write():\n",
	"    with open('/tmp/.cordon-probe', 'w') as f:\n",
	"        f.write('x')\n",
	"    return True\n",
	"def tmp_exec():\n",
	"    p = '/tmp/.cordon-probe.sh'\n",
	"    with open(p, 'w') as f:\n",
	"        f.write('#!/bin/sh\\nexit 0\\n')\n",
	"    os.chmod(p, 0o755)\n",
	"    try:\n",
	"        subprocess.run([p], check=False)\n",
	"        return 0\n",
	"    except OSError as e:\n",
	"        return e.errno\n",
	"def dmesg():\n",
	"    out = subprocess.run(['dmesg'], capture_output=True, timeout=10).stdout\n",
	"    return b'Starting gVisor' in out\n",
	"def rl(res):\n",
	"    return list(resource.getrlimit(res))\n",
	"def forks():\n",
	"    # Children exec a small sleep at once: forked Python copies would\n",
	"    # hit the memory limit long before the process limit under gVisor.\n",
	"    pids, err = [], 0\n",
	"    for _ in range(NPROC + 16):\n",
	"        try:\n",
	"            pid = os.fork()\n",
	"        except OSError as e:\n",
	"            err = e.errno\n",
	"            break\n",
	"        if pid == 0:\n",
	"            try:\n",
	"                os.execv('/bin/sleep', ['sleep', '60'])\n",
	"            finally:\n",
	"                os._exit(127)\n",
	"        pids.append(pid)\n",
	"    for p in pids:\n",
	"        os.kill(p, signal.SIGKILL)\n",
	"    for p in pids:\n",
	"        os.waitpid(p, 0)\n",
	"    return {'forked': len(pids), 'errno': err}\n",
	"def fsize():\n",
	"    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n",
	"    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]\n",
	"    if soft == resource.RLIM_INFINITY:\n",
	"        return 0\n",
	"    fd = os.open('/tmp/.cordon-probe-big', os.O_WRONLY | os.O_CREAT, 0o600)\n",
	"    try:\n",
	"        os.lseek(fd, soft, 0)\n",
	"        os.write(fd, b'x')\n",
	"        return 0\n",
	"    except OSError as e:\n",
	"        return e.errno\n",
	"    finally:\n",
	"        os.close(fd)\n",
	"        os.unlink('/tmp/.cordon-probe-big')\n",
	"def setid():\n",
	"    found, count = [], 0\n",
	"    for top, dirs, files in os.walk('/'):\n",
	"        if top == '/':\n",
	"            dirs[:] = [d for d in dirs if d not in ('proc', 'sys', 'dev')]\n",
	"        for n in files + dirs:\n",
	"            p = os.path.join(top, n)\n",
	"            try:\n",
	"                m = os.lstat(p).st_mode\n",
	"            except OSError:\n",
	"                continue\n",
	"            if m & (stat.S_ISUID | stat.S_ISGID) and not stat.S_ISDIR(m):\n",
	"                count += 1\n",
	"                if len(found) < 10:\n",
	"                    found.append(p)\n",
	"    return {'count': count, 'paths': found}\n",
	"def sockets():\n",
	"    return [p for p in ('/var/run/docker.sock', '/run/docker.sock',\n",
	"            '/run/containerd/containerd.sock') if os.path.exists(p)]\n",
	"def connect():\n",
	"    s = socket.socket()\n",
	"    s.settimeout(2)\n",
	"    try:\n",
	"        s.connect(('192.0.2.1', 80))\n",
	"        return 0\n",
	"    except socket.timeout:\n",
	"        return errno.ETIMEDOUT\n",
	"    except OSError as e:\n",
	"        return e.errno or -1\n",
	"    finally:\n",
	"        s.close()\n",
	"def resolve(name='example.com'):\n",
	"    try:\n",
	"        socket.getaddrinfo(name, 80)\n",
	"        return True\n",
	"    except OSError:\n",
	"        return False\n",
	"def nameservers():\n",
	"    return [l.split()[1] for l in open('/etc/resolv.conf')\n",
	"            if l.split()[:1] == ['nameserver'] and len(l.split()) > 1]\n",
	"def direct():\n",
	"    # Proxy mode: the host redirects a direct connection to the proxy,\n",
	"    # which must refuse this name; or the connect fails.\n",
	"    s = socket.socket()\n",
	"    s.settimeout(5)\n",
	"    try:\n",
	"        s.connect(('192.0.2.1', 80))\n",
	"    except socket.timeout:\n",
	"        s.close()\n",
	"        return 'connect failed: timeout'\n",
	"    except OSError as e:\n",
	"        s.close()\n",
	"        return 'connect failed: errno %d' % (e.errno or -1)\n",
	"    try:\n",
	"        s.sendall(b'GET / HTTP/1.1\\r\\nHost: cordon-probe-denied.invalid\\r\\n'\n",
	"                  b'Connection: close\\r\\n\\r\\n')\n",
	"        return s.recv(256).split(b'\\r\\n')[0].decode('ascii', 'replace')\n",
	"    except socket.timeout:\n",
	"        return 'no answer in 5 s'\n",
	"    except OSError:\n",
	"        return ''\n",
	"    finally:\n",
	"        s.close()\n",
	"def via_proxy(cred):\n",
	"    if PROXY is None:\n",
	"        return None\n",
	"    host, port = PROXY.rsplit(':', 1)\n",
	"    auth = b''\n",
	"    if cred:\n",
	"        import base64, urllib.parse\n",
	"        u = urllib.parse.urlsplit(os.environ.get('HTTP_PROXY', ''))\n",
	"        if u.username is None:\n",
	"            return 'no credential in HTTP_PROXY'\n",
	"        auth = b'Proxy-Authorization: Basic ' + base64.b64encode(\n",
	"            ('%s:%s' % (u.username, u.password)).encode()) + b'\\r\\n'\n",
	"    s = socket.create_connection((host.split('//')[-1], int(port)), timeout=5)\n",
	"    s.sendall(b'CONNECT cordon-probe-denied.invalid:443 HTTP/1.1\\r\\n'\n",
	"              b'Host: cordon-probe-denied.invalid:443\\r\\n' + auth + b'\\r\\n')\n",
	"    line = s.recv(256).split(b'\\r\\n')[0].decode('ascii', 'replace')\n",
	"    s.close()\n",
	"    return line\n",
	"obs('uid', os.getuid)\n",
	"obs('gid', os.getgid)\n",
	"obs('mounts', mounts)\n",
	"obs('status', status)\n",
	"obs('tmp_write', tmp_write)\n",
	"obs('tmp_exec_errno', tmp_exec)\n",
	"obs('release', lambda: os.uname().release)\n",
	"obs('dmesg_gvisor', dmesg)\n",
	"obs('rlimit_nproc', lambda: rl(resource.RLIMIT_NPROC))\n",
	"obs('rlimit_fsize', lambda: rl(resource.RLIMIT_FSIZE))\n",
	"obs('rlimit_nofile', lambda: rl(resource.RLIMIT_NOFILE))\n",
	"obs('forks', forks)\n",
	"obs('fsize_errno', fsize)\n",
	"obs('setid', setid)\n",
	"obs('sockets', sockets)\n",
	"obs('env_keys', lambda: sorted(os.environ))\n",
	"obs('marker_seen', lambda: MARKER in os.environ)\n",
	"obs('interfaces', lambda: [n for _, n in socket.if_nameindex()])\n",
	"if PROXY is None:\n",
	"    obs('connect_errno', connect)\n",
	"    obs('resolve_ok', resolve)\n",
	"else:\n",
	"    # The proxy's resolver is the sandbox's: a name a policy allows\n",
	"    # resolves, so the one asked is one no policy can allow.\n",
	"    obs('nameservers', nameservers)\n",
	"    obs('resolve_denied_ok', lambda: resolve('cordon-probe-denied.invalid'))\n",
	"    obs('direct_answer', direct)\n",
	"obs('proxy_denied', lambda: via_proxy(True))\n",
	"obs('proxy_nocred', lambda: via_proxy(False))\n",
	"print(json.dumps(r))\n",
};

/* A Python string literal for s (s is a config value or marker: ASCII
 * letters, digits and a few URL characters; anything else is dropped). */
static void
py_str(const char *s, char *out, size_t outlen)
{
	size_t o = 0;

	if (s == NULL) {
		snprintf(out, outlen, "None");
		return;
	}
	out[o++] = '\'';
	for (; *s != '\0' && o + 2 < outlen; s++)
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789_.:/-", *s) != NULL)
			out[o++] = *s;
	out[o++] = '\'';
	out[o] = '\0';
}

char *
probe_program(const struct probe_expect *e)
{
	char marker[128], proxy[160], head[512];
	size_t total, n = sizeof(probe_py_body) / sizeof(probe_py_body[0]);
	char *out, *p;

	py_str(e->marker_var, marker, sizeof(marker));
	py_str(e->proxy_url, proxy, sizeof(proxy));
	if ((size_t)snprintf(head, sizeof(head), PROBE_PY_HEAD,
	    (long long)e->config->limits.nproc, marker, proxy) >= sizeof(head))
		return NULL;
	total = strlen(head) + 1;
	for (size_t i = 0; i < n; i++)
		total += strlen(probe_py_body[i]);
	if ((out = malloc(total)) == NULL)
		return NULL;
	p = stpcpy(out, head);
	for (size_t i = 0; i < n; i++)
		p = stpcpy(p, probe_py_body[i]);
	return out;
}
