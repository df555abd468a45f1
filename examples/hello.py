# Cordon's first example: run it with
#   cordon run < examples/hello.py
# It prints who and where it runs: uid 65534, a read-only root, and the
# gVisor kernel release (not the host's).
import os
import platform

print("hello from the sandbox")
print("uid", os.getuid(), "kernel", platform.release())
for line in open("/proc/mounts"):
    fields = line.split()
    if fields[1] == "/":
        print("root filesystem mounted", fields[3].split(",")[0])
