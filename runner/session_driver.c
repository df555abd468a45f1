/*
 * The session driver (runner/session.h): a stdlib-only Python program, run
 * as `python3 -I -c PROGRAM CAP` in a session's container. Two processes:
 * the driver, which alone holds the container's stdin and stdout, the
 * nonce and the frames, and a worker it forks before it reads the nonce
 * line, which runs every call's code in one globals dict kept across calls
 * and holds none of those (its memory is the driver's from before the
 * nonce came; the fds it keeps are /dev/null and its end of a control
 * socket).
 *
 * The driver reads a nonce line, answers a "ready" frame, then serves
 * framed calls on stdin (header "SEQ CODE_LEN HEAD TAIL", SEQ growing,
 * then the code). For each call it makes two pipes (stdout, stderr) and a
 * status socket, and sends the code and their far ends to the worker over
 * the control socket (SCM_RIGHTS). The worker runs the code with fd 0 on
 * /dev/null and 1, 2 on those pipes, then answers "\nKIND RC\n" on the
 * status socket; the driver caps the pipes as the host would (HEAD first
 * bytes, last TAIL bytes, a count of all) and writes the call's one frame
 * (runner_session_frame_parse) on its private copy of the container's
 * stdout. Every channel is per call, and the worker's end of the control
 * socket is shut for writing: what a call writes on any fd it holds
 * reaches no later call's result. What it leaves in the worker itself (a
 * thread, a patched function) is the session's state, and can.
 *
 * What the worker's code could still try, measured under both runsc
 * builds here: /proc/<driver>/mem is EACCES and ptrace EPERM (ptrace_scope
 * 1), process_vm_readv ENOSYS, so the nonce stays unread. /proc/<pid>/fd
 * lets it reopen the container's stdin for reading (requests carry no
 * secret: taking one only stalls the call) and its stdout for writing
 * (bytes without the nonce end the session on the host), and the call's
 * pipes (so, like a thread of the worker, it can add to what the call
 * prints). Sockets cannot be reopened (ENXIO), and the driver takes a
 * status only from the worker's pid (SO_PASSCRED, which the kernel fills):
 * a process a call left behind that takes a later request cannot answer
 * it. stdout and stderr stay pipes so that /dev/stdout works, as in a run
 * (a socket there is ENXIO).
 *
 * A worker that dies ends the driver with its code (128+N for signal N),
 * so os._exit(5) ends the session with exit code 5; a status not from the
 * worker, or none while it lives, ends it with 125 (sandbox_error on the
 * host) and a line on the container's stderr.
 */
#include "runner/session.h"

#include <stdlib.h>
#include <string.h>

/* Two literals, each under C's 4095 characters: the worker, then the
 * driver (main), which forks it. */
static const char driver_worker[] =
"import os,sys,socket,select,struct,threading,builtins\n"
"def worker(ctl,nul):\n"
" import traceback\n"
" for f in (0,1,2):os.dup2(nul,f)\n"
" for f in map(int,os.listdir('/proc/self/fd')):\n"
"  if f>2 and f not in(ctl,nul):\n"
"   try:os.close(f)\n"
"   except OSError:pass\n"
" s=socket.socket(fileno=ctl)\n"
" s.shutdown(socket.SHUT_WR)\n"
" def need(b,n):\n"
"  while len(b)<n:\n"
"   c=s.recv(min(n-len(b),1<<20))\n"
"   if not c:os._exit(125)\n"
"   b+=c\n"
"  return bytes(b)\n"
" g={'__name__':'__main__','__builtins__':builtins}\n"
" std=(sys.stdin,sys.stdout,sys.stderr)\n"
" sys.argv=['']\n"
" while True:\n"
"  m,fds,_,_=socket.recv_fds(s,20,3)\n"
"  if len(fds)!=3:os._exit(125)\n"
"  code=need(bytearray(),int(need(bytearray(m),20)))\n"
"  o,e,st=fds\n"
"  os.set_inheritable(st,False)\n"
"  sys.stdin,sys.stdout,sys.stderr=std\n"
"  os.dup2(o,1);os.dup2(e,2);os.close(o);os.close(e)\n"
"  kind=b'ok';rc=0\n"
"  try:\n"
"   exec(compile(code,'<session>','exec'),g)\n"
"  except SystemExit as x:\n"
"   kind=b'exit';c=x.code;rc=0 if c is None else c&255 if isinstance(c,int) else 1\n"
"   if rc==1 and not isinstance(c,int):\n"
"    try:print(c,file=sys.stderr)\n"
"    except Exception:pass\n"
"  except BaseException as x:\n"
"   kind=b'exc';rc=1\n"
"   try:traceback.print_exception(type(x),x,x.__traceback__.tb_next)\n"
"   except Exception:pass\n"
"  for f in (sys.stdout,sys.stderr,sys.__stdout__,sys.__stderr__):\n"
"   try:f.flush()\n"
"   except Exception:pass\n"
"  os.dup2(nul,1);os.dup2(nul,2)\n"
"  try:os.write(st,b'\\n%s %d\\n'%(kind,rc))\n"
"  except OSError:pass\n"
"  os.close(st)\n"
;

static const char driver_main[] =
"def main():\n"
" cin=os.dup(0);cout=os.dup(1)\n"
" nul=os.open('/dev/null',os.O_RDWR)\n"
" os.dup2(nul,0)\n"
" ctl,wc=socket.socketpair()\n"
" wpid=os.fork()\n"
" if wpid==0:\n"
"  try:worker(wc.detach(),nul)\n"
"  finally:os._exit(125)\n"
" wc.close()\n"
" wst=[]\n"
" def reap():\n"
"  while True:\n"
"   try:p,st=os.waitpid(-1,os.WNOHANG)\n"
"   except ChildProcessError:return\n"
"   if p==0:return\n"
"   if p==wpid:wst.append(os.waitstatus_to_exitcode(st))\n"
" def bad(why):\n"
"  os.write(2,b'cordon session driver: %s\\n'%why)\n"
"  os.kill(wpid,9)\n"
"  os._exit(125)\n"
" def gone(why):\n"
"  for i in range(20):\n"
"   reap()\n"
"   if wst:os._exit(wst[0] if wst[0]>=0 else 128-wst[0])\n"
"   select.select([],[],[],0.05)\n"
"  bad(why)\n"
" def line():\n"
"  b=b''\n"
"  while not b.endswith(b'\\n'):\n"
"   c=os.read(cin,1)\n"
"   if not c or len(b)>200:os._exit(0)\n"
"   b+=c\n"
"  return b[:-1]\n"
" def take(n):\n"
"  b=bytearray()\n"
"  while len(b)<n:\n"
"   c=os.read(cin,min(n-len(b),1<<20))\n"
"   if not c:os._exit(0)\n"
"   b+=c\n"
"  return bytes(b)\n"
" def wr(b):\n"
"  while b:b=b[os.write(cout,b):]\n"
" nonce=line()\n"
" def frame(seq,kind,rc,o,e):\n"
"  wr(b'\\0CSF1 %s %d %s %d %d %d %d %d\\n'%(nonce,seq,kind,rc,len(o[0]),o[1],len(e[0]),e[1])+o[0]+e[0])\n"
" class Cap:\n"
"  def __init__(s,fd,h,t):\n"
"   s.fd=fd;s.h=h;s.t=t;s.head=bytearray();s.tail=bytearray();s.seen=0\n"
"   s.lock=threading.Lock()\n"
"   s.th=threading.Thread(target=s.run,daemon=True);s.th.start()\n"
"  def run(s):\n"
"   while True:\n"
"    try:b=os.read(s.fd,65536)\n"
"    except OSError:break\n"
"    if not b:break\n"
"    with s.lock:\n"
"     n=s.seen;s.seen+=len(b)\n"
"     if n<s.h:s.head+=b[:s.h-n];b=b[s.h-n:]\n"
"     if b and s.t:\n"
"      s.tail+=b\n"
"      if len(s.tail)>2*s.t+65536:del s.tail[:len(s.tail)-s.t]\n"
"   os.close(s.fd)\n"
"  def get(s,wait):\n"
"   s.th.join(wait)\n"
"   with s.lock:return bytes(s.head)+(bytes(s.tail[-s.t:]) if s.t else b''),s.seen\n"
" def status(sk):\n"
"  b=b''\n"
"  while True:\n"
"   if not select.select([sk],[],[],0.25)[0]:\n"
"    reap()\n"
"    if wst:gone(b'')\n"
"    continue\n"
"   try:d,anc,_,_=sk.recvmsg(256,socket.CMSG_SPACE(12))\n"
"   except OSError:d=b''\n"
"   if not d:gone(b'the worker closed its status socket without a status')\n"
"   if [struct.unpack('i',a[2][:4])[0] for a in anc if a[:2]==(socket.SOL_SOCKET,socket.SCM_CREDENTIALS)]!=[wpid]:\n"
"    bad(b'a status not sent by the worker')\n"
"   b+=d\n"
"   while b'\\n' in b:\n"
"    l,b=b.split(b'\\n',1)\n"
"    k,_,v=l.partition(b' ')\n"
"    if v.isdigit() and v==b'%d'%int(v) and (k==b'ok' and v==b'0' or k==b'exc' and v==b'1' or k==b'exit' and int(v)<256):\n"
"     return k,int(v)\n"
"   if len(b)>16:b=b''\n"
" frame(0,b'ready',0,(b'',0),(b'',0))\n"
" last=0\n"
" while True:\n"
"  seq,n,h,t=map(int,line().split(b' '))\n"
"  if seq<=last:bad(b'a request that is not the next')\n"
"  last=seq\n"
"  code=take(n)\n"
"  po=os.pipe();pe=os.pipe();ps=socket.socketpair()\n"
"  ps[0].setsockopt(socket.SOL_SOCKET,socket.SO_PASSCRED,1)\n"
"  co=Cap(po[0],h,t);ce=Cap(pe[0],h,t)\n"
"  try:\n"
"   socket.send_fds(ctl,[b'%019d\\n'%n],[po[1],pe[1],ps[1].fileno()])\n"
"   ctl.sendall(code)\n"
"  except OSError:gone(b'the worker does not take requests')\n"
"  os.close(po[1]);os.close(pe[1]);ps[1].close()\n"
"  kind,rc=status(ps[0])\n"
"  ps[0].close()\n"
"  frame(seq,kind,rc,co.get(1.0),ce.get(1.0))\n"
"main()\n"
;

char *
runner_session_program(void)
{
	size_t w = sizeof(driver_worker) - 1;
	char *p = malloc(w + sizeof(driver_main));

	if (p == NULL)
		return NULL;
	memcpy(p, driver_worker, w);
	memcpy(p + w, driver_main, sizeof(driver_main));
	return p;
}
