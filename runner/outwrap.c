/*
 * The --out wrapper program, the parser that splits its stdout into the
 * job's own stdout and the archive of /tmp/out, and the parser of its
 * report of files it could not pack (outwrap.h).
 */
#include "runner/outwrap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "runner/tar.h"

const char outwrap_program[] =
"import os,sys,signal,subprocess,selectors,tarfile,json,collections\n"
"try:\n"
" import ctypes\n"
" ctypes.CDLL(None).prctl(4,0,0,0,0)\n"
"except Exception:\n"
" pass\n"
"cap=int(sys.argv[1])\n"
"line,_,code=sys.stdin.buffer.read().partition(b'\\n')\n"
"nonce,_,h=line.partition(b' ')\n"
"h=min(int(h or cap),cap)\n"
"keep=cap-h\n"
"try:\n"
" os.mkdir('/tmp/out',0o700)\n"
"except OSError:\n"
" pass\n"
"P=subprocess.PIPE\n"
"p=subprocess.Popen(sys.argv[2:] or [sys.executable,'-I','-'],stdin=P,stdout=P,stderr=P,cwd='/tmp')\n"
"try:\n"
" p.stdin.write(code);p.stdin.close()\n"
"except OSError:\n"
" pass\n"
"def wr(fd,b):\n"
" while b:\n"
"  b=b[os.write(fd,b):]\n"
"seen={1:0,2:0}\n"
"held={1:collections.deque(),2:collections.deque()}\n"
"hn={1:0,2:0}\n"
"fds={p.stdout.fileno():1,p.stderr.fileno():2}\n"
"sel=selectors.DefaultSelector()\n"
"for fd in fds:\n"
" sel.register(fd,selectors.EVENT_READ)\n"
"done=False\n"
"while fds:\n"
" for k,_ in sel.select(0.1):\n"
"  b=os.read(k.fd,65536)\n"
"  if not b:\n"
"   sel.unregister(k.fd);del fds[k.fd];continue\n"
"  o=fds[k.fd];n=seen[o];seen[o]+=len(b)\n"
"  if n<h:\n"
"   wr(o,b[:h-n]);b=b[h-n:]\n"
"  if b and keep:\n"
"   q=held[o];q.append(b);hn[o]+=len(b)\n"
"   while hn[o]-len(q[0])>=keep:\n"
"    hn[o]-=len(q.popleft())\n"
" if not done and p.poll() is not None:\n"
"  done=True\n"
"  try:\n"
"   os.kill(-1,signal.SIGKILL)\n"
"  except OSError:\n"
"   pass\n"
"rc=p.wait()\n"
"for o in (1,2):\n"
" if keep:\n"
"  wr(o,b''.join(held[o])[-keep:])\n"
"w=open(1,'wb',closefd=False)\n"
"w.write(b'\\0CORDON-OUT-'+nonce+b'\\0%d %d\\n'%(seen[1],seen[2]))\n"
"bad=[]\n"
"def skip(f,why):\n"
" r=os.fsencode(os.path.relpath(f,'/tmp/out')).decode('utf-8','backslashreplace')\n"
" try:\n"
"  n=os.lstat(f).st_size\n"
" except OSError:\n"
"  n=0\n"
" bad.append({'path':r,'size':n,'why':why})\n"
"def why(e):\n"
" return {PermissionError:'unreadable',FileNotFoundError:'vanished'}.get(type(e),'error')\n"
"with tarfile.open(fileobj=w,mode='w|',format=tarfile.PAX_FORMAT) as t:\n"
" for root,dirs,files in os.walk('/tmp/out',onerror=lambda e:skip(e.filename,'unlistable')):\n"
"  dirs.sort()\n"
"  for n in dirs+sorted(files):\n"
"   f=os.path.join(root,n)\n"
"   try:\n"
"    i=t.gettarinfo(f,arcname=os.path.relpath(f,'/tmp/out'))\n"
"    if i is None:\n"
"     skip(f,'unsupported');continue\n"
"    i.mtime=int(i.mtime)\n"
"    if i.isreg():\n"
"     with open(f,'rb') as d:\n"
"      t.addfile(i,d)\n"
"    else:\n"
"     t.addfile(i)\n"
"   except Exception as e:\n"
"    skip(f,why(e))\n"
"w.write(b'CORDON-UNPACKED '+json.dumps(bad).encode()+b'\\n')\n"
"w.flush()\n"
"os._exit(rc if rc>=0 else 128-rc)\n";

static const unsigned char *
find_last(const unsigned char *buf, size_t len, const char *pat, size_t plen)
{
	const unsigned char *last = NULL, *p = buf;

	while (len >= plen) {
		const unsigned char *h = memmem(p, len, pat, plen);
		if (h == NULL)
			break;
		last = h;
		len -= (size_t)(h - p) + 1;
		p = h + 1;
	}
	return last;
}

void
outwrap_marker(const char *nonce, char out[OUTWRAP_MARKER_LEN])
{
	out[0] = '\0';
	memcpy(out + 1, "CORDON-OUT-", 11);
	memcpy(out + 12, nonce, OUTWRAP_NONCE_LEN);
	out[OUTWRAP_MARKER_LEN - 1] = '\0';
}

int
outwrap_split(const void *buf, size_t len, const char *nonce,
    struct outwrap_split *out)
{
	char marker[OUTWRAP_MARKER_LEN];
	const unsigned char *b = buf, *m, *nl, *counts;
	char line[64], *sp;
	size_t mlen = sizeof(marker), clen;
	int64_t o, e;

	memset(out, 0, sizeof(*out));
	if (strlen(nonce) != OUTWRAP_NONCE_LEN)
		return -EINVAL;
	outwrap_marker(nonce, marker);
	if ((m = find_last(b, len, marker, mlen)) == NULL)
		return -ENOENT;
	counts = m + mlen;
	nl = memchr(counts, '\n', len - (size_t)(counts - b));
	if (nl == NULL || (clen = (size_t)(nl - counts)) >= sizeof(line))
		return -ENOENT;
	memcpy(line, counts, clen);
	line[clen] = '\0';
	if ((sp = strchr(line, ' ')) == NULL)
		return -ENOENT;
	*sp = '\0';
	if (util_parse_i64(line, 0, INT64_MAX, &o) < 0 ||
	    util_parse_i64(sp + 1, 0, INT64_MAX, &e) < 0)
		return -ENOENT;
	out->stdout_len = (size_t)(m - b);
	out->tar = nl + 1;
	out->tar_len = len - (size_t)(nl + 1 - b);
	out->out_seen = (uint64_t)o;
	out->err_seen = (uint64_t)e;
	return 0;
}

/* One report item: an object with a string path that fits a tar name, a
 * whole size within a double's exact range, and a string why. */
static bool
report_item_ok(const cJSON *o)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "path");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "size");
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "why");
	size_t pl;

	if (!cJSON_IsObject(o) || !cJSON_IsString(p) || !cJSON_IsNumber(n) ||
	    !cJSON_IsString(w))
		return false;
	pl = strlen(p->valuestring);
	return pl > 0 && pl < TAR_NAME_MAX && n->valuedouble >= 0 &&
	    n->valuedouble <= 9007199254740992.0 &&
	    n->valuedouble == (double)(uint64_t)n->valuedouble;
}

int
outwrap_report_parse(const void *rest, size_t len, size_t max, cJSON **out)
{
	static const char tag[] = OUTWRAP_REPORT_TAG;
	const unsigned char *b = rest, *end = b + len;
	const cJSON *it;
	cJSON *arr;
	size_t n = 0;

	*out = NULL;
	while (b < end && *b == '\0')
		b++;
	if (b == end || end[-1] != '\n' ||
	    (size_t)(end - b) < sizeof(tag) - 1 + 1)
		return -ENOENT;
	if (memcmp(b, tag, sizeof(tag) - 1) != 0 ||
	    memchr(b, '\n', (size_t)(end - b)) != end - 1)
		return -EBADMSG;
	b += sizeof(tag) - 1;
	if ((arr = cJSON_ParseWithLength((const char *)b,
	    (size_t)(end - 1 - b))) == NULL)
		return -EBADMSG;
	if (!cJSON_IsArray(arr)) {
		cJSON_Delete(arr);
		return -EBADMSG;
	}
	cJSON_ArrayForEach(it, arr) {
		if (!report_item_ok(it)) {
			cJSON_Delete(arr);
			return -EBADMSG;
		}
		n++;
	}
	if (n > max) {
		cJSON_Delete(arr);
		return -E2BIG;
	}
	*out = arr;
	return 0;
}

const char *
outwrap_report_reason(const char *why)
{
	if (strcmp(why, "unreadable") == 0)
		return "could not be read in the sandbox";
	if (strcmp(why, "unlistable") == 0)
		return "directory could not be listed in the sandbox";
	if (strcmp(why, "vanished") == 0)
		return "vanished before it was packed";
	if (strcmp(why, "unsupported") == 0)
		return "not a regular file or directory";
	return "could not be packed in the sandbox";
}
