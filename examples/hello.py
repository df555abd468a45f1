# Cordon's first example: run it with
#   cordon run < examples/hello.py
# It prints who and where it runs: uid 65534, a read-only root, and the
# gVisor kernel release (not the host's).
import os
import platform

print("hello from the sandbox")
print("uid", os.getuid(), "kernel", platform.release())
try:
    open("/cordon-write-test", "w")
    print("root filesystem: writable (unexpected)")
except OSError as e:
    print("root filesystem: read-only (%s)" % e.strerror)
