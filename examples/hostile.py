# A hostile job, to see what Cordon does with one. Pick the attack in MODE
# below (or with sed), then run it:
#   cordon run < examples/hostile.py
#   sed 's/^MODE = .*/MODE = "flood"/' examples/hostile.py | cordon run
#
# "fork"   a fork bomb: every process forks forever. The guest nproc limit
#          (--ulimit nproc) makes fork fail with EAGAIN inside the sandbox;
#          the memory limit or the deadline ends it, whichever comes first
#          (both seen with Debian's runsc 20221219):
#   {"status":"timeout","exit_code":-1,"stdout":"","stderr":"",
#    "stdout_truncated":false,"stderr_truncated":false,"duration_ms":11545,
#    "container":"cordon-e756590d5a745916","code_sha256":"8363...","net":"none"}
#   {"status":"ok","exit_code":137,"stdout":"","stderr":"",...,
#    "duration_ms":3474,...}
#
# "flood"  writes 128 MiB to stdout. Cordon keeps the first limits.max_output
#          bytes of each stream, drains and counts the rest, and says so:
#   {"status":"output_truncated","exit_code":0,"stdout":"AAAA...(capped)",
#    "stderr":"flood done\n","stdout_truncated":true,"stderr_truncated":false,
#    "duration_ms":9697,...}
#
# "memory" allocates 16 MiB blocks until the memory limit (--memory, equal to
#          --memory-swap) kills it. The kill is SIGKILL (exit 137); Cordon
#          reports "oom" when Docker flags the container OOMKilled. Observed
#          with Debian's runsc 20221219, which does not set that flag:
#   {"status":"ok","exit_code":137,"stdout":"holding 16 MiB\n...holding 224
#    MiB\n","stderr":"",...,"duration_ms":7456,...}
#
# In every case the container is removed and the result is one JSON object
# whose stdout/stderr are untrusted data.
import os
import sys
import time

MODE = "fork"


def fork_bomb():
    made = 0
    while True:
        try:
            pid = os.fork()
        except OSError as e:
            print("fork refused after %d children: %s" % (made, e.strerror),
                  flush=True)
            time.sleep(3600)  # hold the slot until the deadline
            os._exit(0)
        if pid == 0:
            made = 0  # the child forks too
            continue
        made += 1


def output_flood():
    chunk = "A" * 65535 + "\n"
    for _ in range(2048):
        sys.stdout.write(chunk)
    print("flood done", file=sys.stderr)


def memory_bomb():
    hog = []
    while True:
        hog.append(bytearray(16 << 20))  # zero-filled: really touched
        print("holding %d MiB" % (16 * len(hog)), flush=True)


{"fork": fork_bomb, "flood": output_flood, "memory": memory_bomb}[MODE]()
